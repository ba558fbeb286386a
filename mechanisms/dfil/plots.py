"""Attack MSE against 1/dFIL with the Cramer-Rao and van Trees bounds ("Bounding the
Invertibility of Privacy-Preserving Instance Encoding using Fisher Information", 2023, Figs. 2
and 3): one PNG per task of a leaderboard, one panel per mechanism configuration swept over
`inv_dfil` (e.g. dfil split early / late, with and without optimisations, dp-encoder).

Reads leaderboard rows only (bench.report.board.rows.build_rows or leaderboard.json "rows"): an
attack row's `mse` (with its CI), and its `bound_mse` (Cramer-Rao on `optimization` rows, van
Trees on the others, as bench.certify.fisher.bounds and mechanisms.dfil.mechanism define them).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.labels import WORST_CASE
from bench.report.board.plots import panel_figure, values_and_errors, varying_text, write_task_plots

SWEEP = "inv_dfil"
UNBIASED = "optimization"
MARKERS = "os^Dv<>P"


def _is_sweep_row(row: dict[str, Any]) -> bool:
    attack = row.get("attack")
    return (
        SWEEP in (row.get("params") or {})
        and attack is not None
        and attack != WORST_CASE
        and "mse" in row.get("metrics", {})
    )


PanelKey = tuple[str, str]  # (mechanism, canonical JSON of the parameters other than inv_dfil)


MIN_SWEEP_POINTS = 3  # a curve against 1/dFIL needs at least this many levels to show a trend


def _panels(rows: list[dict[str, Any]]) -> dict[str, dict[PanelKey, list[dict[str, Any]]]]:
    """task -> (mechanism, fixed parameters) -> the attack rows of that 1/dFIL sweep; only
    sweeps over at least MIN_SWEEP_POINTS levels (one or two points draw no trend)."""
    out: dict[str, dict[PanelKey, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if not _is_sweep_row(row):
            continue
        fixed = {k: v for k, v in row["params"].items() if k != SWEEP}
        out[row["task"]][(row["mechanism"], canonical_json(fixed))].append(row)
    sweeps = {
        task: {
            key: panel
            for key, panel in panels.items()
            if len({float(r["params"][SWEEP]) for r in panel}) >= MIN_SWEEP_POINTS
        }
        for task, panels in out.items()
    }
    return {task: panels for task, panels in sweeps.items() if panels}


def _title(key: PanelKey, keys: list[PanelKey]) -> str:
    """The mechanism name plus the parameters that differ between the panels."""
    return f"{key[0]} {varying_text(key[1], [fixed for _, fixed in keys])}".strip()


def _bound_curve(rows: list[dict[str, Any]], unbiased: bool) -> list[tuple[float, float]]:
    """(1/dFIL, bound) points from the rows of one bound kind, one per 1/dFIL value."""
    points: dict[float, float] = {}
    for row in rows:
        if (row["attack"] == UNBIASED) != unbiased or "bound_mse" not in row["metrics"]:
            continue
        points.setdefault(float(row["params"][SWEEP]), float(row["metrics"]["bound_mse"]["value"]))
    return sorted(points.items())


def _draw_panel(ax: Any, title: str, rows: list[dict[str, Any]]) -> None:
    by_attack: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_attack[row["attack"]].append(row)
    for i, (attack, attack_rows) in enumerate(sorted(by_attack.items())):
        attack_rows.sort(key=lambda r: float(r["params"][SWEEP]))
        xs = [float(r["params"][SWEEP]) for r in attack_rows]
        ys, yerr = values_and_errors([r["metrics"]["mse"] for r in attack_rows])
        ax.errorbar(
            xs, ys, yerr=yerr, marker=MARKERS[i % len(MARKERS)], ms=5, capsize=2,
            lw=1, label=f"{attack} (MSE)",
        )  # fmt: skip
    for unbiased, style, name in ((True, "--", "Cramer-Rao"), (False, ":", "van Trees")):
        curve = _bound_curve(rows, unbiased)
        if curve:
            xs, ys = zip(*curve, strict=True)
            marker = "_" if len(curve) == 1 else None  # a lone point still shows
            ax.plot(
                xs, ys, style, marker=marker, ms=14, color="k", lw=1.3, zorder=3,
                label=f"{name} bound",
            )  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("1/dFIL")
    ax.set_ylabel("reconstruction MSE per dimension")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def dfil_bounds_png(task: str, panels: dict[PanelKey, list[dict[str, Any]]]) -> bytes:
    """One figure: a log-log panel of attack MSE vs 1/dFIL with both bounds per sweep."""
    keys = sorted(panels)
    return panel_figure(
        f"{task}: attack MSE vs 1/dFIL",
        [(_title(key, keys), panels[key]) for key in keys],
        _draw_panel,
        cols=3,
        panel_size=(4.6, 3.8),
    )


def write_dfil_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write plots/<task>_dfil_bounds.png under `out_dir` for every task with an `inv_dfil`
    sweep among `rows`; returns the paths written (none when no row sweeps 1/dFIL)."""
    return write_task_plots(out_dir, "dfil_bounds", _panels(rows), dfil_bounds_png)
