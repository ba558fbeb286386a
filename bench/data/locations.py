"""Data and cache locations: environment variables first, then a source checkout's own
directories, then the platform's per-user directories (platformdirs)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "bench-privacy"  # the distribution name, so the directories say whose they are
DATA_ENV = ("BENCH_DATA", "BENCH_DATA_DIR")  # BENCH_DATA_DIR: the older name, still honoured
CACHE_ENV = "BENCH_CACHE"


def checkout_root() -> Path | None:
    """The source checkout bench runs from (its pyproject.toml beside the bench package and
    a datasets/ directory), or None for an installed copy (e.g. in site-packages)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "datasets").is_dir()):
        return None
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return root if f'name = "{APP_NAME}"' in text else None


def data_dir() -> Path:
    """Where fetched data files go and are read from: $BENCH_DATA (or $BENCH_DATA_DIR), else
    a checkout's datasets/, else the platform's user data directory."""
    for name in DATA_ENV:
        if os.environ.get(name):
            return Path(os.environ[name])
    root = checkout_root()
    return root / "datasets" if root else Path(platformdirs.user_data_dir(APP_NAME))


def cache_dir(store: Path) -> Path:
    """The artifact cache for a store: $BENCH_CACHE, else next to the store in a checkout
    (.bench/cache), else the platform's user cache directory."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    if checkout_root() is not None:
        return Path(store).parent / "cache"
    return Path(platformdirs.user_cache_dir(APP_NAME)) / "artifacts"


def data_dir_source() -> str:
    """Which rule chose `data_dir()`, for `bench data status`."""
    for name in DATA_ENV:
        if os.environ.get(name):
            return f"${name}"
    return "the checkout's datasets/" if checkout_root() else "the platform's user data dir"
