"""Plot labels never overlap, whatever the points' crowding, and the log axes of the
privacy-utility scatter always carry tick labels."""

from __future__ import annotations

import itertools

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bench.report.board.label_layout import label_boxes, place_labels
from bench.report.board.plots import label_log_axis


def _axes(xs: list[float], ys: list[float]):
    fig = Figure(figsize=(6.5, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    ax.plot(xs, ys, "o")
    fig.tight_layout()
    return fig, ax


def test_crowded_labels_are_placed_without_overlap() -> None:
    # Twelve settings within a few pixels of each other (eps 1..10 of two variants).
    xs = [0.20 + 0.002 * i for i in range(12)]
    ys = [0.30 + 0.001 * (i % 4) for i in range(12)]
    _, ax = _axes([0.0, 1.0], [0.0, 1.0])
    items = [(f"eps={i}", x, y, "C0") for i, (x, y) in enumerate(zip(xs, ys, strict=True))]
    drawn = place_labels(ax, items, fontsize=7)
    boxes = label_boxes(drawn)
    assert len(drawn) >= 4  # the ring of offsets finds room for several
    assert not any(a.overlaps(b) for a, b in itertools.combinations(boxes, 2))
    # The old fixed offset put every label on top of its neighbours'.
    fixed = [
        ax.annotate(t, (x, y), textcoords="offset points", xytext=(4, 4)) for t, x, y, _ in items
    ]
    assert any(a.overlaps(b) for a, b in itertools.combinations(label_boxes(fixed), 2))


def test_spread_out_labels_are_all_drawn() -> None:
    _, ax = _axes([0.0, 1.0], [0.0, 1.0])
    items = [(f"p{i}", 0.1 + 0.2 * i, 0.1 + 0.2 * i, "k") for i in range(4)]
    assert [a.get_text() for a in place_labels(ax, items)] == ["p0", "p1", "p2", "p3"]


def test_a_log_axis_inside_one_decade_has_tick_labels() -> None:
    fig, ax = _axes([0.031, 0.045, 0.052], [0.5, 0.6, 0.7])
    ax.set_xscale("log")
    label_log_axis(ax.xaxis, [0.031, 0.045, 0.052])
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    labels = [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi]
    assert [text for text in labels if text], "no labelled tick inside the axis range"
