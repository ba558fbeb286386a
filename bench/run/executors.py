"""Executors: where jobs run. Each yields (job, outcome) as jobs finish; none writes the
store (the runner, in the driver process, alone does), so a lost or retried worker can
never duplicate or half-write a result.

- `LocalExecutor(n)`: n supervised worker processes on this machine, one at --jobs 1
  (bench.run.supervisor): a job whose process dies, or that runs past its time limit, is
  that job's failure (WorkerDied, TimedOut), and the run goes on.
- `InlineExecutor()`: in this process, in order, unsupervised (tests, embedding).
- `RayExecutor(address)`: Ray tasks on a cluster (or a local Ray instance started and
  stopped here); a task whose worker dies is retried by Ray, up to `max_retries` times.

Jobs come from a feed that is read lazily, one job each time an executor can start one, so
the runner can lease each job just before it is handed out. A `None` in the feed means no
job can be handed out now (other runners hold the rest): the executor carries on with the
jobs it has and asks again after `WAIT_S`.

A job that raises (a plug-in's bug, a mechanism's NaN output) yields a `JobFailure` in
place of its outcome, caught where it ran (`attempt`), and the other jobs run on. Ctrl-C
is not a job's failure: it stops the run, and workers, which ignore it, are stopped by the
driver at once rather than left to finish their jobs.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Protocol, cast

from bench.core.cpu_math import pin_cpu_math
from bench.core.device import device_kind
from bench.core.errors import ConfigError
from bench.core.quiet import silence_dependencies
from bench.plugin.registry import MECHANISMS
from bench.run.failure import JobFailure as JobFailure  # re-exported: the executors' outcome
from bench.run.job import Job
from bench.run.kinds import run_job_of_kind
from bench.run.kinds.reconstruction import JobOutcome
from bench.run.supervisor import (
    STOP_SIGNAL,
    LimitOf,
    supervised_run,
)

Results = Iterator[tuple[Job, JobOutcome | JobFailure]]
OnStart = Callable[[Job], None]
Feed = Iterable[Job | None]  # the jobs to run; None: none to hand out now, ask again later

WAIT_S = 0.5  # how long an executor starved by its feed waits before asking again
_END = object()


class _Pull:
    """Reads a feed one job at a time, remembering whether it ended (`exhausted`) or the
    last read found nothing to hand out yet (`starved`)."""

    def __init__(self, jobs: Feed) -> None:
        self._jobs = iter(jobs)
        self.exhausted = False
        self.starved = False

    def take(self) -> Job | None:
        """The next job, or None when there is none now (starved) or ever (exhausted)."""
        if self.exhausted:
            return None
        job = next(self._jobs, _END)
        if job is _END:
            self.exhausted, self.starved = True, False
            return None
        self.starved = job is None
        return cast(Job | None, job)


def _ignore(job: Job) -> None:
    """The default `on_start`: nothing to report."""


class Executor(Protocol):
    """Runs the jobs of a feed (a list is one) and yields their outcomes as they complete
    (any order; a JobFailure for a job that raised); `on_start` is told of each job when
    it is handed to a worker. The runner passes `limit_of` (seconds each job may run) only
    when a run has time limits; an executor that cannot enforce them ignores it."""

    def run(
        self, jobs: Feed, cache_root: Path, progress: bool, on_start: OnStart = _ignore
    ) -> Results: ...


PARENT_POLL_S = 1.0


def _watch_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker as soon as the driver that spawned it is gone
    (killed with SIGKILL or SIGTERM, it cannot stop its workers), so no orphan keeps running
    jobs whose results nobody will store."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


_in_job = False  # this worker runs a job now
_stopping = False  # this worker was asked to stop: it runs no more jobs


class _Stopped(BaseException):
    """Ends the job of a worker that the driver stops (Ctrl-C): not a job failure, and
    nobody reads it. A BaseException, so `attempt` lets it through."""


def _on_stop(signum: int, frame: object) -> None:
    """A worker's STOP_SIGNAL handler: end the job it runs, and refuse the next ones."""
    global _stopping
    _stopping = True
    if _in_job:
        raise _Stopped


def _init_worker(parent_pid: int) -> None:
    """Worker set-up: ignore Ctrl-C (the driver alone handles it, and stops the workers; a
    terminal's Ctrl-C reaches every process of its group), stop when the driver asks
    (STOP_SIGNAL), and end with the driver."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(STOP_SIGNAL, _on_stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, STOP_SIGNAL})  # see supervisor
    _watch_parent(parent_pid)


def _interrupted(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt caused `exc` (an error raised while unwinding Ctrl-C)."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def attempt(job: Job, cache_root: Path, progress: bool = False) -> JobOutcome | JobFailure:
    """run_job, with whatever the job raises (a plug-in's bug, a BenchError such as a
    mechanism's NaN output) returned as its JobFailure, so the other jobs run on. Ctrl-C,
    also when it caused the error, still stops the run."""
    silence_dependencies()
    pin_cpu_math()  # in every process that runs a job, before it computes (bench.core.cpu_math)
    try:
        return run_job_of_kind(job, cache_root, progress)
    except (Exception, SystemExit) as exc:  # SystemExit: a plug-in calling sys.exit()
        if _interrupted(exc):
            raise KeyboardInterrupt from exc
        return JobFailure.of(exc)


def _run_in_worker(job: Job, cache_root: str) -> JobOutcome | JobFailure:
    """Worker entry point (run_job pins the job's own thread count); in a worker the
    driver asked to stop, the job ends at once (_on_stop)."""
    global _in_job
    _in_job = True
    try:
        if _stopping:
            raise _Stopped
        return attempt(job, Path(cache_root))
    finally:
        _in_job = False


class LocalExecutor:
    """Supervised worker processes on this machine (bench.run.supervisor): `workers` of them,
    one at --jobs 1 too, so a job that kills, forks or hangs its process fails alone."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def run(
        self,
        jobs: Feed,
        cache_root: Path,
        progress: bool,
        on_start: OnStart = _ignore,
        limit_of: LimitOf | None = None,
    ) -> Results:
        """Each job of the feed on a free worker, within `limit_of(job)` seconds (no limit
        without it); `progress` is not shown by jobs in workers."""
        yield from supervised_run(
            _Pull(jobs),
            cache_root,
            max(1, self.workers),
            on_start,
            limit_of,
            worker=(_init_worker, _run_in_worker),
            wait_s=WAIT_S,
        )


class InlineExecutor:
    """Jobs in this very process, one at a time, unsupervised: a job that exits, aborts or
    hangs takes the caller with it. For tests and for embedding bench where a job's
    process must be the caller's; `bench run` always uses LocalExecutor."""

    def run(
        self,
        jobs: Feed,
        cache_root: Path,
        progress: bool,
        on_start: OnStart = _ignore,
        limit_of: LimitOf | None = None,
    ) -> Results:
        """One job at a time, each taken from the feed when the last ends (`limit_of` is not
        enforced here)."""
        feed = _Pull(jobs)
        while not feed.exhausted:
            job = feed.take()
            if job is not None:
                on_start(job)
                yield job, attempt(job, cache_root, progress)
            elif feed.starved:
                time.sleep(WAIT_S)


def job_resources(job: Job) -> dict[str, float]:
    """CPUs and GPUs a job asks for: its thread count, and its mechanism's `num_gpus`, at
    least one for a job that runs on CUDA (bench.core.device), so Ray places it on a GPU node."""
    wanted = getattr(MECHANISMS.get(job.mechanism), "resources", None) or {}
    gpus = float(wanted.get("num_gpus", 0))
    if device_kind(job.device) == "cuda":
        gpus = max(gpus, 1.0)
    return {"num_cpus": float(job.threads), "num_gpus": gpus}


class RayExecutor:
    """Jobs as Ray tasks. Without `address`, a local Ray instance is started and shut down
    here. Artifacts go to `cache_root`, which must be a path every node can reach (a
    shared filesystem) when the cluster has several machines."""

    def __init__(self, address: str | None = None, max_retries: int = 3) -> None:
        self.address = address
        self.max_retries = max_retries

    def run(
        self,
        jobs: Feed,
        cache_root: Path,
        progress: bool,
        on_start: OnStart = _ignore,
        limit_of: LimitOf | None = None,
    ) -> Results:
        """The feed's jobs as Ray tasks; Ray retries a task whose worker dies (up to
        `max_retries`), and `limit_of` is not enforced (Ray tasks have no time limit)."""
        try:
            import ray
        except ImportError:
            raise ConfigError(
                "the ray executor needs Ray: pip install 'bench-privacy[ray]'"
            ) from None
        started_here = not ray.is_initialized()
        if started_here:
            try:
                ray.init(
                    address=self.address,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                    runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}},
                )
            except ConnectionError as exc:
                raise ConfigError(
                    f"cannot reach the Ray cluster at {self.address}: {exc}"
                ) from None
        try:
            yield from self._submit_and_collect(ray, _Pull(jobs), cache_root, on_start)
        finally:
            if started_here:
                ray.shutdown()

    def _submit_and_collect(self, ray, feed: _Pull, cache_root: Path, on_start: OnStart) -> Results:
        """Submit every job the feed hands out (Ray schedules them on the cluster), collect
        outcomes as they finish; while the feed is starved, ask it again every WAIT_S."""
        remote = ray.remote(_run_in_worker)
        pending = {}
        try:
            while not feed.exhausted or pending:
                while (job := feed.take()) is not None:
                    res = job_resources(job)
                    ref = remote.options(
                        max_retries=self.max_retries, retry_exceptions=False, **res
                    ).remote(job, str(cache_root.resolve()))
                    pending[ref] = job
                    on_start(job)
                if not pending:
                    if feed.starved:
                        time.sleep(WAIT_S)
                    continue
                timeout = WAIT_S if feed.starved else None
                done, _ = ray.wait(list(pending), num_returns=1, timeout=timeout)
                for ref in done:
                    job = pending.pop(ref)
                    yield job, _unwrap(ray, ref)
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)


# Ray errors that are one task's failure, not the cluster's: the task raised outside
# `attempt`, or its worker died (crashed, killed for memory) more often than it is retried.
_RAY_TASK_ERRORS = ("RayTaskError", "WorkerCrashedError", "OutOfMemoryError")


def _unwrap(ray, ref) -> JobOutcome | JobFailure:
    """ray.get; a task that failed (see _RAY_TASK_ERRORS) is its job's JobFailure, with the
    error it raised when Ray has it."""
    task_errors = tuple(
        getattr(ray.exceptions, name) for name in _RAY_TASK_ERRORS if hasattr(ray.exceptions, name)
    )
    try:
        return ray.get(ref)
    except task_errors as exc:
        cause = getattr(exc, "cause", None)
        failure = JobFailure.of(cause if isinstance(cause, Exception) else exc)
        return replace(failure, traceback=str(exc))  # Ray's text holds the remote traceback


def make_executor(name: str, workers: int = 1, address: str | None = None) -> Executor:
    """`local` (with `workers` processes) or `ray` (optionally at `address`)."""
    if name == "local":
        if address is not None:
            raise ConfigError("--address applies to --executor ray only")
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address)
    raise ConfigError(f"unknown executor '{name}'; choose local or ray")
