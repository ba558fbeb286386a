"""The cifar100 task: the `cifar-100-python` layout on generated files, and clear errors."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import DataMissingError
from bench.tasks.cifar100 import CIFAR100, read_cifar100


def _write_split(path: Path, n: int, offset: int) -> None:
    data = (np.arange(n * 3072) + offset).astype(np.uint8).reshape(n, 3072)
    labels = [(offset + i) % 100 for i in range(n)]
    batch = {b"data": data, b"fine_labels": labels, b"coarse_labels": [0] * n}
    path.write_bytes(pickle.dumps(batch))


def test_cifar100_layout_and_fine_labels(tmp_path: Path) -> None:
    root = tmp_path / "cifar-100-python"
    root.mkdir()
    _write_split(root / "train", 12, 0)
    _write_split(root / "test", 4, 50)
    for where in (tmp_path, root):
        raw = read_cifar100(where)
        assert raw.x_train.shape == (12, 32, 32, 3) and raw.x_test.shape == (4, 32, 32, 3)
        assert raw.y_test.tolist() == [50, 51, 52, 53]
        # Channel-major rows: pixel (0, 0) of channel 1 is byte 1024 of the row.
        assert raw.x_train[0, 0, 0, 1] == np.uint8(1024 % 256)


def test_cifar100_missing_files_name_what_is_expected(tmp_path: Path, monkeypatch) -> None:
    with pytest.raises(DataMissingError, match=r"cifar100: expected train, test"):
        read_cifar100(tmp_path)
    monkeypatch.delenv("BENCH_CIFAR100_ROOT", raising=False)
    with pytest.raises(DataMissingError, match="BENCH_CIFAR100_ROOT"):
        CIFAR100().splits()


def test_cifar100_corrupt_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "train").write_bytes(b"not a pickle")
    _write_split(tmp_path / "test", 2, 0)
    with pytest.raises(DataMissingError, match="not a CIFAR-100 python split"):
        read_cifar100(tmp_path)
