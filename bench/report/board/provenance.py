"""Provenance of leaderboard rows, for regression tracking: which task version, data, code
and suite version produced each row, and the refusal to compare rows that differ in what
defines the measurement (task version, data hash) rather than in the code under test."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench import __version__
from bench.core.errors import BenchError
from bench.core.hashing import canonical_json, digest
from bench.report.board.keys import RowKey, row_key
from bench.report.board.row import Row
from bench.run.job import Job

PROVENANCE_KEYS = (
    "task_version",
    "data_hash",
    "code_version",
    "suite_version",
    "torch_threads",
    "device",
)
# Rows compare only when these agree; the code version is what a comparison is about.
COMPARABLE_KEYS = ("task_version", "data_hash")


class IncomparableError(BenchError):
    """Two leaderboards whose matched rows were measured on different task versions or data."""


def job_row_key(job: Job) -> RowKey:
    """The leaderboard row a job's results land in (its seed aside)."""
    return RowKey(
        job.task,
        job.mechanism,
        canonical_json(job.params),
        job.attack,
        canonical_json(job.attack_params),
    )


def _joined(values: set[str]) -> str:
    """One value, or the sorted distinct values joined by "," (rows should never mix)."""
    return ",".join(sorted(values))


def provenance_of(jobs: list[Job], suite_version: str) -> dict[str, str]:
    """task_version, data_hash, code_version ("<bench version>+<code hash>", a hash of the
    sorted code hashes when the jobs used different code), suite_version, torch_threads
    (the intra-op thread count the jobs ran with, bench.core.threads) and device (where they ran,
    bench.core.device) of `jobs`."""
    hashes = sorted({job.code_hash for job in jobs})
    code = hashes[0] if len(hashes) == 1 else digest(hashes)
    return {
        "task_version": _joined({str(job.task_version) for job in jobs}),
        "data_hash": _joined({job.data_hash for job in jobs}),
        "code_version": f"{__version__}+{code}",
        "suite_version": str(suite_version),
        "torch_threads": _joined({str(job.threads) for job in jobs}),
        "device": _joined({job.device for job in jobs}),
    }


def _config_key(task: str, mechanism: str, params: dict[str, Any]) -> tuple[str, str, str]:
    return task, mechanism, canonical_json(params)


def jobs_of_rows(rows: list[dict[str, Any]], jobs: list[Job]) -> list[list[Job]]:
    """The jobs behind each row, in row order: the row's own (its seeds), or for a summary
    row that no job maps to (e.g. the worst case over attacks) every job of its (task,
    mechanism, params); [] when none."""
    by_row: dict[RowKey, list[Job]] = defaultdict(list)
    by_config: dict[tuple[str, str, str], list[Job]] = defaultdict(list)
    for job in jobs:
        by_row[job_row_key(job)].append(job)
        by_config[_config_key(job.task, job.mechanism, job.params)].append(job)
    out = []
    for row in rows:
        config = _config_key(row["task"], row["mechanism"], row.get("params") or {})
        out.append(by_row.get(row_key(row)) or by_config.get(config) or [])
    return out


def attach_provenance(rows: list[Row], jobs: list[Job], suite_version: str) -> list[Row]:
    """`rows` (leaderboard rows built from these jobs' results), each with a "provenance"
    object (`provenance_of` its jobs, `jobs_of_rows`). Order kept."""
    return [
        Row(row, provenance=provenance_of(found, suite_version)) if found else row
        for row, found in zip(rows, jobs_of_rows(rows, jobs), strict=True)
    ]


# never the host name
ENVIRONMENT_KEYS = (
    "python",
    "torch",
    "platform",
    "cpu",
    "cpus",
    "cpu_isa",
    "cpu_model",
    "cpu_features",
)


def attach_environment(
    rows: list[Row], jobs: list[Job], machines: dict[str, dict[str, str]]
) -> list[Row]:
    """`rows`, each with an "environment" object (`ENVIRONMENT_KEYS`) of the machines its
    jobs were stored from (`machines`: job hash -> machine record), distinct values joined
    by ","."""
    out = []
    for row, found_jobs in zip(rows, jobs_of_rows(rows, jobs), strict=True):
        found = [machines[j.hash] for j in found_jobs if j.hash in machines]
        env = {
            key: _joined({str(m[key]) for m in found if key in m})
            for key in ENVIRONMENT_KEYS
            if any(key in m for m in found)
        }
        out.append(Row(row, environment=env) if env else row)
    return out


def _differences(base: dict[str, Any], cand: dict[str, Any]) -> list[str]:
    """ "task_version 1 vs 2"-style notes for each comparable key whose values differ."""
    b, c = base.get("provenance") or {}, cand.get("provenance") or {}
    return [
        f"{k} {b[k]} (baseline) vs {c[k]} (candidate)"
        for k in COMPARABLE_KEYS
        if k in b and k in c and b[k] != c[k]
    ]


def check_comparable(baseline: dict[str, Any], candidate: dict[str, Any]) -> None:
    """Refuse, with one line naming the first row and the versions that differ, to compare
    leaderboards whose matched rows differ in task version or data hash. Rows without
    provenance (older leaderboards) are not checked."""
    cand_rows = {row_key(r): r for r in candidate.get("rows", [])}
    clashes = []
    for row in baseline.get("rows", []):
        other = cand_rows.get(row_key(row))
        if other is not None:
            diff = _differences(row, other)
            if diff:
                clashes.append((row_key(row), diff))
    if clashes:
        key, diff = clashes[0]
        more = f" (and {len(clashes) - 1} more rows)" if len(clashes) > 1 else ""
        raise IncomparableError(
            f"cannot compare: row {key.label()} has {'; '.join(diff)}{more}; "
            "rerun both on the same task version and data"
        )


__all__ = [
    "COMPARABLE_KEYS",
    "PROVENANCE_KEYS",
    "IncomparableError",
    "attach_provenance",
    "check_comparable",
    "provenance_of",
]
