"""Task `faces`: face images for reconstruction (Posthoc paper's UTKFace setting).

Embedded default: the 200 LFW-subset images of scikit-image (`skimage.data.lfw_subset`,
25 x 25 grey in [0, 1]; the first 100 are faces, the last 100 non-faces), labelled face /
non-face and split 120 / 40 / 40 by a fixed permutation. With `data_root` pointing at a
UTKFace directory, the images there (`{age}_{gender}_{race}_{datetime}.jpg`, labels
parsed from the file name; the label is gender, 0 male / 1 female) are read, converted to
grey and resized to `size` x `size`.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from bench.core.errors import ConfigError, DataMissingError
from bench.plugin.models import small_cnn
from bench.plugin.protocols import DataSplit, Splits, Task
from bench.plugin.registry import register_task

SPLIT_SEED = 20260105
UTKFACE_NAME = re.compile(r"^(\d+)_([01])_(\d)_\d+.*\.(jpg|jpeg|png)$", re.IGNORECASE)


def parse_utkface_name(name: str) -> tuple[int, int, int] | None:
    """(age, gender, race) from a UTKFace file name, or None if it is not one."""
    m = UTKFACE_NAME.match(name)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def read_utkface(root: Path, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Grey images (N, size, size) in [0, 1] and gender labels from a UTKFace directory."""
    from PIL import Image

    if not root.is_dir():
        raise DataMissingError(f"faces: data_root {root} is not a directory of UTKFace images")
    files = sorted(p for p in root.rglob("*") if p.is_file() and parse_utkface_name(p.name))
    if len(files) < 10:
        raise DataMissingError(
            f"faces: found {len(files)} UTKFace images in {root}; expected files named "
            "{age}_{gender}_{race}_{datetime}.jpg (e.g. 25_0_2_20170116174525125.jpg)"
        )
    images, labels = [], []
    for p in files:
        try:
            with Image.open(p) as im:
                grey = im.convert("L").resize((size, size), Image.Resampling.BILINEAR)
        except OSError as exc:
            raise DataMissingError(f"faces: cannot read image {p}: {exc}") from exc
        images.append(np.asarray(grey, dtype=np.float32) / 255.0)
        labels.append(parse_utkface_name(p.name)[1])  # type: ignore[index]
    return np.stack(images), np.asarray(labels, dtype=np.int64)


def lfw_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 200 LFW-subset images shipped with scikit-image and face (1) / non-face (0)."""
    from skimage.data import lfw_subset as load

    x = np.asarray(load(), dtype=np.float32)
    return x, np.r_[np.ones(100, dtype=np.int64), np.zeros(len(x) - 100, dtype=np.int64)]


@cache
def _splits(root: str | None, size: int) -> Splits:
    x_np, y_np = read_utkface(Path(root), size) if root else lfw_subset()
    x, y = torch.from_numpy(x_np).unsqueeze(1).contiguous(), torch.from_numpy(y_np)
    order = torch.from_numpy(np.random.default_rng(SPLIT_SEED).permutation(len(x)))
    n = len(x)
    n_train, n_aux = int(0.6 * n), int(0.2 * n)
    parts = order[:n_train], order[n_train : n_train + n_aux], order[n_train + n_aux :]
    return Splits(*(DataSplit(x[i], y[i]) for i in parts))


@register_task
class Faces(Task):
    """Faces for reconstruction: embedded LFW subset, or UTKFace from `data_root`."""

    name = "faces"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "LFW (scikit-image subset)"
    version = "1"
    modality = "image"
    num_classes = 2

    def __init__(
        self, data_root: str | None = None, size: int = 25, train_epochs: int = 10
    ) -> None:
        if not 8 <= size <= 256:
            raise ConfigError(f"task faces: size must lie in [8, 256], got {size}")
        if train_epochs < 1:
            raise ConfigError("task faces: train_epochs must be >= 1")
        self.data_root, self.size, self.train_epochs = data_root, size, train_epochs
        self.data_range = (0.0, 1.0)
        self.input_shape = (1, 25, 25) if data_root is None else (1, size, size)

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "utkface": self.data_root is not None,
            "size": self.input_shape[1],
            "train_epochs": self.train_epochs,
        }

    def splits(self) -> Splits:
        return _splits(self.data_root, self.size)

    def model(self, arch: str = "default") -> nn.Module:
        if arch != "default":
            raise ConfigError(f"task faces has no model architecture '{arch}'; use default")
        return small_cnn(1, self.input_shape[1], 2, (0.5,), (0.25,))
