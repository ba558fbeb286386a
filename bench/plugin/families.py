"""What a mechanism family adds to a board, declared by the family and looked up here: the
plots of its papers' own sweeps (`BoardPlot`). A family fills this registry when its package
is imported (its hooks module); the report loads the families of a board's mechanisms first
(`load_families`) and names no family itself. A family's own privacy notion (and with it
the parameter that states its level, e.g. 1/dFIL) is declared in bench.plugin.notions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.plugin.registry import MECHANISMS

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class BoardPlot:
    """plots/<task>_<suffix>.png for each task whose rows `draw` finds a sweep in; `draw`
    gets every row of the board and returns the paths it wrote (none without a sweep)."""

    suffix: str
    caption: str
    draw: Callable[[Rows, Path], list[Path]]


_PLOTS: dict[str, dict[str, BoardPlot]] = {}


def register_board_plot(mechanisms: Iterable[str], plot: BoardPlot) -> None:
    """Draw `plot` on every board with a row of one of `mechanisms` (registered names)."""
    for name in mechanisms:
        _PLOTS.setdefault(name, {})[plot.suffix] = plot


def load_families(mechanisms: Iterable[str]) -> None:
    """Import the class of each named mechanism, so its family has registered what it adds;
    a name no longer registered (an old board's row) adds nothing."""
    for name in sorted(set(mechanisms)):
        try:
            MECHANISMS.get(name)
        except BenchError:
            continue


def board_plots(mechanisms: Iterable[str]) -> list[BoardPlot]:
    """The plots registered for any of `mechanisms`, each once, in suffix order."""
    names = set(mechanisms)
    load_families(names)
    found: dict[str, BoardPlot] = {}
    for name in sorted(names):
        found.update(_PLOTS.get(name, {}))
    return [found[suffix] for suffix in sorted(found)]


def write_board_plots(rows: Rows, out_dir: Path) -> list[Path]:
    """Draw every family plot of the rows' mechanisms under `out_dir`; the paths written."""
    written: list[Path] = []
    for plot in board_plots(row["mechanism"] for row in rows):
        written += plot.draw(rows, out_dir)
    return written
