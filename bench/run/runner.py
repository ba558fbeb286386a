"""Run the pending jobs of a suite on an executor (bench.run.executors) and store them.

Executors only compute; this driver alone writes the store, one transaction per job, as
results arrive. A job that raises fails alone: its failure (error, one-line message and
traceback) is recorded in the store instead of a result, and the run goes on with the
other jobs; the summary lists the failed jobs, and the same command reruns only them.
Ctrl-C stops the run; jobs finished before it stay stored, so it resumes the same way.

Several runners (`bench run` processes, on one machine or on several sharing the store's
filesystem) can work on one store at once: each job is leased in the store just before it
is handed to a worker, the lease is renewed by a heartbeat thread while the job runs and
released when its results are written. A runner that finds every job left leased by a
live runner waits for those to be stored, or for their leases to expire (their runner
died) and then takes them over; it returns once every job of its selection is stored.
"""

from __future__ import annotations

import math
import os
import secrets
import socket
import sqlite3
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from bench.core.errors import ConfigError, IncompleteRunError
from bench.core.hashing import canonical_json
from bench.run.executors import Executor, JobFailure, LocalExecutor
from bench.run.job import Job
from bench.run.kinds.reconstruction import JobOutcome
from bench.run.progress import RunProgress, job_label
from bench.store.results import ResultStore

LEASE_TIMEOUT_ENV = "BENCH_LEASE_TIMEOUT"
DEFAULT_LEASE_TIMEOUT_S = 60.0
MAX_LEASE_TIMEOUT_S = 86_400.0
HEARTBEATS_PER_TIMEOUT = 4  # a lease is renewed this many times per timeout


@dataclass(frozen=True)
class FailedJob:
    """A job of this run that raised, and how."""

    job: Job
    failure: JobFailure

    def line(self) -> str:
        """One line: the job's hash, what it ran, and its error."""
        return f"{self.job.hash}  {describe(self.job)}: {self.failure.line()}"


@dataclass
class RunSummary:
    """What a run did: jobs selected, found stored, run and stored here, and failed here."""

    total: int
    skipped: int
    executed: int
    failed: list[FailedJob] = field(default_factory=list)
    stopped: bool = False  # the run stopped at `max_failures` failed jobs


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


def setting_of(job: Job) -> tuple[str, str, str, str, int]:
    """(task, its config, mechanism, its params, seed): the jobs of one setting share the
    artifacts their mechanism fits (an obfuscator, its MILP bounds, a fine-tuned model)."""
    return (
        job.task,
        canonical_json(job.task_config),
        job.mechanism,
        canonical_json(job.params),
        job.seed,
    )


def spread_settings(jobs: list[Job]) -> list[Job]:
    """`jobs` in the order the workers take them: the first job of every setting, then the
    second of every setting, and so on. Two workers then start on different settings
    instead of one building a setting's artifacts while the other waits for them (the
    cache builds each artifact once). Results do not depend on the order."""
    rounds: dict[tuple[str, str, str, str, int], list[Job]] = {}
    for job in jobs:
        rounds.setdefault(setting_of(job), []).append(job)
    ordered: list[Job] = []
    for depth in range(max((len(group) for group in rounds.values()), default=0)):
        ordered += [group[depth] for group in rounds.values() if depth < len(group)]
    return ordered


def short_label(job: Job) -> str:
    """task / mechanism / attack / seed: what the progress display shows for a running job."""
    return job_label(job)


def describe(job: Job) -> str:
    """task / mechanism(params) / attack(params) or utility / seed: a job for a reader."""
    return describe_parts(
        job.task, job.mechanism, job.params, job.attack, job.attack_params, job.seed
    )


def describe_parts(
    task: str,
    mechanism: str,
    params: dict[str, Any],
    attack: str | None,
    attack_params: dict[str, Any],
    seed: int,
) -> str:
    """`describe` from a job's fields (as the store's failure records hold them)."""

    def with_params(name: str, values: dict[str, Any]) -> str:
        return f"{name}({', '.join(f'{k}={v}' for k, v in sorted(values.items()))})"

    what = with_params(attack, attack_params) if attack else "utility"
    return f"{task} / {with_params(mechanism, params)} / {what} / seed {seed}"


def lease_timeout_s() -> float:
    """Seconds without a heartbeat after which a runner counts as dead and its jobs are
    taken over: $BENCH_LEASE_TIMEOUT, else 60 (small values only for tests). A value that
    is not a positive, finite number up to a day is refused (an infinite lease would never
    expire, and its heartbeat interval cannot be waited for)."""
    raw = os.environ.get(LEASE_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_LEASE_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if math.isfinite(value) and 0 < value <= MAX_LEASE_TIMEOUT_S:
        return value
    raise ConfigError(
        f"{LEASE_TIMEOUT_ENV} must be a positive number of seconds up to "
        f"{MAX_LEASE_TIMEOUT_S:,.0f} (a day), not {raw!r}"
    )


def new_runner_id() -> str:
    """host:pid:random, unique per run: the host and pid say which process holds a lease,
    the random part keeps a reused pid (or a rerun in the same process) distinct."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def runner_is_gone(runner: str) -> bool:
    """Whether the runner holding a lease is known to be dead: it ran on this host (its id
    is host:pid:random, `new_runner_id`) and no process has its pid any more, as after a
    kill -9 of a run that is now resumed here. Its jobs are then taken over at once instead
    of after the lease timeout. A runner on another host, or a pid that still exists (even
    reused by another process, or a zombie not yet reaped), counts as alive until its
    heartbeat expires, which is always safe."""
    host, _, rest = runner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit() or int(pid) <= 0:
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: an existence check, nothing is sent
    except ProcessLookupError:
        return True
    except OSError:  # exists, but is not ours to signal
        return False
    return False


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
                except sqlite3.Error:
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
        claim = store.claim(iter(todo), runner, timeout_s, gone=runner_is_gone)
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
    on_failure: Callable[[FailedJob], None] | None = None,
    max_failures: int | None = None,
    limit_of: Callable[[Job], float] | None = None,
) -> RunSummary:
    """Run every job not yet in `store` and store each result as soon as it is ready;
    with other runners on the store, only the jobs this one leases, then wait until the
    others' jobs are stored too (`lease_timeout`: seconds, default `lease_timeout_s()`).
    A job that raises is recorded as failed (`store.failures`), told to `on_failure` and
    listed in the summary; the others run on, unless `max_failures` jobs have failed: then
    the run stops there (`summary.stopped`; unfinished jobs stay unstored). `limit_of`
    gives each job's time limit in seconds (bench.run.timeouts), handed to the executor.
    A run that ends with a job of its selection neither stored nor failed (an executor
    that stopped early) raises IncompleteRunError rather than pass for a finished one.
    Progress (bench.run.progress): a bar in a terminal, a line per finished job elsewhere,
    with an ETA seeded from the committed boards; the jobs' own inner bars are off, so
    nothing piles up under it."""
    pending = spread_settings(pending_jobs(jobs, store))
    summary = RunSummary(total=len(jobs), skipped=len(jobs) - len(pending), executed=0)
    if not pending:
        return summary
    timeout_s = lease_timeout_s() if lease_timeout is None else lease_timeout
    runner = new_runner_id()
    runner_of = executor or LocalExecutor()
    display = RunProgress(pending, enabled=progress, workers=getattr(runner_of, "workers", 1))
    with display, Heartbeat(store.path, runner, timeout_s / HEARTBEATS_PER_TIMEOUT):

        def stored_elsewhere(n: int) -> None:
            summary.skipped += n
            display.stored_elsewhere(n)

        feed = claimed_jobs(pending, store, runner, timeout_s, stored_elsewhere, display.waiting)
        limits = {} if limit_of is None else {"limit_of": limit_of}
        results = runner_of.run(feed, cache_root, False, on_start=display.started, **limits)
        try:
            for job, result in results:
                failure = result if isinstance(result, JobFailure) else None
                if failure is None:
                    failure = _write(store, job, cast(JobOutcome, result), runner)
                if failure is None:
                    summary.executed += 1
                else:
                    failed = FailedJob(job, failure)
                    _record(store, failed, runner)
                    summary.failed.append(failed)
                    if on_failure is not None:
                        on_failure(failed)
                    if max_failures is not None and len(summary.failed) >= max_failures:
                        summary.stopped = True
                        break
                display.finished(job, failure is None, getattr(result, "duration_s", None))
        finally:
            # An interrupt, or the runner itself failed: stop this runner's workers, then free
            # the jobs it still holds for the other runners (so none runs a job one of ours
            # still runs).
            _close(results)
            store.release_all(runner, "stopped")
    if not summary.stopped:
        _check_complete(pending, store, summary)
    return summary


def _check_complete(pending: list[Job], store: ResultStore, summary: RunSummary) -> None:
    """Every pending job is stored (here or by another runner) or failed here; else an
    IncompleteRunError naming how many are neither, so such a run never exits 0."""
    failed = {f.job.hash for f in summary.failed}
    stored = store.stored_hashes([j.hash for j in pending if j.hash not in failed])
    missing = [j for j in pending if j.hash not in stored and j.hash not in failed]
    if missing:
        raise IncompleteRunError(
            f"{len(missing)} of {summary.total} selected jobs were neither stored nor failed "
            f"(the executor ended before running them, e.g. {describe(missing[0])}); the same "
            "command runs them"
        )


# What storing a job's outcome raises when the outcome itself is bad (a plug-in's metric
# value that is not a number, or NaN, which SQLite turns into a NULL its columns refuse):
# that job's failure. Anything else (the store locked past its timeout, a full disk) stops
# the run.
UNSTORABLE = (TypeError, ValueError, OverflowError, sqlite3.IntegrityError)


def _record(store: ResultStore, failed: FailedJob, runner: str) -> None:
    """Record a failed job in the store and release its lease there."""
    f = failed.failure
    store.record_failure(failed.job, f.error, f.message, f.traceback, runner=runner)


def _write(store: ResultStore, job: Job, outcome: JobOutcome, runner: str) -> JobFailure | None:
    """Store a finished job (releasing its lease); its JobFailure when its outcome cannot be
    stored (nothing of it is: the transaction is rolled back)."""
    try:
        store.write(
            job,
            outcome.metrics,
            outcome.guarantee,
            outcome.duration_s,
            outcome.examples,
            runner=runner,
        )
    except UNSTORABLE as exc:
        failure = JobFailure.of(exc)
        return replace(failure, message=f"result not storable: {failure.message}")
    return None


def _close(results: Iterator[object]) -> None:
    """End an executor's run now (a generator's cleanup cancels and reaps its workers)
    rather than whenever it is garbage collected; a no-op once it is exhausted."""
    close = getattr(results, "close", None)
    if close is not None:
        close()
