"""Open a result store, or refuse with one line saying what is wrong with the path: its
parent is a file, it is not a regular file (a FIFO would block the open forever), the file
or directory is read-only, the file is not SQLite (corrupt, truncated, something else), or
it holds another schema (another `user_version`, or bench tables with other columns). A
refused store is never written to: it is only read, read-only, before it is opened."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from bench.core.errors import ConfigError
from bench.core.preflight import check_file_target, os_reason, sqlite_reason
from bench.store.schema import SCHEMA_VERSION, schema_columns

if TYPE_CHECKING:
    from bench.store.results import ResultStore

# Columns a bench store's `jobs` table must have (named first when a foreign table lacks them).
REQUIRED_JOB_COLUMNS = frozenset({"job_hash", "config", "code_hash", "data_hash", "duration_s"})


def _check_existing(path: Path) -> None:
    """Refuse an existing file that is not a bench store of this schema version, without
    modifying it."""
    # Without a -wal file beside it the file holds the whole database: read it as immutable,
    # so that not even the -shm index SQLite keeps for WAL readers is created.
    wal = Path(f"{path}-wal").exists()
    uri = f"file:{quote(str(path.absolute()))}?mode=ro" + ("" if wal else "&immutable=1")
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            version = conn.execute("pragma user_version").fetchone()[0]
            tables = {
                r[0]: [c[1] for c in conn.execute(f"pragma table_info({r[0]})")]
                for r in conn.execute("select name from sqlite_master where type = 'table'")
            }
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"store {path}: not a bench result store ({exc})") from exc
    if version not in (0, SCHEMA_VERSION):
        raise ConfigError(
            f"store {path}: schema version {version}, but this bench reads and writes version "
            f"{SCHEMA_VERSION}; use another --store (or the bench version that wrote it)"
        )
    columns = set(tables.get("jobs", ()))
    if "jobs" in tables and not columns >= REQUIRED_JOB_COLUMNS:
        raise ConfigError(
            f"store {path}: its 'jobs' table is not bench's (no "
            f"{', '.join(sorted(REQUIRED_JOB_COLUMNS - columns))}); use another --store"
        )
    for table, expected in schema_columns().items():
        found = tables.get(table)
        if found is not None and found != expected:
            raise ConfigError(
                f"store {path}: its '{table}' table has columns ({', '.join(found)}), not "
                f"bench's ({', '.join(expected)}); another schema: use another --store"
            )


def check_store(path: Path) -> bool:
    """Every check `open_store` makes, without opening (or creating) the store: True when
    the file exists (and is a bench store of this schema version)."""
    path = Path(path)
    existed = check_file_target(path, "store")
    if existed:
        _check_existing(path)
    return existed


def open_store(path: Path) -> ResultStore:
    """ResultStore(path), with every way the path can be unusable a one-line ConfigError;
    a store file this call created is removed again when it cannot be opened."""
    from bench.store.results import ResultStore  # torch: only once a store is really opened

    path = Path(path)
    existed = check_store(path)
    try:
        return ResultStore(path)
    except (OSError, sqlite3.Error) as exc:
        if not existed:
            for leftover in (path, *(Path(f"{path}{s}") for s in ("-wal", "-shm"))):
                leftover.unlink(missing_ok=True)
        reason = os_reason(exc) if isinstance(exc, OSError) else sqlite_reason(exc)
        raise ConfigError(f"store {path}: cannot open for writing ({reason})") from exc
