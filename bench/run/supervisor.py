"""Supervised worker processes: where the local executor runs every job, at --jobs 1 too.

The driver (the `bench run` process, which alone writes the store) never runs a job's code
itself. Each worker is a spawned interpreter that leads its own process group and takes one
job at a time over a pipe; it stays up for the next job, so a run pays its start-up (the
torch import) once per worker, not once per job. The driver watches every busy worker:

- a worker that exits while it runs a job (a crash in native code, os.abort, os._exit, the
  out-of-memory killer, a fork whose parent exits) makes that job a `WorkerDied` failure;
- a job still running at its time limit (bench.run.timeouts) is killed with its worker and
  is a `TimedOut` failure;
- either way the worker's whole process group is killed (what the job forked goes with it)
  and the next job gets a fresh worker; the lease of the failed job is released by the
  runner, and the run goes on.

A worker ends with os._exit once the driver is done with it, so a thread a plug-in left
running cannot keep it (or bench) alive, and its process group is killed then too. Ctrl-C
reaches the driver alone (the workers are in other process groups and ignore it anyway):
the driver asks each busy worker to stop (STOP_SIGNAL ends its job where it is) and kills
one that is still running after STOP_GRACE_S.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager, suppress
from multiprocessing.connection import Connection, wait
from multiprocessing.context import BaseContext
from pathlib import Path
from typing import Any, Protocol

from bench.run.failure import JobFailure
from bench.run.job import Job

LimitOf = Callable[[Job], float]  # seconds a job may run (bench.run.timeouts)
# What a worker process runs: its set-up (given the driver's pid) and each job's attempt
# (bench.run.executors._init_worker, _run_in_worker), passed by reference so that this module
# does not import the executors that use it.
WorkerCode = tuple[Callable[[int], None], Callable[[Job, str], object]]
STOP_SIGNAL = signal.SIGUSR1  # the driver's request to a worker: stop its job
STOP_GRACE_S = 5.0  # then a worker still running is killed
_WORKER_SIGNALS = {signal.SIGINT, STOP_SIGNAL}


class Feed(Protocol):
    """The jobs to hand out (bench.run.executors._Pull): the next one, None when there is
    none now (`starved`: other runners hold the rest) or ever (`exhausted`)."""

    exhausted: bool
    starved: bool

    def take(self) -> Job | None: ...


@contextmanager
def worker_signals_blocked() -> Iterator[None]:
    """Block Ctrl-C and STOP_SIGNAL in this thread while workers may be spawned: a worker
    inherits the mask, so neither can end it while it starts, before its set-up handles
    them (a STOP_SIGNAL sent meanwhile waits for it). The driver's own Ctrl-C is not lost:
    it is delivered on leaving the block."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _WORKER_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def quiet_resource_tracker() -> None:
    """A worker that died may leave semaphores to multiprocessing's resource tracker, which
    unlinks them and warns about each on stderr at exit: chatter about a death the run
    already reports as that job's failure. The tracker process takes its warning filters
    from this interpreter's -W options, read when it starts."""
    quiet = "ignore::UserWarning:multiprocessing.resource_tracker"
    if quiet not in sys.warnoptions:
        sys.warnoptions.append(quiet)


WATCH_S = 0.5  # how often the driver checks that its busy workers are still alive
REAP_S = 5.0  # how long a retired worker gets to exit before its process group is killed
# How long a new worker may take to start (a fresh interpreter importing torch) before it
# counts as dead: its job's own time limit only starts once the worker has taken the job.
START_LIMIT_S = 600.0
STARTED = "started"  # what a worker says when it takes a job, before running it


def _serve(conn: Connection, parent_pid: int, code: WorkerCode) -> None:
    """A worker's main: lead a process group of its own, set up (`code`), then run each job
    the driver sends and send back (sequence, pid, outcome) until told to stop (None) or
    the pipe closes; end with os._exit, whatever threads the jobs left running."""
    with suppress(OSError):
        os.setpgid(0, 0)
    set_up, run_one = code
    set_up(parent_pid)
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                break
            if message is None:
                break
            sequence, job, cache_root = message
            conn.send((sequence, os.getpid(), STARTED))
            _reply(conn, sequence, run_one(job, cache_root))
    except BaseException:  # stopped (STOP_SIGNAL) or the driver is gone
        pass
    _leave()


def _reply(conn: Connection, sequence: int, outcome: object) -> None:
    """Send a job's outcome to the driver; one that cannot be pickled is sent as that job's
    failure instead (pickling happens before any byte is written, so the pipe stays whole)."""
    try:
        conn.send((sequence, os.getpid(), outcome))
    except (OSError, EOFError):
        raise
    except Exception as exc:  # a plug-in's metric value that pickle refuses
        failure = JobFailure.of(exc)
        message = f"the job's outcome cannot be sent to the driver: {failure.message}"
        conn.send((sequence, os.getpid(), JobFailure(failure.error, message, failure.traceback)))


def _leave() -> None:
    """End this worker now: flush what it printed, skip waiting for non-daemon threads."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
    os._exit(0)


def _reap(process: Any, timeout: float) -> None:
    """Wait up to `timeout` for `process` to end, by polling its exit status: its sentinel
    cannot be waited on, since a child it forked may hold that pipe open."""
    deadline = time.monotonic() + timeout
    while process.exitcode is None and time.monotonic() < deadline:
        time.sleep(0.02)


def _kill_group(pid: int) -> None:
    """SIGKILL the process group a worker leads (it and whatever its jobs forked), or the
    worker alone when it had no group of its own yet."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


class Worker:
    """One supervised worker process and the job it runs (None when idle)."""

    def __init__(self, ctx: BaseContext, code: WorkerCode) -> None:
        here, there = ctx.Pipe(duplex=True)
        with worker_signals_blocked():  # no signal ends it as it starts
            self.process = ctx.Process(
                target=_serve, args=(there, os.getpid(), code), name="bench-worker"
            )
            self.process.start()
        there.close()
        self.conn = here
        self.job: Job | None = None
        self.limit = math.inf
        self.deadline = math.inf
        self._sequence = 0
        self._started = False

    @property
    def pid(self) -> int:
        return int(self.process.pid or 0)

    def start(self, job: Job, cache_root: Path, limit: float) -> None:
        """Hand `job` to this idle worker, to be done within `limit` seconds of the worker
        taking it (a new worker first gets START_LIMIT_S to start)."""
        self._sequence += 1
        self.job, self.limit = job, limit
        self.deadline = time.monotonic() + START_LIMIT_S
        self._started = False
        self.conn.send((self._sequence, job, str(cache_root)))

    def outcome(self) -> object | None:
        """The running job's outcome once it is known, else None: what the worker sent, or
        the failure its death or its time limit makes of the job (the worker is then
        killed). A message that is not this worker's own reply (a forked copy of it wrote
        to the pipe) is dropped."""
        try:
            while self.conn.poll():
                sequence, pid, outcome = self.conn.recv()
                if sequence != self._sequence or pid != self.pid:
                    continue
                if outcome != STARTED:
                    return self._done(outcome)
                self._started = True
                self.deadline = time.monotonic() + self.limit
        except Exception as exc:  # its pipe closed, or an unpickling error of any kind
            return self._done(self._broken(exc))
        if not self.process.is_alive():
            return self._done(self._died())
        if time.monotonic() >= self.deadline:
            self.kill()
            return self._done(self._timed_out() if self._started else self._never_started())
        return None

    def _done(self, outcome: object) -> object:
        self.job = None
        self.deadline = math.inf
        return outcome

    def _broken(self, exc: BaseException) -> JobFailure:
        """The failure of a job whose worker's reply could not be read (its pipe closed, or
        garbled by a process the job forked): the worker is killed."""
        self.kill()
        if isinstance(exc, EOFError | OSError):
            return self._died()
        message = (
            f"the reply of the worker process running this job could not be read "
            f"({type(exc).__name__}); the worker was stopped and the other jobs ran on"
        )
        return JobFailure("WorkerDied", message, f"WorkerDied: {message}\n")

    def _died(self) -> JobFailure:
        """The failure of a job whose worker process ended while running it."""
        _reap(self.process, REAP_S)
        self.kill()  # what it forked goes with it
        code = self.process.exitcode
        if code is None:
            how = "died for an unknown reason"
        elif code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        message = (
            f"the worker process running this job {how} (a crash in native code, an abort, "
            "the out-of-memory killer, or the job ended its own process); the other jobs "
            "ran on"
        )
        return JobFailure("WorkerDied", message, f"WorkerDied: {message}\n")

    def _never_started(self) -> JobFailure:
        message = (
            f"the worker process for this job did not start within {START_LIMIT_S:,.0f} s "
            "and was stopped; the other jobs ran on"
        )
        return JobFailure("WorkerDied", message, f"WorkerDied: {message}\n")

    def _timed_out(self) -> JobFailure:
        message = (
            f"the job ran past its time limit of {self.limit:,.0f} s and was stopped; raise "
            "it with --job-timeout SECONDS or the suite's job_timeout key"
        )
        return JobFailure("TimedOut", message, f"TimedOut: {message}\n")

    @property
    def usable(self) -> bool:
        """Whether this worker can take another job (it was not killed and is running)."""
        return self.process.exitcode is None and self.process.is_alive()

    def kill(self) -> None:
        """Kill this worker and its process group now, and reap it."""
        if self.pid:
            _kill_group(self.pid)
        _reap(self.process, REAP_S)
        self.conn.close()

    def stop(self) -> None:
        """Ask a busy worker to end its job (STOP_SIGNAL), as Ctrl-C asks."""
        if self.pid and self.process.is_alive():
            with suppress(ProcessLookupError):
                os.kill(self.pid, STOP_SIGNAL)

    def retire(self) -> None:
        """End an idle worker: tell it to exit, then kill its process group (a child its
        jobs forked, a process it left behind) whether or not it did."""
        if self.process.exitcode is None:
            with suppress(OSError, ValueError):
                self.conn.send(None)
            _reap(self.process, REAP_S)
        self.kill()


def _spawn_context() -> BaseContext:
    """Fresh interpreters (never fork a driver that may hold threads and locks)."""
    quiet_resource_tracker()
    return multiprocessing.get_context("spawn")


def _no_limit(job: Job) -> float:
    return math.inf


def supervised_run(
    feed: Feed,
    cache_root: Path,
    workers: int,
    on_start: Callable[[Job], None],
    limit_of: LimitOf | None,
    *,
    worker: WorkerCode,
    wait_s: float,
) -> Generator[tuple[Job, Any], None, None]:
    """Run the feed's jobs on up to `workers` supervised worker processes running `worker`
    (module docstring), yielding (job, outcome or JobFailure) as each ends. A job is taken
    from the feed only when a worker is free for it; a worker is started only when a job
    needs one and none is idle; while the feed is starved it is asked again every `wait_s`.
    Left early (Ctrl-C, the runner stopped), every worker is stopped."""
    limit_of = limit_of or _no_limit
    ctx = _spawn_context()
    idle: list[Worker] = []
    busy: list[Worker] = []
    try:
        while True:
            while len(busy) < workers and (job := feed.take()) is not None:
                busy.append(_started(idle, ctx, worker, job, cache_root, limit_of(job)))
                on_start(job)
            if not busy:
                if feed.exhausted:
                    return
                time.sleep(wait_s)  # starved: other runners hold the rest
                continue
            _wait_for(busy, wait_s if feed.starved else math.inf)
            for process in list(busy):
                job = process.job
                outcome = process.outcome()
                if outcome is None or job is None:
                    continue
                busy.remove(process)
                if process.usable:
                    idle.append(process)
                yield job, outcome
    finally:
        _stop_all(busy, idle)


def _started(
    idle: list[Worker],
    ctx: BaseContext,
    code: WorkerCode,
    job: Job,
    cache_root: Path,
    limit: float,
) -> Worker:
    """A worker running `job`: an idle one, or a new one when there is none or the idle one
    died while it waited (its pipe is closed: it is reaped and replaced)."""
    if idle:
        process = idle.pop()
        try:
            process.start(job, cache_root, limit)
            return process
        except (OSError, ValueError):
            process.kill()
    process = Worker(ctx, code)
    process.start(job, cache_root, limit)
    return process


def _wait_for(busy: list[Worker], poll_s: float) -> None:
    """Block until a busy worker replies, WATCH_S passes (to check the workers are alive:
    a process its job forked may hold its pipe and its sentinel open), the nearest time
    limit is reached, or `poll_s` passes (the feed is starved: ask it again)."""
    nearest = min(w.deadline for w in busy) - time.monotonic()
    timeout = max(0.0, min(WATCH_S, nearest, poll_s))
    wait([w.conn for w in busy] + [w.process.sentinel for w in busy], timeout=timeout)


def _stop_all(busy: list[Worker], idle: list[Worker]) -> None:
    """Stop every worker: busy ones are asked to end their jobs and killed after
    STOP_GRACE_S, idle ones told to exit; all their process groups are killed."""
    for worker in busy:
        worker.stop()
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in busy:
        _reap(worker.process, max(0.0, deadline - time.monotonic()))
        worker.kill()
    for worker in idle:
        worker.retire()
