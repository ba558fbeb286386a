"""Local Lipschitz constant against the ARL weight (Posthoc paper, Fig. 3): one PNG per task
whose posthoc-ptr utility rows sweep `alpha`, grouped bars per alpha, one bar per radius R.

Reads leaderboard rows only: a utility row's `local_lipschitz` (the mean certified constant
L(f, N(z, R)) over the calibration embeddings, with its CI), as mechanisms.posthoc reports it.
"""

from __future__ import annotations

import io
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.fsutil import atomic_write
from bench.hashing import canonical_json
from bench.report.labels import _safe_name

METRIC = "local_lipschitz"
SWEEP = "alpha"
RADIUS = "R"
SUFFIX = "lipschitz_vs_alpha"

PanelKey = str  # canonical JSON of the parameters other than alpha and R


def _is_sweep_row(row: dict[str, Any]) -> bool:
    params = row.get("params") or {}
    return (
        row.get("attack") is None
        and SWEEP in params
        and RADIUS in params
        and METRIC in row.get("metrics", {})
    )


def _panels(rows: list[dict[str, Any]]) -> dict[str, dict[PanelKey, list[dict[str, Any]]]]:
    """task -> (parameters other than alpha and R) -> its rows, for sweeps over >= 2 alphas."""
    out: dict[str, dict[PanelKey, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        if _is_sweep_row(row):
            fixed = {k: v for k, v in row["params"].items() if k not in (SWEEP, RADIUS)}
            out[row["task"]][canonical_json(fixed)].append(row)
    return {
        task: {key: group for key, group in panels.items() if _distinct(group, SWEEP) >= 2}
        for task, panels in out.items()
        if any(_distinct(group, SWEEP) >= 2 for group in panels.values())
    }


def _distinct(rows: list[dict[str, Any]], key: str) -> int:
    return len({float(r["params"][key]) for r in rows})


def _title(key: PanelKey, keys: list[PanelKey]) -> str:
    """The parameters that tell the panels apart (none when there is one panel)."""
    others = [json.loads(k) for k in keys]
    mine = json.loads(key)
    varying = {k: v for k, v in mine.items() if any(p.get(k) != v for p in others)}
    return ", ".join(f"{k}={v}" for k, v in sorted(varying.items())) or "posthoc-ptr"


def _draw_panel(ax: Any, title: str, rows: list[dict[str, Any]]) -> None:
    alphas = sorted({float(r["params"][SWEEP]) for r in rows})
    radii = sorted({float(r["params"][RADIUS]) for r in rows})
    by_point = {(float(r["params"][SWEEP]), float(r["params"][RADIUS])): r for r in rows}
    width = 0.8 / len(radii)
    for j, radius in enumerate(radii):
        xs, ys, lo, hi = [], [], [], []
        for i, alpha in enumerate(alphas):
            row = by_point.get((alpha, radius))
            if row is None:
                continue
            m = row["metrics"][METRIC]
            xs.append(i - 0.4 + width * (j + 0.5))
            ys.append(float(m["value"]))
            lo.append(float(m["value"]) - float(m["ci"][0]))
            hi.append(float(m["ci"][1]) - float(m["value"]))
        ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, label=f"R = {radius:g}")
    ax.set_xticks(range(len(alphas)), [f"{a:g}" for a in alphas])
    ax.set_xlabel("ARL weight alpha")
    ax.set_ylabel("mean local Lipschitz constant (l_inf -> l_1)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, title="radius", title_fontsize=7)


def lipschitz_vs_alpha_png(task: str, panels: dict[PanelKey, list[dict[str, Any]]]) -> bytes:
    """One figure: per panel, grouped bars of the mean certified constant (95% CI) by alpha."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    keys = sorted(panels)
    cols = min(2, len(keys))
    n_rows = math.ceil(len(keys) / cols)
    fig = Figure(figsize=(6.0 * cols, 4.0 * n_rows), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, cols, squeeze=False)
    for ax, key in zip(axes.flat, keys, strict=False):
        _draw_panel(ax, _title(key, keys), panels[key])
    for ax in list(axes.flat)[len(keys) :]:
        ax.set_visible(False)
    fig.suptitle(f"{task}: local Lipschitz constant vs ARL weight (Posthoc Fig. 3)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def write_posthoc_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write plots/<task>_lipschitz_vs_alpha.png under `out_dir` for every task whose rows
    sweep the ARL weight; returns the paths written (none without such a sweep)."""
    written = []
    for task, panels in sorted(_panels(rows).items()):
        path = Path(out_dir) / "plots" / f"{_safe_name(task)}_{SUFFIX}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lipschitz_vs_alpha_png(task, panels))
        written.append(path)
    return written
