"""Run the pending jobs of a suite on an executor (bench.executors) and store them.

Executors only compute; this driver alone writes the store, one transaction per job, as
results arrive. A failing job stops the run with its one-line error; jobs finished
before it stay stored, so the same command resumes where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.executors import Executor, LocalExecutor
from bench.jobs import Job
from bench.store import ResultStore


@dataclass
class RunSummary:
    total: int
    skipped: int
    executed: int


def run_jobs(
    jobs: list[Job],
    store: ResultStore,
    cache_root: Path,
    *,
    executor: Executor | None = None,
    progress: bool = True,
) -> RunSummary:
    """Run every job not yet in `store` and store each result as soon as it is ready."""
    stored = store.stored_hashes([j.hash for j in jobs])
    seen: set[str] = set()
    pending = []
    for job in jobs:  # a suite may list the same job twice (e.g. overlapping grids)
        if job.hash not in stored and job.hash not in seen:
            seen.add(job.hash)
            pending.append(job)
    summary = RunSummary(total=len(jobs), skipped=len(jobs) - len(pending), executed=0)
    if not pending:
        return summary
    results = (executor or LocalExecutor()).run(pending, cache_root, progress)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, disable=not progress, transient=False) as bar:
        task_id = bar.add_task("jobs", total=len(pending))
        for job, outcome in results:
            store.write(
                job, outcome.metrics, outcome.guarantee, outcome.duration_s, outcome.examples
            )
            summary.executed += 1
            bar.update(task_id, advance=1, description=job.label()[:60])
    return summary
