"""Open a result store, or refuse with one line saying what is wrong with the path: its
parent is a file, the directory is read-only, the file is not SQLite (corrupt, truncated,
something else) or holds a `jobs` table that is not bench's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bench.errors import ConfigError
from bench.store import ResultStore

# Columns a bench store's `jobs` table must have (a subset: older stores may lack new ones).
REQUIRED_JOB_COLUMNS = frozenset({"job_hash", "config", "code_hash", "data_hash", "duration_s"})


def _check_existing(path: Path) -> None:
    """Refuse an existing file that is not a bench store, without modifying it."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in conn.execute("select name from sqlite_master")}
            columns = {r[1] for r in conn.execute("pragma table_info(jobs)")}
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"store {path}: not a bench result store ({exc})") from exc
    if "jobs" in tables and not columns >= REQUIRED_JOB_COLUMNS:
        raise ConfigError(
            f"store {path}: its 'jobs' table is not bench's (no "
            f"{', '.join(sorted(REQUIRED_JOB_COLUMNS - columns))}); use another --store"
        )


def open_store(path: Path) -> ResultStore:
    """ResultStore(path), with every way the path can be unusable a one-line ConfigError."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"store {path}: is a directory; --store takes a .sqlite file path")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"store {path}: {parent} is a file, not a directory")
            break
    if path.exists():
        _check_existing(path)
    try:
        return ResultStore(path)
    except (OSError, sqlite3.Error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise ConfigError(f"store {path}: cannot open for writing ({reason})") from exc
