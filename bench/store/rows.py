"""Per-job columns of a result store's `jobs` table, read without the store class (which
imports torch): shared by bench.store.results and the warm-rerun plan (bench.run.warm)."""

from __future__ import annotations

import sqlite3
from typing import Any

SQLITE_PARAMS = 500  # hashes per statement: SQLite caps a statement's parameters


def jobs_column(conn: sqlite3.Connection, hashes: list[str], column: str) -> dict[str, Any]:
    """job hash -> `column` of the jobs table, for each stored job of `hashes`."""
    out: dict[str, Any] = {}
    for i in range(0, len(hashes), SQLITE_PARAMS):
        chunk = hashes[i : i + SQLITE_PARAMS]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT job_hash, {column} FROM jobs WHERE job_hash IN ({marks})"
        rows = conn.execute(query, chunk)
        out.update(dict(rows))
    return out
