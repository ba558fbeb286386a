"""The small public API: expand a suite, run it, write its leaderboard.

from bench.api import run_suite
run_suite("smoke")            # same as `bench run --suite smoke`
"""

from __future__ import annotations

from pathlib import Path

from bench import __version__
from bench.hashing import digest
from bench.jobs import Job, expand
from bench.leaderboard import build_rows, write_leaderboard
from bench.runner import RunSummary, run_jobs
from bench.store import ResultStore
from bench.suite import Suite, load_suite


def expand_suite(name_or_path: str, seeds: int | None = None) -> tuple[Suite, list[Job]]:
    """Load and validate a suite, and list all its jobs."""
    suite = load_suite(name_or_path)
    return suite, expand(suite, seeds=seeds)


def write_suite_leaderboard(
    suite: Suite, jobs: list[Job], store: ResultStore, out_dir: Path
) -> list[Path]:
    """Leaderboard files of a fully stored suite. `generated_at` is the time of the newest
    result, so regenerating from the same results gives byte-identical files."""
    results = store.load(list(dict.fromkeys(j.hash for j in jobs)))
    code_version = f"{__version__}+{digest(sorted({j.code_hash for j in jobs}), length=10)}"
    generated_at = max(r["created_at"] for r in results)
    return write_leaderboard(
        suite.name,
        suite.version,
        build_rows(results),
        out_dir,
        code_version=code_version,
        generated_at=generated_at,
    )


def run_suite(
    name_or_path: str,
    *,
    store_path: Path = Path(".bench/results.sqlite"),
    out_dir: Path | None = None,
    workers: int = 1,
    seeds: int | None = None,
    progress: bool = False,
) -> tuple[RunSummary, list[Path]]:
    """Run every pending job of a suite and write its leaderboard."""
    suite, jobs = expand_suite(name_or_path, seeds=seeds)
    store = ResultStore(store_path)
    try:
        summary = run_jobs(
            jobs, store, store_path.parent / "cache", workers=workers, progress=progress
        )
        paths = write_suite_leaderboard(
            suite, jobs, store, out_dir or Path("leaderboards") / suite.name
        )
    finally:
        store.close()
    return summary, paths
