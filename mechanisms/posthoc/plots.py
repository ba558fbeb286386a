"""The Posthoc paper's two sweeps as plots, one PNG each per task that has the sweep:
- Fig. 3, the local Lipschitz constant against the ARL weight: posthoc-ptr utility rows that
  sweep `alpha`, grouped bars per alpha, one bar per radius R (`local_lipschitz`, the mean
  certified constant L(f, N(z, R)) over the calibration embeddings, as mechanisms.posthoc
  reports it);
- supplement Table 2, attack SSIM against R: attack rows (and the worst case) of one
  obfuscator at >= 2 radii, a line per eps, a panel per attack.

Reads leaderboard rows only, so the committed leaderboard.json is enough to redraw them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.labels import WORST_CASE, attack_label_of, attack_labels
from bench.report.board.plots import panel_figure, values_and_errors, varying_text, write_task_plots

METRIC = "local_lipschitz"
SWEEP = "alpha"
RADIUS = "R"
SUFFIX = "lipschitz_vs_alpha"
SSIM_SUFFIX = "ssim_vs_radius"
MECHANISM = "posthoc-ptr"

PanelKey = str  # canonical JSON of the parameters other than alpha and R


def _is_sweep_row(row: dict[str, Any]) -> bool:
    params = row.get("params") or {}
    return (
        row.get("attack") is None
        and row.get("mechanism") == MECHANISM
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
    """The parameters that tell the panels apart (the mechanism when there is one panel)."""
    return varying_text(key, keys) or MECHANISM


def _draw_panel(ax: Any, title: str, rows: list[dict[str, Any]]) -> None:
    alphas = sorted({float(r["params"][SWEEP]) for r in rows})
    radii = sorted({float(r["params"][RADIUS]) for r in rows})
    by_point = {(float(r["params"][SWEEP]), float(r["params"][RADIUS])): r for r in rows}
    width = 0.8 / len(radii)
    for j, radius in enumerate(radii):
        present = [
            (i, by_point[(a, radius)]) for i, a in enumerate(alphas) if (a, radius) in by_point
        ]
        xs = [i - 0.4 + width * (j + 0.5) for i, _ in present]
        ys, yerr = values_and_errors([row["metrics"][METRIC] for _, row in present])
        ax.bar(xs, ys, width, yerr=yerr, capsize=2, label=f"R = {radius:g}")
    ax.set_xticks(range(len(alphas)), [f"{a:g}" for a in alphas])
    ax.set_xlabel("ARL weight alpha")
    ax.set_ylabel("mean local Lipschitz constant (l_inf -> l_1)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, title="radius", title_fontsize=7)


def lipschitz_vs_alpha_png(task: str, panels: dict[PanelKey, list[dict[str, Any]]]) -> bytes:
    """One figure: per panel, grouped bars of the mean certified constant (95% CI) by alpha."""
    keys = sorted(panels)
    return panel_figure(
        f"{task}: local Lipschitz constant vs ARL weight (Posthoc Fig. 3)",
        [(_title(key, keys), panels[key]) for key in keys],
        _draw_panel,
        cols=2,
        panel_size=(5.2, 4.0),
    )


RadiusKey = tuple[str, str]  # (attack label, canonical JSON of the params but R and eps)


def _radius_panels(rows: list[dict[str, Any]]) -> dict[str, dict[RadiusKey, list[dict[str, Any]]]]:
    """task -> (attack label, obfuscator parameters) -> its attack rows at >= 2 radii."""
    labels = attack_labels(rows)
    out: dict[str, dict[RadiusKey, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        params = row.get("params") or {}
        attack = row.get("attack")
        if (
            row.get("mechanism") != MECHANISM
            or attack is None
            or RADIUS not in params
            or "ssim" not in row.get("metrics", {})
        ):
            continue
        label = WORST_CASE if attack == WORST_CASE else attack_label_of(row, labels)
        fixed = {k: v for k, v in params.items() if k not in (RADIUS, "eps")}
        out[row["task"]][(label, canonical_json(fixed))].append(row)
    return {
        task: chosen
        for task, panels in out.items()
        if (chosen := {k: g for k, g in panels.items() if _distinct(g, RADIUS) >= 2})
    }


def _draw_radius_panel(ax: Any, title: str, rows: list[dict[str, Any]]) -> None:
    by_eps: dict[float, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_eps[float(row["params"]["eps"])].append(row)
    for eps, eps_rows in sorted(by_eps.items()):
        eps_rows.sort(key=lambda r: float(r["params"][RADIUS]))
        xs = [float(r["params"][RADIUS]) for r in eps_rows]
        ys, yerr = values_and_errors([r["metrics"]["ssim"] for r in eps_rows])
        ax.errorbar(xs, ys, yerr=yerr, marker="o", ms=4, capsize=2, lw=1, label=f"eps {eps:g}")
    prior = [
        float(r["metrics"]["ssim_prior"]["value"]) for r in rows if "ssim_prior" in r["metrics"]
    ]
    if prior:  # the data-independent guess: an attack at this line recovers nothing
        ax.axhline(float(sum(prior) / len(prior)), color="k", ls=":", lw=1, label="prior guess")
    ax.set_xlabel("radius R (l_inf, embedding space)")
    ax.set_ylabel("attack SSIM on released queries")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def _obfuscator(fixed: str) -> str:
    """The obfuscator a radius panel shows, e.g. "variant arl-c-n, alpha 0.99"."""
    params = json.loads(fixed)
    return ", ".join(f"{k} {params[k]}" for k in ("variant", "alpha") if k in params) or MECHANISM


def ssim_vs_radius_png(task: str, panels: dict[RadiusKey, list[dict[str, Any]]]) -> bytes:
    """One figure: per attack (and obfuscator), SSIM with its 95% CI against R, a line per eps."""
    titles = {key: f"{key[0]}: {_obfuscator(key[1])}" for key in panels}
    return panel_figure(
        f"{task}: attack SSIM vs radius R (Posthoc supplement Table 2)",
        [(titles[key], panels[key]) for key in sorted(panels)],
        _draw_radius_panel,
        cols=3,
        panel_size=(5.2, 4.0),
    )


def write_lipschitz_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write plots/<task>_lipschitz_vs_alpha.png under `out_dir` for rows sweeping the ARL
    weight; returns the paths written."""
    return write_task_plots(out_dir, SUFFIX, _panels(rows), lipschitz_vs_alpha_png)


def write_ssim_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Write plots/<task>_ssim_vs_radius.png under `out_dir` for attack rows at >= 2 radii;
    returns the paths written."""
    return write_task_plots(out_dir, SSIM_SUFFIX, _radius_panels(rows), ssim_vs_radius_png)


def write_posthoc_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """Both sweeps' plots under `out_dir`; the paths written (none without either sweep)."""
    return write_lipschitz_plots(rows, out_dir) + write_ssim_plots(rows, out_dir)
