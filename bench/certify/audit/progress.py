"""What `bench validate` shows while its privacy audit draws: a progress bar on stderr (when
it is a terminal) and estimate lines. Display only: the audit's numbers never depend on it.

The estimate is measured, never assumed: the clock starts when the first batch of releases
is reported (so the time to build pairs and warm up is not taken for the drawing rate),
and the first estimate waits until at least MIN_SPAN_S more of drawing have been timed
(with several workers the first batches finish together, and their gap says nothing about
the rate). Without a bar (stderr a file or a pipe: a log), a new estimate line follows at
least every UPDATE_S from the rate measured so far, and a last line says how many releases
were drawn in how long once all are."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm

MIN_SPAN_S = 1.0  # drawing time measured before the first estimate
UPDATE_S = 30.0  # a log gets an updated estimate at least this often


def duration(seconds: float) -> str:
    """A rough duration for an estimate: "40 s", "3 min 20 s", "2 h 05 min"."""
    s = max(0, round(seconds))
    if s < 90:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class AuditProgress:
    """The audit's `progress` callback (bench.certify.audit.result.Progress): told the
    releases drawn so far of those planned (module docstring for what it writes)."""

    def __init__(
        self,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.perf_counter,
        bar: bool | None = None,
    ) -> None:
        self._stream = sys.stderr if stream is None else stream  # at call time: may be swapped
        self._clock = clock
        self._show_bar = self._stream.isatty() if bar is None else bar
        self._bar: tqdm | None = None
        self._first: tuple[float, int] | None = None  # (time, releases) at the first call
        self._last_line = 0.0  # when the last estimate was written
        self._finished = False
        self.estimate: str | None = None  # the first estimate line, once it is measured

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if self._first is None:
            self._first = (now, done)
            if self._show_bar:
                self._bar = tqdm(
                    total=total,
                    initial=done,
                    desc="audit",
                    unit=" releases",
                    unit_scale=True,
                    file=self._stream,
                    leave=False,
                    dynamic_ncols=True,
                )
            return
        if self._bar is not None:
            if self._bar.total != total:
                self._bar.total = total
            self._bar.update(done - self._bar.n)
        start, first_done = self._first
        span = now - start
        if span < MIN_SPAN_S or done <= first_done:
            return
        rate = (done - first_done) / span
        if self.estimate is None:
            self.estimate = (
                f"audit: {total:,} releases planned, about {duration((total - done) / rate)} "
                f"left at {rate:,.0f} releases/s (timed on the first batch)"
            )
            self._wrote(self.estimate, now)
        elif done >= total and not self._finished:
            self._finished = True
            self._wrote(
                f"audit: {done:,} releases drawn in {duration(span)} at {rate:,.0f} releases/s", now
            )
        elif self._bar is None and now - self._last_line >= UPDATE_S and done < total:
            self._wrote(
                f"audit: {done:,} of {total:,} releases drawn, about "
                f"{duration((total - done) / rate)} left at {rate:,.0f} releases/s",
                now,
            )

    def _wrote(self, line: str, now: float) -> None:
        self._last_line = now
        if self._bar is not None:
            self._bar.write(line, file=self._stream)
        else:
            print(line, file=self._stream, flush=True)

    def close(self) -> None:
        """Remove the bar (the estimate lines stay)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
