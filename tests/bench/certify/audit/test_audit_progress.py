"""`bench validate`'s audit progress: the estimate extrapolates the first batch's rate to
the releases planned, on stderr, and a bar is drawn only on a terminal."""

from __future__ import annotations

import io

from bench.certify.audit.progress import AuditProgress, duration


def test_the_estimate_comes_from_the_first_timed_batch() -> None:
    times = iter([10.0, 11.0, 12.0, 13.0])
    out = io.StringIO()
    progress = AuditProgress(out, clock=lambda: next(times), bar=False)
    progress(4_096, 100_000)  # the first batch drawn: the clock starts
    assert out.getvalue() == ""
    progress(8_192, 100_000)  # one more batch in 1 s: 4,096 releases/s, 91,808 left
    progress(12_288, 100_000)
    progress.close()
    assert out.getvalue() == (
        "audit: 100,000 releases planned, about 22 s left at 4,096 releases/s "
        "(timed on the first batch)\n"
    )


def test_durations_read_at_a_glance() -> None:
    assert [duration(s) for s in (0.4, 41, 89.4, 200, 7_500)] == [
        "0 s",
        "41 s",
        "89 s",
        "3 min 20 s",
        "2 h 05 min",
    ]


def test_a_bar_on_a_terminal_is_removed_when_done() -> None:
    out = io.StringIO()
    progress = AuditProgress(out, clock=iter([0.0, 2.0]).__next__, bar=True)
    progress(1_000, 4_000)
    progress(2_000, 4_000)
    progress.close()
    text = out.getvalue()
    assert "audit:  50%" in text  # the bar, redrawn in place
    assert (
        "\naudit: 4,000 releases planned, about 4 s left at 500 releases/s"
        in "\n" + text.split("\r")[3]
    )
    assert text.endswith("\r") and text.rsplit("\r", 2)[-2].strip() == ""  # then cleared
