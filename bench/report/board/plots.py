"""Leaderboard plots: privacy-utility scatter per task and the reconstruction grid."""

from __future__ import annotations

import io
import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.fsutil import atomic_write
from bench.report.board.label_layout import place_labels
from bench.report.board.labels import (
    by_config,
    mechanism_colours,
    privacy_label,
    safe_name,
    task_chance,
    worst_case_entry,
)


def _plot_points(rows: list[dict[str, Any]], utility: str | None) -> list[dict[str, Any]]:
    """One point per (mechanism, params) with a utility value and a worst-case mse > 0."""
    points = []
    for (mechanism, params_json), config_rows in by_config(rows).items():
        base = next((r for r in config_rows if r["attack"] is None), None)
        worst = worst_case_entry(config_rows)
        if not (utility and base and worst and utility in base["metrics"]):
            continue
        if worst["value"] <= 0:
            continue
        u = base["metrics"][utility]
        points.append(
            {
                "mechanism": mechanism,
                "params": params_json,
                "label": privacy_label(base["params"]),
                "reference": (base.get("guarantee") or {}).get("notion") in (None, "none"),
                "mse": worst["value"],
                "utility": u["value"],
                "lo": u["value"] - u["ci"][0],
                "hi": u["ci"][1] - u["value"],
            }
        )
    return points


def privacy_utility_png(task: str, rows: list[dict[str, Any]], utility: str | None) -> bytes | None:
    """A seaborn scatter of utility (with CI bars) against worst-case attack mse (log x);
    None when no setting has both (e.g. a task attacked by top-1 only): nothing to plot."""
    import pandas as pd
    import seaborn as sns
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    every = _plot_points(rows, utility)
    points = [p for p in every if not p["reference"]]
    if not points:
        return None
    fig = Figure(figsize=(6.0, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    # Unprotected settings (identity) are a reference line, not points: their attack MSE of
    # ~0 would set the log scale and squeeze every mechanism into a corner.
    for ref in (p for p in every if p["reference"]):
        ax.axhline(ref["utility"], color="0.4", linestyle=":", linewidth=1)
        ax.annotate(
            f"{ref['mechanism']} (no protection)",
            (0.01, ref["utility"]),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            fontsize=7,
            color="0.3",
        )
    chance = task_chance(rows)
    if chance is not None:
        ax.axhline(chance, color="0.5", linestyle=":", linewidth=1)
        ax.annotate(
            "chance (constant predictor)",
            (0.99, chance),
            xycoords=("axes fraction", "data"),
            textcoords="offset points",
            xytext=(0, 3),
            ha="right",
            fontsize=7,
            color="0.3",
        )
    if points:
        df = pd.DataFrame(points)
        ax.errorbar(
            df["mse"],
            df["utility"],
            yerr=[df["lo"], df["hi"]],
            fmt="none",
            ecolor="0.5",
            elinewidth=1,
            capsize=3,
            zorder=1,
        )
        colours = mechanism_colours(rows)  # the frontier plot uses the same colours
        sns.scatterplot(
            data=df,
            x="mse",
            y="utility",
            hue="mechanism",
            palette={m: colours[m] for m in df["mechanism"].unique()},
            ax=ax,
            s=50,
            zorder=2,
        )
        ax.set_xscale("log")
        label_log_axis(ax.xaxis, [p["mse"] for p in points])
    ax.set_xlabel("worst-case attack MSE (min over attacks; higher = more private)")
    ax.set_ylabel(f"{utility or 'utility'} (95% CI)")
    ax.set_title(f"{task}: privacy-utility")
    fig.tight_layout()
    place_labels(
        ax,
        [(p["label"], p["mse"], p["utility"], "0.25") for p in points if p["label"]],
        fontsize=7,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def label_log_axis(axis: Any, values: list[float]) -> None:
    """Tick labels on a log axis whatever its range: inside one decade matplotlib's default
    has no major tick to label (and minor labels crowd), so ticks go at 1-2-5 steps with
    plain numbers; wider ranges keep the decades."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    positive = [v for v in values if v > 0]
    axis.set_minor_formatter(NullFormatter())
    if positive and max(positive) / min(positive) < 100:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.3g}"))


def _as_image(a: np.ndarray) -> np.ndarray:
    """(C, H, W) -> (H, W) greyscale or (H, W, 3) colour, clipped to [0, 1] for display."""
    img = np.clip(a.astype(np.float32), 0.0, 1.0)
    return img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0))


# Reconstruction grid layout: inches per image tile, per label column and per title line,
# and the white gap between tiles in image pixels.
_TILE_IN, _LABEL_IN, _TITLE_IN, _GAP_PX = 1.0, 2.2, 0.35, 3


def _mosaic(rows: list[list[np.ndarray]], gap: int) -> np.ndarray:
    """Tiles (rows x cols of (H, W) or (H, W, 3) images in [0, 1]) laid out on a white
    canvas, each centred in a cell `gap` pixels larger than the image."""
    first = rows[0][0]
    h, w = first.shape[:2]
    cell_h, cell_w = h + gap, w + gap
    canvas = np.ones((len(rows) * cell_h, len(rows[0]) * cell_w, *first.shape[2:]), np.float32)
    for r, tiles in enumerate(rows):
        for c, tile in enumerate(tiles):
            top, left = r * cell_h + gap // 2, c * cell_w + gap // 2
            canvas[top : top + h, left : left + w] = tile
    return canvas


def _targets_label(row_label: str) -> str:
    """The label of a row of targets other than the test images (dFIL's smoothed targets,
    x + noise), named by the setting's `targets` value when its label shows one."""
    named = re.search(r"targets=([\w-]+)", row_label)
    kind = f"{named[1]} targets" if named else "targets"
    return f"{kind}: what the\nrows below are\nscored against"


def _grid_rows(
    entries: list[tuple[str, np.ndarray, np.ndarray]],
) -> list[tuple[str, np.ndarray]]:
    """(label, images) of every grid row: the test images most rows are scored against
    ("original") first; then each (setting, attack) row, preceded by its own targets
    whenever they differ from the targets shown last (e.g. smoothed targets), so every
    row is read against the images it was scored on."""
    from bench.metrics.reconstruction import ssim

    counts: list[tuple[np.ndarray, int]] = []
    for _, x, _ in entries:
        for i, (seen, n) in enumerate(counts):
            if seen.shape == x.shape and np.array_equal(seen, x):
                counts[i] = (seen, n + 1)
                break
        else:
            counts.append((x, 1))
    originals = max(counts, key=lambda c: c[1])[0]  # the first of the most shared
    rows = [("original", originals)]
    shown = originals
    for label, x, x_hat in entries:  # each row says how close it is: SSIM on these images
        if not (shown.shape == x.shape and np.array_equal(shown, x)):
            same = originals.shape == x.shape and np.array_equal(originals, x)
            rows.append(("original" if same else _targets_label(label), x))
            shown = x
        score = float(np.mean(ssim(np.clip(x, 0, 1), np.clip(x_hat, 0, 1), data_range=1.0)))
        rows.append((f"{label}\nSSIM {score:.2f}", x_hat))
    return rows


def reconstruction_grid_png(task: str, entries: list[tuple[str, np.ndarray, np.ndarray]]) -> bytes:
    """Originals in the first row, then one row per (mechanism setting, attack): what each
    attack recovers at each privacy level, on the same test images (seed 0); a setting
    scored against other targets (smoothed images) gets a labelled row of them above its
    rows. Drawn as one mosaic image with the row labels beside it: one axes instead of one
    per tile keeps a 60-row grid to a fraction of a second."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labelled = _grid_rows(entries)
    cols = len(labelled[0][1])
    canvas = _mosaic([[_as_image(im) for im in images[:cols]] for _, images in labelled], _GAP_PX)
    width, height = _LABEL_IN + cols * _TILE_IN, _TITLE_IN + len(labelled) * _TILE_IN
    fig = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_axes(
        (_LABEL_IN / width, 0.0, cols * _TILE_IN / width, len(labelled) * _TILE_IN / height)
    )
    ax.imshow(canvas, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="auto")
    ax.set_axis_off()
    cell = canvas.shape[0] / len(labelled)
    for r, (label, _) in enumerate(labelled):  # x in axes fractions, y in image pixels
        ax.text(
            -0.01,
            (r + 0.5) * cell - 0.5,
            label,
            transform=ax.get_yaxis_transform(),
            ha="right",
            va="center",
            fontsize=9,
        )
    fig.suptitle(f"{task}: reconstructions (seed 0)", fontsize=9, y=1 - 0.1 * _TITLE_IN / height)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def write_task_plots(
    out_dir: Path,
    suffix: str,
    panels_by_task: Mapping[str, Any],
    draw: Callable[[str, Any], bytes],
) -> list[Path]:
    """Write plots/<task>_<suffix>.png = draw(task, panels) under `out_dir` for each task of
    `panels_by_task`, in task order; returns the paths written."""
    written = []
    for task, panels in sorted(panels_by_task.items()):
        path = Path(out_dir) / "plots" / f"{safe_name(task)}_{suffix}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, draw(task, panels))
        written.append(path)
    return written


def panel_figure(
    title: str,
    panels: list[tuple[str, list[dict[str, Any]]]],
    draw: Callable[[Any, str, list[dict[str, Any]]], None],
    *,
    cols: int,
    panel_size: tuple[float, float],
) -> bytes:
    """A PNG of `panels` (title, rows), each drawn on its own axes by `draw`, at most `cols`
    to a line: the layout of the papers' multi-panel sweep plots."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    cols = min(cols, len(panels))
    n_rows = math.ceil(len(panels) / cols)
    fig = Figure(figsize=(panel_size[0] * cols, panel_size[1] * n_rows), dpi=100)
    FigureCanvasAgg(fig)
    axes = fig.subplots(n_rows, cols, squeeze=False)
    for ax, (panel_title, rows) in zip(axes.flat, panels, strict=False):
        draw(ax, panel_title, rows)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def varying_text(fixed: str, all_fixed: list[str]) -> str:
    """The parameters of one panel (canonical JSON `fixed`) whose value differs in another
    panel's (`all_fixed`), as "k=v, ...": what tells the panels of a sweep plot apart."""
    others = [json.loads(f) for f in all_fixed]
    mine = json.loads(fixed)
    varying = {k: v for k, v in mine.items() if any(p.get(k) != v for p in others)}
    return ", ".join(f"{k}={v}" for k, v in sorted(varying.items()))


def values_and_errors(
    entries: list[dict[str, Any]],
) -> tuple[list[float], list[list[float]]]:
    """The values of metric entries ({"value", "ci"}) and their CIs as matplotlib's
    asymmetric `yerr` ([below, above])."""
    values = [float(e["value"]) for e in entries]
    below = [v - float(e["ci"][0]) for v, e in zip(values, entries, strict=True)]
    above = [float(e["ci"][1]) - v for v, e in zip(values, entries, strict=True)]
    return values, [below, above]
