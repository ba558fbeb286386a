"""Run the pending jobs of a suite on an executor (bench.executors) and store them.

Executors only compute; this driver alone writes the store, one transaction per job, as
results arrive. A failing job stops the run with its one-line error; jobs finished
before it stay stored, so the same command resumes where it stopped.

Several runners (`bench run` processes, on one machine or on several sharing the store's
filesystem) can work on one store at once: each job is leased in the store just before it
is handed to a worker, the lease is renewed by a heartbeat thread while the job runs and
released when its results are written. A runner that finds every job left leased by a
live runner waits for those to be stored, or for their leases to expire (their runner
died) and then takes them over; it returns once every job of its selection is stored.
"""

from __future__ import annotations

import os
import secrets
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from bench.errors import ConfigError
from bench.executors import Executor, LocalExecutor
from bench.jobs import Job
from bench.store import ResultStore

LEASE_TIMEOUT_ENV = "BENCH_LEASE_TIMEOUT"
DEFAULT_LEASE_TIMEOUT_S = 60.0
HEARTBEATS_PER_TIMEOUT = 4  # a lease is renewed this many times per timeout


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


def lease_timeout_s() -> float:
    """Seconds without a heartbeat after which a runner counts as dead and its jobs are
    taken over: $BENCH_LEASE_TIMEOUT, else 60 (small values only for tests)."""
    raw = os.environ.get(LEASE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if value > 0:
        return value
    raise ConfigError(f"{LEASE_TIMEOUT_ENV} must be a positive number of seconds, not {raw!r}")


def new_runner_id() -> str:
    """host:pid:random, unique per run: the host and pid say which process holds a lease,
    the random part keeps a reused pid (or a rerun in the same process) distinct."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


class Heartbeat:
    """Renews every lease of `runner` every `interval_s` on a thread of its own (with its
    own connection), so its leases stay live however long their jobs run in this process or
    elsewhere; stops on leaving the `with` block."""

    def __init__(self, store_path: Path, runner: str, interval_s: float) -> None:
        self.store_path = store_path
        self.runner = runner
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="lease-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        store = ResultStore(self.store_path)
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    store.heartbeat(self.runner)
                except sqlite3.OperationalError:
                    continue  # the store stayed locked past its timeout: try on the next beat
        finally:
            store.close()


def claimed_jobs(
    pending: list[Job],
    store: ResultStore,
    runner: str,
    timeout_s: float,
    on_stored: Callable[[int], None],
    on_wait: Callable[[int], None],
) -> Iterator[Job | None]:
    """The executor's feed: each pending job as soon as `runner` holds its lease (claimed
    in the store just before it is handed out), None while every job left is leased by
    another live runner; ends when each job is claimed here or stored. Jobs found stored
    by other runners are reported to `on_stored`, waits to `on_wait` (jobs left)."""
    todo = {job.hash: job for job in pending}
    while todo:
        claim = store.claim(iter(todo), runner, timeout_s)
        for job_hash in claim.stored:
            del todo[job_hash]
        if claim.stored:
            on_stored(len(claim.stored))
        if claim.job_hash is not None:
            yield todo.pop(claim.job_hash)
        elif todo:
            on_wait(len(todo))
            yield None


def run_jobs(
    jobs: list[Job],
    store: ResultStore,
    cache_root: Path,
    *,
    executor: Executor | None = None,
    progress: bool = True,
    lease_timeout: float | None = None,
) -> RunSummary:
    """Run every job not yet in `store` and store each result as soon as it is ready;
    with other runners on the store, only the jobs this one leases, then wait until the
    others' jobs are stored too (`lease_timeout`: seconds, default `lease_timeout_s()`).
    One progress bar (ETA, label = the oldest job still running); the jobs' own inner bars
    are off, so nothing piles up under it."""
    pending = pending_jobs(jobs, store)
    summary = RunSummary(total=len(jobs), skipped=len(jobs) - len(pending), executed=0)
    if not pending:
        return summary
    timeout_s = lease_timeout_s() if lease_timeout is None else lease_timeout
    runner = new_runner_id()
    running: dict[str, Job] = {}  # started and not finished, in start order
    columns = (
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.description}"),
    )
    with (
        Progress(*columns, disable=not progress, transient=False) as bar,
        Heartbeat(store.path, runner, timeout_s / HEARTBEATS_PER_TIMEOUT),
    ):
        task_id = bar.add_task("starting", total=len(pending))

        def started(job: Job) -> None:
            running[job.hash] = job
            bar.update(task_id, description=short_label(next(iter(running.values()))))

        def stored_elsewhere(n: int) -> None:
            summary.skipped += n
            bar.update(task_id, advance=n)

        def waiting(n: int) -> None:
            if not running:
                bar.update(task_id, description=f"waiting for {n} jobs of other runners")

        feed = claimed_jobs(pending, store, runner, timeout_s, stored_elsewhere, waiting)
        results = (executor or LocalExecutor()).run(feed, cache_root, False, on_start=started)
        try:
            for job, outcome in results:
                store.write(
                    job,
                    outcome.metrics,
                    outcome.guarantee,
                    outcome.duration_s,
                    outcome.examples,
                    runner=runner,
                )
                summary.executed += 1
                running.pop(job.hash, None)
                oldest = next(iter(running.values()), None)
                label = short_label(oldest) if oldest else "done"
                bar.update(task_id, advance=1, description=label)
        finally:
            # A failed job, an interrupt: stop this runner's workers, then free the jobs it
            # still holds for the other runners (so none runs a job one of ours still runs).
            _close(results)
            store.release_all(runner, "stopped")
    return summary


def _close(results: Iterator[object]) -> None:
    """End an executor's run now (a generator's cleanup cancels and reaps its workers)
    rather than whenever it is garbage collected; a no-op once it is exhausted."""
    close = getattr(results, "close", None)
    if close is not None:
        close()
