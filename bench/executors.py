"""Executors: where jobs run. Each yields (job, outcome) as jobs finish; none writes the
store (the runner, in the driver process, alone does), so a lost or retried worker can
never duplicate or half-write a result.

- `LocalExecutor(1)`: in this process, in order.
- `LocalExecutor(n)`: n spawned worker processes on this machine.
- `RayExecutor(address)`: Ray tasks on a cluster (or a local Ray instance started and
  stopped here); a task whose worker dies is retried by Ray, up to `max_retries` times.

Jobs come from a feed that is read lazily, one job each time an executor can start one, so
the runner can lease each job just before it is handed out. A `None` in the feed means no
job can be handed out now (other runners hold the rest): the executor carries on with the
jobs it has and asks again after `WAIT_S`.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Protocol, cast

from bench.errors import BenchError, ConfigError
from bench.evaluate import JobOutcome, run_job
from bench.jobs import Job
from bench.registry import MECHANISMS

Results = Iterator[tuple[Job, JobOutcome]]
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
    (any order); `on_start` is told of each job when it is handed to a worker."""

    def run(
        self, jobs: Feed, cache_root: Path, progress: bool, on_start: OnStart = _ignore
    ) -> Results: ...


PARENT_POLL_S = 1.0


def _watch_parent(parent_pid: int) -> None:
    """Worker initializer: end this worker as soon as the driver that spawned it is gone
    (killed with SIGKILL or SIGTERM, it cannot stop its pool), so no orphan keeps running
    jobs whose results nobody will store."""
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_POLL_S)
        os._exit(1)

    threading.Thread(target=watch, name="watch-parent", daemon=True).start()


def _run_in_worker(job: Job, cache_root: str) -> JobOutcome:
    """Worker entry point (run_job pins the job's own thread count)."""
    return run_job(job, Path(cache_root))


class LocalExecutor:
    """This process (workers = 1) or a pool of spawned processes on this machine."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = workers

    def run(
        self, jobs: Feed, cache_root: Path, progress: bool, on_start: OnStart = _ignore
    ) -> Results:
        feed = _Pull(jobs)
        if self.workers <= 1:
            yield from self._run_here(feed, cache_root, progress, on_start)
        else:
            yield from self._run_in_pool(feed, cache_root, on_start)

    @staticmethod
    def _run_here(feed: _Pull, cache_root: Path, progress: bool, on_start: OnStart) -> Results:
        """One job at a time in this process, each taken from the feed when the last ends."""
        while not feed.exhausted:
            job = feed.take()
            if job is not None:
                on_start(job)
                yield job, run_job(job, cache_root, progress)
            elif feed.starved:
                time.sleep(WAIT_S)

    def _run_in_pool(self, feed: _Pull, cache_root: Path, on_start: OnStart) -> Results:
        """Spawned workers, each job submitted when a worker is free or about to be (one
        job queued beyond the workers, so none idles between jobs)."""
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(
            self.workers, mp_context=ctx, initializer=_watch_parent, initargs=(os.getpid(),)
        ) as pool:
            pending: dict[Future, Job] = {}
            try:
                while not feed.exhausted or pending:
                    while len(pending) <= self.workers and (job := feed.take()) is not None:
                        fut = pool.submit(_run_in_worker, job, str(cache_root))
                        pending[fut] = job
                        on_start(job)
                    if not pending:
                        if feed.starved:
                            time.sleep(WAIT_S)
                        continue
                    timeout = WAIT_S if feed.starved else None
                    done, _ = wait(pending, timeout=timeout, return_when=FIRST_COMPLETED)
                    for fut in done:
                        yield pending.pop(fut), fut.result()
            finally:
                for fut in pending:
                    fut.cancel()


def job_resources(job: Job) -> dict[str, float]:
    """CPUs and GPUs a job asks for: its thread count and its mechanism's `num_gpus`."""
    wanted = getattr(MECHANISMS.get(job.mechanism), "resources", None) or {}
    return {"num_cpus": float(job.threads), "num_gpus": float(wanted.get("num_gpus", 0))}


class RayExecutor:
    """Jobs as Ray tasks. Without `address`, a local Ray instance is started and shut down
    here. Artifacts go to `cache_root`, which must be a path every node can reach (a
    shared filesystem) when the cluster has several machines."""

    def __init__(self, address: str | None = None, max_retries: int = 3) -> None:
        self.address = address
        self.max_retries = max_retries

    def run(
        self, jobs: Feed, cache_root: Path, progress: bool, on_start: OnStart = _ignore
    ) -> Results:
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


def _unwrap(ray, ref) -> JobOutcome:
    """ray.get, re-raising a job's BenchError as itself (one line, exit 2)."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        if isinstance(exc.cause, BenchError):
            raise exc.cause from None
        raise


def make_executor(name: str, workers: int = 1, address: str | None = None) -> Executor:
    """`local` (with `workers` processes) or `ray` (optionally at `address`)."""
    if name == "local":
        if address is not None:
            raise ConfigError("--address applies to --executor ray only")
        return LocalExecutor(workers)
    if name == "ray":
        return RayExecutor(address)
    raise ConfigError(f"unknown executor '{name}'; choose local or ray")
