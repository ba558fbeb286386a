"""What `bench status` found for each suite, kept so that asking again needs no torch.

A board's staleness rests on its suite's version (read from the suite file) and the code
version of its jobs; the latter needs every component imported and the data loaded (about
15 s for the shipped suites). The answers are recorded under one key over the inputs of
the suites asked about (bench.run.warm.inputs_key: the suite files, every project file,
the installed distributions, the `BENCH_*` environment and the data trees), so they are
reused exactly when nothing they are computed from has changed. Only suites made of the
project's own components are recorded (a plug-in's files are not in the key). Torch-free.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.core.fsutil import atomic_write
from bench.data.locations import cache_dir
from bench.suite.read import SuiteSource

FORMAT = 1  # bump when what a record holds changes


@dataclass(frozen=True)
class SuiteHeader:
    """A suite file's name and version, read as TOML without validating the suite."""

    name: str
    version: str


@dataclass(frozen=True)
class Checked:
    """What the full check of one suite gave: its jobs' code version, or why its jobs could
    not be listed here (e.g. its data is not installed)."""

    code_version: str | None
    unchecked: str | None = None


def suite_header(source: SuiteSource) -> SuiteHeader | None:
    """The suite's name and version, or None when the file lacks them (the full check then
    says what is wrong with it)."""
    try:
        return SuiteHeader(str(source.raw["name"]), str(source.raw["version"]))
    except KeyError:
        return None


def _path(store: Path, key: str) -> Path:
    return cache_dir(store) / "status" / f"{key}.json"


def load_checked(store: Path, key: str) -> dict[str, Checked]:
    """The checks kept under `key` beside the store's artifact cache, by suite as asked
    (name or path); empty when there are none."""
    try:
        raw = json.loads(_path(store, key).read_text())
        if raw.get("format") != FORMAT:
            return {}
        return {suite: Checked(**fields) for suite, fields in raw["suites"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def keep_checked(store: Path, key: str, checked: dict[str, Checked]) -> None:
    """Record full checks; a cache directory that cannot be written only costs speed."""
    path = _path(store, key)
    suites = {suite: asdict(c) for suite, c in checked.items()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"format": FORMAT, "suites": suites}).encode())
    except OSError:
        pass
