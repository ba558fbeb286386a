"""The audit's progress as a log shows it (stderr not a terminal): the first estimate waits
for a measured span of drawing, later lines follow from the rate measured so far, a last
line says what was drawn, and the default stream is whatever stderr is when it is built."""

from __future__ import annotations

import io
import sys

import pytest

from bench.certify.audit.progress import MIN_SPAN_S, UPDATE_S, AuditProgress


def _fed(calls: list[tuple[float, int]], total: int) -> list[str]:
    out = io.StringIO()
    times = iter(t for t, _ in calls)
    progress = AuditProgress(out, clock=lambda: next(times), bar=False)
    for _, done in calls:
        progress(done, total)
    progress.close()
    return out.getvalue().splitlines()


def test_batches_finishing_together_give_no_estimate_until_a_span_is_timed() -> None:
    # Two workers: the first two batches land 1 ms apart; a rate from them would be 100x
    # too fast. The estimate waits for MIN_SPAN_S of drawing.
    lines = _fed([(0.0, 1_000), (0.001, 2_000), (0.5, 3_000), (MIN_SPAN_S, 5_000)], 100_000)
    assert lines == [
        "audit: 100,000 releases planned, about 24 s left at 4,000 releases/s "
        "(timed on the first batch)"
    ]


def test_a_log_gets_updated_estimates_and_a_last_line() -> None:
    # 1,000 releases/s, then the drawing slows to 500/s: the later line says so.
    calls = [(0.0, 0), (2.0, 2_000), (10.0, 10_000)]
    calls += [(10.0 + UPDATE_S, 10_000 + 15_000), (70.0, 40_000)]
    lines = _fed(calls, 40_000)
    assert lines[0].startswith("audit: 40,000 releases planned, about 38 s left at 1,000")
    rate = 25_000 / (10.0 + UPDATE_S)
    assert lines[1] == (
        f"audit: 25,000 of 40,000 releases drawn, about {round(15_000 / rate)} s left at "
        f"{rate:,.0f} releases/s"
    )
    assert lines[2] == "audit: 40,000 releases drawn in 70 s at 571 releases/s"
    assert len(lines) == 3


def test_the_default_stream_is_stderr_when_built(capsys: pytest.CaptureFixture[str]) -> None:
    progress = AuditProgress(clock=iter([0.0, 2.0]).__next__)
    progress(100, 300)
    progress(200, 300)
    assert "audit: 300 releases planned" in capsys.readouterr().err
    assert progress._stream is sys.stderr
