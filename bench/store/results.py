"""The result store: SQLite in WAL mode, one row per (job hash, metric).

A job's rows and its `jobs` record are written in one transaction, so a killed run
leaves each job either wholly stored or absent (it reruns); the primary keys make a
second writer of the same job a no-op instead of a duplicate.

Several runners can share one store: a runner leases a job (`leases`: its runner id and a
heartbeat) before running it, and releases the lease in the transaction that stores the
job. A lease whose heartbeat is older than the timeout belongs to a dead runner and may be
taken over. Every claim, takeover and release is appended to `lease_log`, so who ran what,
and when, can be checked afterwards. Lease times are Unix seconds (`time.time()`): runners
on several machines need clocks that agree to well within the lease timeout.

A job that raised is not stored: `failures` gets a row (its error, one-line message and
traceback) in the transaction that releases its lease, and the job reruns with the next
run (or is tried by another runner on the store that is still running).
"""

from __future__ import annotations

import io
import json
import os
import platform
import sqlite3
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.cpu_math import effective_isa
from bench.core.errors import ConfigError
from bench.core.hashing import canonical_json
from bench.metrics import MetricResult
from bench.run.job import Job
from bench.store.rows import jobs_column
from bench.store.schema import SCHEMA, SCHEMA_VERSION

# lease_log events: "claim" (the job had no lease), "takeover" (the lease of prev_runner,
# last renewed at prev_heartbeat_at, had expired) and "release" with its outcome: "stored"
# (released with the job's rows), "duplicate" (the job was already stored by another
# runner), "failed" (the job raised: released with its `failures` row), "stopped" (the
# run ended first: it was interrupted or the runner itself failed) or "lost" (the lease
# had been taken over before this runner released it).


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back the open transaction, if SQLite still has one: after some errors (a full
    disk: "disk I/O error") SQLite has already rolled it back, and a second ROLLBACK would
    raise "no transaction is active" over the error that says what went wrong."""
    if conn.in_transaction:
        # The original error is the one to report; SQLite undoes the rest on close.
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


@dataclass(frozen=True)
class Claim:
    """What a claim attempt found: the job hash now leased to the caller (None when every
    candidate is stored or leased by a live runner), and the candidates already stored."""

    job_hash: str | None
    stored: list[str]


def _to_blob(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def _from_blob(b: bytes) -> np.ndarray:
    return np.load(io.BytesIO(b), allow_pickle=False)


# The CPU's vector extensions that can change a float kernel's result: bench pins torch to
# AVX2 (bench.core.cpu_math), but libraries outside that pin may still choose by these.
VECTOR_FEATURES = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)


def cpu_description(cpuinfo: str) -> dict[str, str]:
    """The CPU model and its VECTOR_FEATURES (space-separated, in that order) from the text of
    Linux's /proc/cpuinfo; the fields it does not name are left out."""
    out: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and "cpu_model" not in out:
            out["cpu_model"] = value.strip()
        elif key == "flags" and "cpu_features" not in out:
            flags = set(value.split())
            out["cpu_features"] = " ".join(f for f in VECTOR_FEATURES if f in flags)
    return out


def machine_info() -> dict[str, str]:
    """Where a job ran: enough to tell whether two rows' floats can be expected to agree."""
    import torch

    cpuinfo = Path("/proc/cpuinfo")
    return {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu": platform.processor() or platform.machine(),
        "cpus": str(os.cpu_count() or 0),
        "cpu_isa": effective_isa(),
        **(cpu_description(cpuinfo.read_text()) if cpuinfo.is_file() else {}),
    }


class ResultStore:
    """Read and write job results and job leases; safe for several writers (runners) and
    many readers at once, each with its own connection."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(SCHEMA)
        if self._conn.execute("PRAGMA user_version").fetchone()[0] == 0:
            self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @classmethod
    def read_only(cls, path: Path) -> ResultStore:
        """A reader of an existing store that writes nothing: no schema, no journal mode, no
        lease (e.g. to compare two old stores); a missing file is a ConfigError."""
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"no result store at {path}")
        store = cls.__new__(cls)
        store.path = path
        store._conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        return store

    def close(self) -> None:
        self._conn.close()

    def all_hashes(self) -> list[str]:
        """Every stored job's hash, in the order the jobs were written."""
        rows = self._conn.execute("SELECT job_hash FROM jobs ORDER BY created_at, job_hash")
        return [row[0] for row in rows]

    def stored_hashes(self, hashes: list[str]) -> set[str]:
        """Which of `hashes` are already complete in the store."""
        return set(jobs_column(self._conn, hashes, "job_hash"))

    def write(
        self,
        job: Job,
        metrics: dict[str, MetricResult],
        guarantee: dict[str, Any],
        duration_s: float,
        examples: dict[str, np.ndarray] | None = None,
        runner: str | None = None,
    ) -> bool:
        """Store a finished job atomically; False when it was already stored (no change).
        With `runner`, that runner's lease on the job is released in the same transaction,
        so other runners see the job leased or stored, never free in between."""
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
            written = cur.rowcount == 1
            if written:
                self._insert_results(cur, job.hash, metrics, examples)
            if runner is not None:
                self._release(cur, job.hash, runner, "stored" if written else "duplicate")
            cur.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise
        return written

    @staticmethod
    def _insert_results(
        cur: sqlite3.Cursor,
        job_hash: str,
        metrics: dict[str, MetricResult],
        examples: dict[str, np.ndarray] | None,
    ) -> None:
        """A job's metric rows (and image examples), inside the caller's transaction."""
        cur.executemany(
            "INSERT INTO results VALUES (?,?,?,?,?,?,?)",
            [
                (
                    job_hash,
                    name,
                    float(m.value),
                    float(m.ci[0]),
                    float(m.ci[1]),
                    int(m.n),
                    None if m.samples is None else np.asarray(m.samples, np.float64).tobytes(),
                )
                for name, m in sorted(metrics.items())
            ],
        )
        if examples is not None:
            cur.execute(
                "INSERT INTO examples VALUES (?,?,?)",
                (job_hash, _to_blob(examples["x"]), _to_blob(examples["x_hat"])),
            )

    def claim(
        self,
        hashes: Iterable[str],
        runner: str,
        timeout_s: float,
        now: float | None = None,
        gone: Callable[[str], bool] = lambda holder: False,
    ) -> Claim:
        """Lease to `runner` the first of `hashes` that is not stored and has no lease, or
        only its own, or one whose heartbeat is more than `timeout_s` old, or one whose
        holder `gone` says is dead (its runner died: a takeover). One write transaction, so
        two runners never claim the same job; the scan stops at the first claimable hash, so
        it is cheap when most are free."""
        now = time.time() if now is None else now
        stored: list[str] = []
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            for job_hash in hashes:
                if cur.execute("SELECT 1 FROM jobs WHERE job_hash = ?", (job_hash,)).fetchone():
                    stored.append(job_hash)
                    continue
                lease = cur.execute(
                    "SELECT runner, heartbeat_at FROM leases WHERE job_hash = ?", (job_hash,)
                ).fetchone()
                if (
                    lease is not None
                    and lease[0] != runner
                    and now - lease[1] <= timeout_s
                    and not gone(lease[0])
                ):
                    continue  # a live runner holds it
                self._lease(cur, job_hash, runner, now, lease)
                cur.execute("COMMIT")
                return Claim(job_hash, stored)
            cur.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise
        return Claim(None, stored)

    @staticmethod
    def _lease(
        cur: sqlite3.Cursor,
        job_hash: str,
        runner: str,
        now: float,
        previous: tuple[str, float] | None,
    ) -> None:
        """Write `runner`'s lease on a job and log it: a takeover when it replaces another
        runner's (expired) lease, with that runner and its last heartbeat."""
        takeover = previous is not None and previous[0] != runner
        cur.execute("INSERT OR REPLACE INTO leases VALUES (?,?,?,?)", (job_hash, runner, now, now))
        cur.execute(
            "INSERT INTO lease_log (job_hash, runner, event, at, prev_runner, prev_heartbeat_at) "
            "VALUES (?,?,?,?,?,?)",
            (
                job_hash,
                runner,
                "takeover" if takeover else "claim",
                now,
                previous[0] if takeover and previous else None,
                previous[1] if takeover and previous else None,
            ),
        )

    def heartbeat(self, runner: str, now: float | None = None) -> int:
        """Renew every lease `runner` holds, so live runners keep their jobs; how many."""
        now = time.time() if now is None else now
        cur = self._conn.execute(
            "UPDATE leases SET heartbeat_at = ? WHERE runner = ?", (now, runner)
        )
        return cur.rowcount

    def release(self, job_hash: str, runner: str, outcome: str) -> bool:
        """Drop `runner`'s lease on a job (e.g. it failed) and log why; False when the lease
        was no longer its own (taken over)."""
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            held = self._release(cur, job_hash, runner, outcome)
            cur.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise
        return held

    def release_all(self, runner: str, outcome: str) -> int:
        """Drop every lease `runner` still holds (its run is ending); how many there were."""
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            held = [
                r[0] for r in cur.execute("SELECT job_hash FROM leases WHERE runner = ?", (runner,))
            ]
            for job_hash in held:
                self._release(cur, job_hash, runner, outcome)
            cur.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise
        return len(held)

    @staticmethod
    def _release(cur: sqlite3.Cursor, job_hash: str, runner: str, outcome: str) -> bool:
        """Delete `runner`'s lease on a job inside the caller's transaction and log the
        release ("lost" instead of `outcome` when another runner had taken it over)."""
        cur.execute("DELETE FROM leases WHERE job_hash = ? AND runner = ?", (job_hash, runner))
        held = cur.rowcount == 1
        cur.execute(
            "INSERT INTO lease_log (job_hash, runner, event, at, outcome) VALUES (?,?,?,?,?)",
            (job_hash, runner, "release", time.time(), outcome if held else "lost"),
        )
        return held

    def record_failure(
        self, job: Job, error: str, message: str, traceback: str, runner: str | None = None
    ) -> None:
        """Record that `job` raised (`error`: the exception's type name, `message`: one
        line); with `runner`, its lease is released ("failed") in the same transaction. The
        job stays unstored, so the next run tries it again."""
        cur = self._conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            cur.execute(
                "INSERT INTO failures (job_hash, runner, at, task, mechanism, params, attack, "
                "attack_params, seed, error, message, traceback) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    job.hash,
                    runner or "",
                    time.time(),
                    job.task,
                    job.mechanism,
                    canonical_json(job.params),
                    job.attack,
                    canonical_json(job.attack_params),
                    job.seed,
                    error,
                    message,
                    traceback,
                ),
            )
            if runner is not None:
                self._release(cur, job.hash, runner, "failed")
            cur.execute("COMMIT")
        except BaseException:
            _rollback(self._conn)
            raise

    def failures(self, include_stored: bool = False) -> list[dict[str, Any]]:
        """The last recorded failure of each job that failed, oldest first: job_hash, runner,
        at (Unix seconds), task, mechanism, params, attack, attack_params, seed, error,
        message and traceback; only jobs still not stored unless `include_stored`."""
        unstored = "" if include_stored else "AND f.job_hash NOT IN (SELECT job_hash FROM jobs) "
        cur = self._conn.execute(
            "SELECT f.job_hash, f.runner, f.at, f.task, f.mechanism, f.params, f.attack, "
            "f.attack_params, f.seed, f.error, f.message, f.traceback FROM failures f "
            "WHERE f.id = (SELECT MAX(id) FROM failures g WHERE g.job_hash = f.job_hash) "
            f"{unstored}ORDER BY f.id"
        )
        keys = [d[0] for d in cur.description]
        rows = [dict(zip(keys, row, strict=True)) for row in cur]
        for row in rows:
            row["params"] = json.loads(row["params"])
            row["attack_params"] = json.loads(row["attack_params"])
        return rows

    def leases(self) -> dict[str, dict[str, Any]]:
        """The current leases by job hash: runner, claimed_at, heartbeat_at (Unix seconds)."""
        rows = self._conn.execute("SELECT job_hash, runner, claimed_at, heartbeat_at FROM leases")
        return {h: {"runner": r, "claimed_at": c, "heartbeat_at": b} for h, r, c, b in rows}

    def lease_events(self) -> list[dict[str, Any]]:
        """The whole lease log, oldest first: who claimed, took over or released which job,
        when, and with what outcome (see the event names above `Claim`)."""
        cur = self._conn.execute(
            "SELECT job_hash, runner, event, at, prev_runner, prev_heartbeat_at, outcome "
            "FROM lease_log ORDER BY id"
        )
        keys = [d[0] for d in cur.description]
        return [dict(zip(keys, row, strict=True)) for row in cur]

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

    def created_times(self, hashes: list[str]) -> dict[str, str]:
        """When each stored job of `hashes` was written (ISO 8601): with the job hashes, a
        cheap fingerprint of what a leaderboard built from this store would show."""
        return jobs_column(self._conn, hashes, "created_at")

    def machines(self, hashes: list[str]) -> dict[str, dict[str, str]]:
        """The machine (python, torch, platform, cpu) each stored job was recorded on."""
        return {h: json.loads(m) for h, m in jobs_column(self._conn, hashes, "machine").items()}

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
