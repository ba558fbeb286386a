"""Run the pending jobs of a suite on an executor (bench.executors) and store them.

Executors only compute; this driver alone writes the store, one transaction per job, as
results arrive. A failing job stops the run with its one-line error; jobs finished
before it stay stored, so the same command resumes where it stopped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bench.executors import Executor, LocalExecutor
from bench.jobs import Job
from bench.store import ResultStore


@dataclass
class RunSummary:
    total: int
    skipped: int
    executed: int


def pending_jobs(jobs: list[Job], store: ResultStore | None) -> list[Job]:
    """The jobs not yet in `store` (all of them without a store), each hash once: a suite
    may list the same job twice (e.g. overlapping grids)."""
    stored = store.stored_hashes([j.hash for j in jobs]) if store is not None else set()
    seen: set[str] = set()
    pending = []
    for job in jobs:
        if job.hash not in stored and job.hash not in seen:
            seen.add(job.hash)
            pending.append(job)
    return pending


def job_kind(job: Job) -> tuple[str, str, str]:
    """(task, mechanism, attack or "utility"): the unit timings are estimated by."""
    return job.task, job.mechanism, job.attack or "utility"


def short_label(job: Job) -> str:
    """task / mechanism / attack / seed: what the progress bar shows for a running job."""
    return " / ".join((*job_kind(job), f"seed {job.seed}"))


def run_jobs(
    jobs: list[Job],
    store: ResultStore,
    cache_root: Path,
    *,
    executor: Executor | None = None,
    progress: bool = True,
) -> RunSummary:
    """Run every job not yet in `store` and store each result as soon as it is ready. One
    progress bar (ETA, label = the oldest job still running); the jobs' own inner bars are
    off, so nothing piles up under it."""
    pending = pending_jobs(jobs, store)
    summary = RunSummary(total=len(jobs), skipped=len(jobs) - len(pending), executed=0)
    if not pending:
        return summary
    running: dict[str, Job] = {}  # started and not finished, in start order
    columns = (
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
    )
    with Progress(*columns, disable=not progress, transient=False) as bar:
        task_id = bar.add_task("starting", total=len(pending))

        def started(job: Job) -> None:
            running[job.hash] = job
            bar.update(task_id, description=short_label(next(iter(running.values()))))

        results = (executor or LocalExecutor()).run(pending, cache_root, False, on_start=started)
        for job, outcome in results:
            store.write(
                job, outcome.metrics, outcome.guarantee, outcome.duration_s, outcome.examples
            )
            summary.executed += 1
            running.pop(job.hash, None)
            oldest = next(iter(running.values()), None)
            label = short_label(oldest) if oldest else "done"
            bar.update(task_id, advance=1, description=label)
    return summary
