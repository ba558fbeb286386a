"""A run's progress, wherever its output goes: a bar in a terminal, lines elsewhere.

In a terminal (rich's own test: a TTY, or FORCE_TERMINAL) one bar: jobs done of jobs to run,
time elapsed, the ETA and the oldest job still running. Piped to a file or a CI log, where a
bar would show nothing until the end, one line per finished job, and a line naming what
runs whenever `interval_s` (10 s) pass without one, so a log never goes quiet for longer.

The ETA is there from the first job on: each job's time is seeded from the committed boards
(bench.report.tools.estimate: a row of the same setting on the same data, else the mean of
its kind), and every finished job corrects the seeds of its stage by the ratio of measured
to seeded time so far (`Eta`). The work left is divided by the workers.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import IO, Any

from bench.report.tools.estimate import Seed
from bench.run.job import Job, job_kind

INTERVAL_S = 10.0  # longest quiet spell of a piped run's output
RATIO_BOUNDS = (0.1, 10.0)  # how far measured job times may move the boards' seeds
PRIOR_S = 10.0  # seeded seconds that count as agreeing with the boards before any job ends


def job_label(job: Job) -> str:
    """task / mechanism / attack / seed: what the progress shows for a job."""
    return " / ".join((*job_kind(job), f"seed {job.seed}"))


def clock(seconds: float) -> str:
    """1:05, 1:02:03."""
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Eta:
    """Seconds left of a run, from seeded job times corrected by measured ones.

    A job's seed (bench.report.tools.estimate.Seed) is its own time and the time of an
    artifact it shares with other jobs of its seed (its group): the first job of the group
    to start is expected to spend it, and before one has started each is expected to spend
    its share. A job's expected time is its seed times the measured-to-seeded ratio of the
    finished jobs of its stage (utility, or its attack), drawn toward the run's ratio (a
    stage with few finished jobs says little), the run's drawn toward 1 (PRIOR_S of seeded
    time count as agreeing with the boards). A job no board times expects the finished
    jobs' mean. A running job expects what is left of its time, and a quarter of what it
    has run once it runs over: a long job pushes the ETA up while it runs. (Replayed on the
    job times of three smoke runs on a loaded machine, this ETA was off the time left by 15
    to 30% on average; drawing the stages toward the geometric mean of their rates instead,
    by 50 to 90%.)
    """

    def __init__(
        self,
        jobs: list[Job],
        seeds: dict[str, Seed],
        workers: int,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self.now = now
        self.workers = max(1, workers)
        self.seeds = {job.hash: seeds[job.hash] for job in jobs if job.hash in seeds}
        self.stage = {job.hash: job.attack or "utility" for job in jobs}
        self.left = {job.hash for job in jobs}  # not finished
        self.running: dict[str, float] = {}  # hash -> when it started
        self.builder: dict[str, str] = {}  # group -> the job that started first in it
        self.members: dict[str, set[str]] = {}  # group -> its jobs not finished
        for job_hash, seed in self.seeds.items():
            if seed.group is not None:
                self.members.setdefault(seed.group, set()).add(job_hash)
        self.seeded: dict[str, float] = {}  # per stage: seeded time of its finished jobs
        self.spent: dict[str, float] = {}  # per stage: their measured time
        self.measured: list[float] = []  # every finished job's measured time

    def _seeded(self, job_hash: str) -> float | None:
        """The job's seeded time: its own, and the shared part unless another job of its
        group started before it."""
        seed = self.seeds.get(job_hash)
        if seed is None:
            return None
        if seed.group is None:
            return seed.own + seed.shared
        builder = self.builder.get(seed.group)
        if builder is None:
            return seed.own + seed.shared / max(1, len(self.members.get(seed.group, ())))
        return seed.own + (seed.shared if builder == job_hash else 0.0)

    def started(self, job: Job) -> None:
        self.running.setdefault(job.hash, self.now())
        seed = self.seeds.get(job.hash)
        if seed is not None and seed.group is not None:
            self.builder.setdefault(seed.group, job.hash)

    def finished(self, job: Job, seconds: float | None) -> None:
        """A job ended (stored or failed); `seconds` its measured time (else its time here)."""
        start = self.running.pop(job.hash, None)
        self.left.discard(job.hash)
        if seconds is None and start is not None:
            seconds = self.now() - start
        if seconds is None:
            return
        self.measured.append(seconds)
        seeded = self._seeded(job.hash)
        group = self.seeds[job.hash].group if job.hash in self.seeds else None
        if group is not None:
            self.members.get(group, set()).discard(job.hash)
        if seeded is not None:
            stage = self.stage.get(job.hash, "utility")
            self.seeded[stage] = self.seeded.get(stage, 0.0) + seeded
            self.spent[stage] = self.spent.get(stage, 0.0) + seconds

    def dropped(self, n: int) -> None:
        """`n` jobs that will not run here (stored by another runner): taken from those not
        started, the ones the store hands to no one else."""
        idle = sorted(self.left - set(self.running), key=lambda h: self._seeded(h) or 0.0)
        for job_hash in idle[:n]:
            self.left.discard(job_hash)

    def ratio(self, stage: str | None = None) -> float:
        """Measured over seeded time so far, of one stage drawn toward the run's, or (None)
        of the run, drawn toward 1 (the boards)."""
        spent, seeded = sum(self.spent.values()), sum(self.seeded.values())
        run = _bounded((spent + PRIOR_S) / (seeded + PRIOR_S))
        if stage is None:
            return run
        spent, seeded = self.spent.get(stage, 0.0), self.seeded.get(stage, 0.0)
        return _bounded((spent + PRIOR_S * run) / (seeded + PRIOR_S))

    def _default(self) -> float | None:
        """The time of a job no board times: the mean measured so far, else the mean seed."""
        if self.measured:
            return sum(self.measured) / len(self.measured)
        if self.seeds:
            return _mean(s.total for s in self.seeds.values()) * self.ratio()
        return None

    def remaining(self) -> float | None:
        """Seconds until every job is done, or None while there is nothing to go on."""
        if not self.left:
            return 0.0
        default, now = self._default(), self.now()
        ratios = {stage: self.ratio(stage) for stage in set(self.stage.values())}
        work = 0.0
        for job_hash in self.left:
            seeded = self._seeded(job_hash)
            expected = seeded * ratios[self.stage[job_hash]] if seeded is not None else default
            if expected is None:
                return None
            if job_hash in self.running:
                ran = now - self.running[job_hash]
                expected = max(expected - ran, ran / 4)
            work += expected
        return work / min(self.workers, len(self.left))


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items)


def _bounded(ratio: float) -> float:
    low, high = RATIO_BOUNDS
    return min(high, max(low, ratio))


def seeded_times(jobs: list[Job]) -> dict[str, Seed]:
    """Each job's seed from the committed boards (bench.report.tools.estimate.job_seeds),
    by hash, its shared part grouped per seed (an artifact is built once for each seed);
    a board that cannot be read seeds nothing."""
    from bench.core.places import boards_root
    from bench.report.tools.estimate import PlannedJob, job_seeds

    try:
        seeds = job_seeds([PlannedJob.of(j) for j in jobs], boards_root().path)
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    of = {job.hash: job for job in jobs}
    return {
        h: replace(s, group=f"{s.group}@{of[h].seed}") if s.group else s for h, s in seeds.items()
    }


class RunProgress:
    """The progress of one run (module docstring); a context manager. `enabled` False
    shows nothing; `terminal` None asks rich whether the output is a terminal."""

    def __init__(
        self,
        jobs: list[Job],
        *,
        enabled: bool = True,
        workers: int = 1,
        stream: IO[str] | None = None,
        terminal: bool | None = None,
        interval_s: float = INTERVAL_S,
        seeds: dict[str, Seed] | None = None,
    ) -> None:
        self.total = len(jobs)
        self.enabled = enabled
        self.interval_s = interval_s
        self.stream = stream
        self.done = 0
        self.status = "starting"  # what the display says runs
        self.running: dict[str, Job] = {}  # started and not finished, in start order
        if seeds is None:
            seeds = seeded_times(jobs) if enabled else {}
        self.eta = Eta(jobs, seeds, workers)
        self.started_at = time.monotonic()
        self._lock = threading.Lock()
        self._last_line = time.monotonic()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._bar: Any = None
        self._task: Any = None
        self._terminal = terminal

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> RunProgress:
        if not self.enabled:
            return self
        from rich.console import Console

        console = Console(file=self.stream) if self.stream is not None else Console()
        terminal = console.is_terminal if self._terminal is None else self._terminal
        if terminal:
            self._start_bar(console)
        else:
            first = f"{self.total} jobs to run, {self._first_estimate()}"
            self._line(first, head=False)
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.stop()

    def _start_bar(self, console: Any) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            ProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.text import Text

        eta_text = self._eta_text

        class EtaColumn(ProgressColumn):
            """The ETA of `Eta` (seeded from the boards), not rich's rate of completions."""

            def render(self, task: Any) -> Text:
                return Text(f"eta {eta_text()}", style="progress.remaining")

        self._bar = Progress(
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            EtaColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=False,
        )
        self._bar.start()
        self._task = self._bar.add_task(self.status, total=self.total)

    # -------------------------------------------------------------------- events

    def started(self, job: Job) -> None:
        with self._lock:
            self.running[job.hash] = job
            self.eta.started(job)
            self._describe()

    def finished(self, job: Job, ok: bool, seconds: float | None = None) -> None:
        """A job of this run ended: stored (`ok`) or failed; `seconds` its measured time."""
        with self._lock:
            self.running.pop(job.hash, None)
            self.eta.finished(job, seconds)
            self.done += 1
            self._describe()
            took = f" in {seconds:.1f} s" if seconds is not None else ""
            self._advance(f"{'done' if ok else 'failed'} {job_label(job)}{took}")

    def stored_elsewhere(self, n: int) -> None:
        """`n` jobs another runner stored: counted done, not run here."""
        with self._lock:
            self.eta.dropped(n)
            self.done += n
            self._advance(f"{n} jobs stored by another runner", n)

    def waiting(self, n: int) -> None:
        with self._lock:
            if not self.running:
                self.status = f"waiting for {n} jobs of other runners"
                self._refresh()

    # ------------------------------------------------------------------- display

    def _describe(self) -> None:
        oldest = next(iter(self.running.values()), None)
        self.status = job_label(oldest) if oldest is not None else "done"
        self._refresh()

    def _refresh(self) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=self.status)

    def _advance(self, what: str, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.update(self._task, advance=n, description=self.status)
        elif self.enabled:
            self._line(what)

    def _first_estimate(self) -> str:
        """The opening line's estimate: from committed timings, or said to be unknown (a
        plug-in's jobs, or kinds no committed board has timed) until a job finishes."""
        if self.eta.remaining() is None:
            return "eta unknown until the first job finishes (no committed timing for them)"
        return f"eta {self._eta_text()} (from committed boards)"

    def _eta_text(self) -> str:
        left = self.eta.remaining()
        return "?" if left is None else clock(left)

    def _head(self) -> str:
        width = len(str(self.total))
        elapsed = clock(time.monotonic() - self.started_at)
        return f"[{self.done:>{width}}/{self.total}] {elapsed} elapsed, eta {self._eta_text()}"

    def _line(self, what: str, head: bool = True) -> None:
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(f"{self._head()}: {what}\n" if head else f"{what}\n")
        stream.flush()
        self._last_line = time.monotonic()

    def _tick(self) -> None:
        """Piped output: a line whenever `interval_s` pass without one."""
        while True:
            with self._lock:
                wait = self._last_line + self.interval_s - time.monotonic()
            if self._stop.wait(max(wait, 0.0)):
                return
            with self._lock:
                if time.monotonic() - self._last_line >= self.interval_s:
                    more = len(self.running) - 1
                    tail = f" (+{more} more)" if more > 0 else ""
                    self._line(f"running {self.status}{tail}" if self.running else self.status)
