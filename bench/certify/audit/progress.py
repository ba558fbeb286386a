"""What `bench validate` shows while its privacy audit draws: a progress bar on stderr (when
it is a terminal) and, once the first batch of releases is timed, one line estimating how
long the audit's draws take. Display only: the audit's numbers never depend on it."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm


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
    releases drawn so far of those planned. The time between its first two calls, one
    batch of releases, gives the rate the estimate extrapolates."""

    def __init__(
        self,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.perf_counter,
        bar: bool | None = None,
    ) -> None:
        stream = sys.stderr if stream is None else stream  # the stderr of now, not of import
        self._stream = stream
        self._clock = clock
        self._show_bar = stream.isatty() if bar is None else bar
        self._bar: tqdm | None = None
        self._first: tuple[float, int] | None = None  # (time, releases) at the first call
        self.estimate: str | None = None  # the line written, once the first batch is timed

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
            self._bar.update(done - self._bar.n)
        start, first_done = self._first
        if self.estimate is None and now > start and done > first_done:
            rate = (done - first_done) / (now - start)
            self.estimate = (
                f"audit: {total:,} releases planned, about {duration((total - done) / rate)} "
                f"left at {rate:,.0f} releases/s (timed on the first batch)"
            )
            self._write(self.estimate)

    def _write(self, line: str) -> None:
        if self._bar is not None:
            self._bar.write(line, file=self._stream)
        else:
            print(line, file=self._stream, flush=True)

    def close(self) -> None:
        """Remove the bar (the estimate line stays)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
