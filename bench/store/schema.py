"""The result store's SQL schema and its version, without the store class: what the store
guard checks a file against before anything (torch included) is imported."""

from __future__ import annotations

import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_hash TEXT PRIMARY KEY,
    config TEXT NOT NULL,
    task TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    params TEXT NOT NULL,
    attack TEXT,
    attack_params TEXT NOT NULL,
    seed INTEGER NOT NULL,
    task_version TEXT NOT NULL,
    data_hash TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    guarantee TEXT NOT NULL,
    duration_s REAL NOT NULL,
    machine TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    job_hash TEXT NOT NULL REFERENCES jobs(job_hash),
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    ci_lo REAL NOT NULL,
    ci_hi REAL NOT NULL,
    n INTEGER NOT NULL,
    samples BLOB,
    PRIMARY KEY (job_hash, metric)
);
CREATE TABLE IF NOT EXISTS examples (
    job_hash TEXT PRIMARY KEY REFERENCES jobs(job_hash),
    x BLOB NOT NULL,
    x_hat BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS leases (
    job_hash TEXT PRIMARY KEY,
    runner TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    heartbeat_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS leases_by_runner ON leases(runner);
CREATE TABLE IF NOT EXISTS lease_log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_hash TEXT NOT NULL,
    runner TEXT NOT NULL,
    event TEXT NOT NULL,
    at REAL NOT NULL,
    prev_runner TEXT,
    prev_heartbeat_at REAL,
    outcome TEXT
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_hash TEXT NOT NULL,
    runner TEXT NOT NULL,
    at REAL NOT NULL,
    task TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    params TEXT NOT NULL,
    attack TEXT,
    attack_params TEXT NOT NULL,
    seed INTEGER NOT NULL,
    error TEXT NOT NULL,
    message TEXT NOT NULL,
    traceback TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS failures_by_job ON failures(job_hash);
"""

# The store's schema version (SQLite's `user_version`): a store holding another version
# is refused before anything is written to it (bench.store.guard). Stores written before
# the version was stamped hold 0 and are accepted when their tables are exactly these.
SCHEMA_VERSION = 1


def schema_columns() -> dict[str, list[str]]:
    """Each table of `SCHEMA` and its column names in order: what a store must hold."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(SCHEMA)
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")]
            for t in tables
            if not t.startswith("sqlite_")
        }
    finally:
        conn.close()
