"""Point labels that never overlap: each label takes the first free spot around its point.

Sweep plots put several privacy levels of one mechanism close together (eps 5 and eps 10
of a variant a few pixels apart); labels drawn at one fixed offset then print over each
other. Here each label tries a ring of offsets around its point and keeps the first whose
box overlaps no label already placed and stays inside the axes; a label with no free spot
is left out rather than drawn over another (the point keeps its marker and CI).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Offsets in points from the data point, in the order they are tried.
CANDIDATE_OFFSETS: tuple[tuple[float, float], ...] = (
    (4, 4),
    (4, -10),
    (-4, 4),
    (-4, -10),
    (4, 14),
    (4, -20),
    (-4, 14),
    (-4, -20),
    (12, -3),
    (-12, -3),
)


def place_labels(
    ax: Any, items: Sequence[tuple[str, float, float, str]], **text_kw: Any
) -> list[Any]:
    """Annotate `items` (text, x, y in data coordinates, colour) on `ax` without overlaps;
    returns the annotations drawn, in the order of `items` (skipped labels are missing).
    Call it once the axes' limits and the figure's layout are final: boxes are measured in
    pixels."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    axes_box = ax.get_window_extent(renderer)
    placed: list[Any] = []
    boxes: list[Any] = []
    for text, x, y, colour in items:
        for dx, dy in CANDIDATE_OFFSETS:
            note = ax.annotate(
                text,
                (x, y),
                textcoords="offset points",
                xytext=(dx, dy),
                ha="left" if dx >= 0 else "right",
                color=colour,
                **text_kw,
            )
            box = note.get_window_extent(renderer)
            inside = axes_box.contains(box.x0, box.y0) and axes_box.contains(box.x1, box.y1)
            if inside and not any(box.overlaps(other) for other in boxes):
                placed.append(note)
                boxes.append(box)
                break
            note.remove()
    return placed


def label_boxes(annotations: Sequence[Any]) -> list[Any]:
    """The window boxes of drawn annotations (for checks that no two overlap)."""
    if not annotations:
        return []
    renderer = annotations[0].figure.canvas.get_renderer()
    return [a.get_window_extent(renderer) for a in annotations]
