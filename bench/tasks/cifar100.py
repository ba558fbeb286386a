"""CIFAR-100 (fine labels) from a local `cifar-100-python` directory, for the IP paper's
CIFAR-100 experiments. No embedded default: the data must be given (`data_root` or
BENCH_CIFAR100_ROOT), and a missing file is a one-line error naming what is expected.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import ClassVar

from bench.core.errors import DataMissingError
from bench.data import readers as sources
from bench.plugin.protocols import Splits
from bench.plugin.registry import register_task
from bench.tasks.images import ImageTask, _carve_aux

CIFAR100_FILES = ("train", "test")
_WHAT = "a CIFAR-100 python split"


def read_cifar100(root: Path) -> sources.RawImages:
    """CIFAR-100 50,000 + 10,000 from root/cifar-100-python (or root being that directory)."""
    root = Path(root)
    dirs = [root / "cifar-100-python", root]
    files = sources._find_files(dirs, CIFAR100_FILES, gz=False)
    if files is None:
        fix = "extract cifar-100-python.tar.gz there or point data_root at it"
        raise DataMissingError(sources._missing("cifar100", dirs, list(CIFAR100_FILES), fix))
    x_train, y_train = sources.load_cifar_batch(files["train"], b"fine_labels", _WHAT)
    x_test, y_test = sources.load_cifar_batch(files["test"], b"fine_labels", _WHAT)
    return sources._checked("cifar100", x_train, y_train, x_test, y_test)


@cache
def _cifar100_full(root: str | None) -> Splits:
    root = root or os.environ.get("BENCH_CIFAR100_ROOT")
    if not root:
        raise DataMissingError(
            "cifar100 needs the full dataset: set data_root in the suite file or "
            "BENCH_CIFAR100_ROOT to a directory holding cifar-100-python/{train,test}"
        )
    return _carve_aux(read_cifar100(Path(root)), 5_000)


@register_task
class CIFAR100(ImageTask):
    """CIFAR-100, 100 fine classes: 45,000 train / 5,000 aux (from the official train) /
    10,000 test, from `data_root` or BENCH_CIFAR100_ROOT."""

    name = "cifar100"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "CIFAR-100"
    version = "1"
    num_classes = 100
    input_shape = (3, 32, 32)
    mean, std = (0.5071, 0.4865, 0.4409), (0.2673, 0.2564, 0.2762)

    def _full_splits(self) -> Splits:
        return _cifar100_full(self.data_root)
