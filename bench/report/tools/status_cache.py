"""Answers bench keeps so that asking again needs no torch: what `bench status` found for
each suite, a suite's job list for `bench run --dry-run`, the component listing of
`bench list`, and the store each suite last ran on.

A board's staleness rests on its suite's version (read from the suite file) and the code
version of its jobs; the latter needs every component imported and the data loaded (about
15 s for the shipped suites). The answers are recorded under one key over the inputs they
are computed from (bench.run.warm.inputs_key: the suite files, every project file, the
installed distributions, the `BENCH_*` environment and the data trees), so they are reused
exactly when nothing they are computed from has changed. Only answers about the project's
own components are recorded (a plug-in's files are not in the key).

Records live in bench.core.places.answers_dir() ($BENCH_CACHE, else the platform's user
cache directory), never in the current directory: a command that computes nothing leaves
no file where it is called. A record that cannot be written only costs speed; one that
cannot be read is no record. Torch-free.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.core.fsutil import atomic_write
from bench.core.places import answers_dir
from bench.suite.read import SuiteSource

FORMAT = 2  # bump when what a record holds changes


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


def record_path(kind: str, key: str) -> Path:
    """Where the record of `kind` ("status", "jobs", "listing", "last-store") under `key`
    lives."""
    return answers_dir() / kind / f"{key}.json"


def load_record(kind: str, key: str) -> Any:
    """The payload kept under (`kind`, `key`), or None when there is none (or it is of
    another format, or unreadable)."""
    try:
        raw = json.loads(record_path(kind, key).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        return None
    return raw.get("payload")


def keep_record(kind: str, key: str, payload: Any) -> None:
    """Keep `payload` (JSON) under (`kind`, `key`); a directory that cannot be written only
    costs speed."""
    path = record_path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps({"format": FORMAT, "payload": payload}).encode())
    except OSError:
        pass


def short_key(*parts: object) -> str:
    """A file-name-safe digest of `parts` (for records keyed by a path, a suite name)."""
    return hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:24]


def load_checked(key: str) -> dict[str, Checked]:
    """The status checks kept under `key`, by suite as asked (name or path); empty when
    there are none."""
    raw = load_record("status", key)
    try:
        return {suite: Checked(**fields) for suite, fields in (raw or {}).items()}
    except (TypeError, AttributeError):
        return {}


def keep_checked(key: str, checked: dict[str, Checked]) -> None:
    """Record full status checks under `key`."""
    keep_record("status", key, {suite: asdict(c) for suite, c in checked.items()})


def remember_store(suite: str, store: Path) -> None:
    """Record `store` as the one `bench run --suite SUITE` last wrote from this directory,
    for `bench leaderboard --suite SUITE` without --store."""
    try:
        where = Path.cwd().resolve()
        resolved = Path(store).resolve()
    except OSError:
        return
    keep_record("last-store", short_key(suite, where), {"suite": suite, "store": str(resolved)})


def last_store(suite: str) -> Path | None:
    """The store `bench run --suite SUITE` last wrote from this directory, if it still
    exists."""
    try:
        where = Path.cwd().resolve()
    except OSError:
        return None
    raw = load_record("last-store", short_key(suite, where))
    if not isinstance(raw, dict) or not isinstance(raw.get("store"), str):
        return None
    path = Path(raw["store"])
    return path if path.is_file() else None
