"""The result store: SQLite in WAL mode, one row per (job hash, metric).

A job's rows and its `jobs` record are written in one transaction, so a killed run
leaves each job either wholly stored or absent (it reruns); the primary keys make a
second writer of the same job a no-op instead of a duplicate.
"""

from __future__ import annotations

import io
import json
import os
import platform
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.hashing import canonical_json
from bench.jobs import Job
from bench.metrics import MetricResult

_SCHEMA = """
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
"""


def _to_blob(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _from_blob(b: bytes) -> np.ndarray:
    return np.load(io.BytesIO(b), allow_pickle=False)


def machine_info() -> dict[str, str]:
    import torch

    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": str(os.cpu_count() or 0),
    }


class ResultStore:
    """Read and write job results; safe for one writer and many readers at once."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

    def close(self) -> None:
        self._conn.close()

    def stored_hashes(self, hashes: list[str]) -> set[str]:
        """Which of `hashes` are already complete in the store."""
        found: set[str] = set()
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT job_hash FROM jobs WHERE job_hash IN ({marks})", chunk
            )
            found.update(r[0] for r in rows)
        return found

    def write(
        self,
        job: Job,
        metrics: dict[str, MetricResult],
        guarantee: dict[str, Any],
        duration_s: float,
        examples: dict[str, np.ndarray] | None = None,
    ) -> bool:
        """Store a finished job atomically; False when it was already stored (no change)."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            cur.execute(
                "INSERT OR IGNORE INTO jobs VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job.hash,
                    canonical_json(job.config()),
                    job.task,
                    job.mechanism,
                    canonical_json(job.params),
                    job.attack,
                    canonical_json(job.attack_params),
                    job.seed,
                    job.task_version,
                    job.data_hash,
                    job.code_hash,
                    canonical_json(guarantee),
                    duration_s,
                    canonical_json(machine_info()),
                    now,
                ),
            )
            if cur.rowcount == 0:
                cur.execute("ROLLBACK")
                return False
            cur.executemany(
                "INSERT INTO results VALUES (?,?,?,?,?,?,?)",
                [
                    (
                        job.hash,
                        name,
                        float(m.value),
                        float(m.ci[0]),
                        float(m.ci[1]),
                        int(m.n),
                        None
                        if m.samples is None
                        else np.asarray(m.samples, dtype=np.float64).tobytes(),
                    )
                    for name, m in sorted(metrics.items())
                ],
            )
            if examples is not None:
                cur.execute(
                    "INSERT INTO examples VALUES (?,?,?)",
                    (job.hash, _to_blob(examples["x"]), _to_blob(examples["x_hat"])),
                )
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        return True

    def load(self, hashes: list[str]) -> list[dict[str, Any]]:
        """Job results in the leaderboard's input format, in the order of `hashes`."""
        out = []
        for job_hash in hashes:
            job = self._conn.execute(
                "SELECT task, mechanism, params, attack, attack_params, seed, guarantee, "
                "created_at FROM jobs WHERE job_hash = ?",
                (job_hash,),
            ).fetchone()
            if job is None:
                continue
            metrics = {
                name: MetricResult(
                    value,
                    (lo, hi),
                    n,
                    None if blob is None else np.frombuffer(blob, dtype=np.float64),
                )
                for name, value, lo, hi, n, blob in self._conn.execute(
                    "SELECT metric, value, ci_lo, ci_hi, n, samples FROM results "
                    "WHERE job_hash = ?",
                    (job_hash,),
                )
            }
            out.append(
                {
                    "task": job[0],
                    "mechanism": job[1],
                    "params": json.loads(job[2]),
                    "attack": job[3],
                    "attack_params": json.loads(job[4]),
                    "seed": job[5],
                    "guarantee": json.loads(job[6]),
                    "created_at": job[7],
                    "metrics": metrics,
                }
            )
        return out

    def machines(self, hashes: list[str]) -> dict[str, dict[str, str]]:
        """The machine (python, torch, platform, cpu) each stored job was recorded on."""
        out = {}
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT job_hash, machine FROM jobs WHERE job_hash IN ({marks})", chunk
            )
            out.update({h: json.loads(m) for h, m in rows})
        return out

    def mean_durations(self) -> dict[tuple[str, str, str], float]:
        """Mean stored run time per (task, mechanism, attack or "utility"), over every job
        in the store (any parameters, any code version): what `bench run --dry-run`
        estimates pending work with."""
        rows = self._conn.execute(
            "SELECT task, mechanism, COALESCE(attack, 'utility'), AVG(duration_s) FROM jobs "
            "GROUP BY task, mechanism, COALESCE(attack, 'utility')"
        )
        return {(task, mech, attack): float(mean) for task, mech, attack, mean in rows}

    def timings(self, hashes: list[str] | None = None) -> list[dict[str, Any]]:
        """Per stored job (all, or those of `hashes`): its kind, seed, wall time and the stage
        timings it recorded (fit_s on utility jobs, attack_s on attack jobs): what
        `bench profile` breaks a suite's time down by."""
        query = (
            "SELECT j.job_hash, j.task, j.mechanism, j.params, j.attack, j.seed, j.duration_s, "
            "(SELECT value FROM results r WHERE r.job_hash = j.job_hash AND r.metric = 'fit_s'), "
            "(SELECT value FROM results r WHERE r.job_hash = j.job_hash AND r.metric = 'attack_s') "
            "FROM jobs j"
        )
        if hashes is None:
            found = self._conn.execute(query).fetchall()
        else:
            found = []
            for i in range(0, len(hashes), 500):
                chunk = hashes[i : i + 500]
                marks = ",".join("?" * len(chunk))
                found += self._conn.execute(
                    f"{query} WHERE j.job_hash IN ({marks})", chunk
                ).fetchall()
        keys = ("hash", "task", "mechanism", "params", "attack", "seed", "duration_s")
        return [
            {
                **dict(zip(keys, row[:7], strict=True)),
                "params": json.loads(row[3]),
                "fit_s": row[7],
                "attack_s": row[8],
            }
            for row in found
        ]

    def examples(self, hashes: list[str]) -> dict[str, dict[str, np.ndarray]]:
        """Stored originals and reconstructions per job hash (image attack jobs only)."""
        out = {}
        for job_hash in hashes:
            row = self._conn.execute(
                "SELECT x, x_hat FROM examples WHERE job_hash = ?", (job_hash,)
            ).fetchone()
            if row is not None:
                out[job_hash] = {"x": _from_blob(row[0]), "x_hat": _from_blob(row[1])}
        return out
