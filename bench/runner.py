"""Run the pending jobs of a suite, in this process or in N worker processes.

Workers only compute; the parent alone writes the store, one transaction per job, as
results arrive. A failing job stops the run with its one-line error; jobs finished
before it stay stored, so the same command resumes where it stopped.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

import torch
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from bench.evaluate import JobOutcome, run_job
from bench.jobs import Job
from bench.store import ResultStore


@dataclass
class RunSummary:
    total: int
    skipped: int
    executed: int


def _init_worker(threads: int) -> None:
    torch.set_num_threads(threads)


def _run_in_worker(job: Job, cache_root: str) -> JobOutcome:
    return run_job(job, Path(cache_root))


def _sequential(
    jobs: list[Job], cache_root: Path, progress: bool
) -> Iterator[tuple[Job, JobOutcome]]:
    for job in jobs:
        yield job, run_job(job, cache_root, progress)


def _parallel(jobs: list[Job], cache_root: Path, workers: int) -> Iterator[tuple[Job, JobOutcome]]:
    threads = max(1, (os.cpu_count() or 1) // workers)
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers, mp_context=ctx, initializer=_init_worker, initargs=(threads,)
    ) as pool:
        pending: dict[Future, Job] = {}
        queue = list(jobs)
        try:
            while queue or pending:
                while queue and len(pending) < 2 * workers:
                    job = queue.pop(0)
                    pending[pool.submit(_run_in_worker, job, str(cache_root))] = job
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in done:
                    job = pending.pop(fut)
                    yield job, fut.result()
        finally:
            for fut in pending:
                fut.cancel()


def run_jobs(
    jobs: list[Job],
    store: ResultStore,
    cache_root: Path,
    *,
    workers: int = 1,
    progress: bool = True,
    on_done: Callable[[Job], None] | None = None,
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
    results = (
        _sequential(pending, cache_root, progress)
        if workers <= 1
        else _parallel(pending, cache_root, workers)
    )
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
            if on_done is not None:
                on_done(job)
    return summary
