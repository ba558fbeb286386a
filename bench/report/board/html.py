"""The static HTML view of a leaderboard (leaderboards/<suite>/index.html): one sortable,
filterable table of every row (utility, each attack, worst case), the per-task plots and
the privacy-utility frontier. Rendered with jinja2 (autoescaped) from the same rows as
leaderboard.json, so the page never shows a number the JSON does not hold.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from bench.core.errors import UnknownNameError
from bench.core.fsutil import atomic_write
from bench.core.hashing import canonical_json, files_digest
from bench.metrics import METRICS
from bench.plugin.families import BoardPlot, board_plots
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.report.board.curves import curves_png, plot_data
from bench.report.board.frontier import chance_levels, frontier_png, frontier_points
from bench.report.board.heading import board_heading
from bench.report.board.labels import (
    WORST_CASE,
    attack_labels,
    describe_guarantee,
    mechanism_colours,
    params_text,
    rows_by_task,
    safe_name,
    utility_metric_of,
)
from bench.report.board.load import board_kind
from bench.report.board.overview import task_overview
from bench.report.board.suite_info import shipped_suite
from bench.report.reproduce.reproduction import table_view

TEXT_COLUMNS = ("task", "mechanism", "params", "guarantee", "attack", "seeds")
# Column order by metric kind: what the mechanism serves, what attacks get, what is proven,
# what it costs; unknown (plug-in) metrics last.
_KIND_ORDER = {"utility": 0, "privacy": 1, "bound": 2, "cost": 3}


@cache
def report_digest() -> str:
    """A digest of the report package's code and templates: a page records it, so a rerun
    can tell whether the page on disk was rendered by this code."""
    package = Path(__file__).parents[1]  # the whole bench.report package
    return files_digest([*package.rglob("*.py"), *package.rglob("*.j2"), *package.rglob("*.json")])


def report_stamp() -> str:
    """The meta tag a suite page carries with `report_digest`."""
    return f'<meta name="bench-report" content="{report_digest()}">'


def inputs_stamp(inputs_digest: str | None) -> str:
    """The meta tag a suite page carries with the digest of the inputs it was made from
    (bench.api.board_inputs), or "" when it was rendered from a leaderboard.json alone."""
    return f'<meta name="bench-inputs" content="{inputs_digest}">' if inputs_digest else ""


def template_environment() -> Environment:
    """The jinja2 environment of the report templates (autoescaped HTML)."""
    return Environment(
        loader=PackageLoader("bench.report.board", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )


def metric_columns(rows: list[dict[str, Any]]) -> list[str]:
    """Every metric any row carries, ordered by kind then name."""
    names = {n for r in rows for n in r["metrics"]}

    def order(name: str) -> tuple[int, str]:
        spec = METRICS.get(name) if name in METRICS else None
        return (_KIND_ORDER.get(spec.kind, 4) if spec else 4, name)

    return sorted(names, key=order)


def _metric_help(name: str) -> str:
    if name not in METRICS:
        return name
    spec = METRICS[name]
    return f"{spec.description} ({spec.better} is better for privacy / utility)"


def _cell(metric: dict[str, Any], source: str | None) -> dict[str, Any]:
    lo, hi = metric["ci"]
    title = f"n={metric.get('n', '?')}"
    if source:
        title += f"; strongest attack: {source}"
    return {
        "value": repr(float(metric["value"])),
        "text": f"{metric['value']:.4g}",
        "ci": f"[{lo:.3g}, {hi:.3g}]",
        "title": title,
    }


def _kind(row: dict[str, Any]) -> str:
    if row["attack"] is None:
        return "utility"
    return "worst" if row["attack"] == WORST_CASE else "attack"


def _row_view(row: dict[str, Any], labels: dict[tuple[str, str], str]) -> dict[str, Any]:
    kind = _kind(row)
    if kind == "attack":
        attack = labels[(row["attack"], canonical_json(row.get("attack_params") or {}))]
    else:
        attack = "—" if kind == "utility" else WORST_CASE
    sources = row.get("sources", {})
    return {
        "task": row["task"],
        "mechanism": row["mechanism"],
        "params": params_text(row["params"]),
        "guarantee": describe_guarantee(row.get("guarantee") or {}),
        "notion": (row.get("guarantee") or {}).get("notion") or "none",
        "attack": attack,
        "kind": kind,
        "seeds": row["seeds"],
        "source": row.get("source"),
        "unreliable": bool(row.get("unreliable")),
        "unreliable_reason": row.get("unreliable_reason", ""),
        "waived": "; ".join(
            f"{c}: {why}" for c, why in (row.get("expected_failures") or {}).items()
        ),
        "cells": {n: _cell(m, sources.get(n)) for n, m in row["metrics"].items()},
    }


# Multi-panel figures of the board itself, shown at the page's width (a family's plots are
# too, bench.plugin.families).
WIDE_PLOTS = frozenset({"reconstructions"})
CAPTIONS = {
    "": "secondary view: utility against the worst-case attack MSE (log scale)",
    "curves": "privacy-utility: one curve per mechanism variant, coloured by family",
    "frontier": "privacy-utility frontier",
    "reconstructions": "what each attack recovers at each privacy level (seed 0)",
}


def _plot_suffix(task: str, name: str) -> str:
    """What follows plots/<task> in a plot's file name ("" for the task's main scatter)."""
    return name[len(safe_name(task)) :].removesuffix(".png").lstrip("_")


def _task_plots(
    out_dir: Path, task: str, family: dict[str, BoardPlot] | None = None
) -> list[dict[str, Any]]:
    """The PNGs under plots/ that belong to `task` (plots/<task>.png, plots/<task>_*.png);
    `family` maps the suffixes of the board's family plots to their declarations."""
    family = family or {}
    stem = safe_name(task)
    files = sorted(
        p.name
        for p in (out_dir / "plots").glob(f"{stem}*.png")
        if p.stem == stem or p.stem.startswith(f"{stem}_")
    )
    # The frontier (one privacy axis: SSIM / top-1) first, then the papers' own sweeps, the
    # reconstructions, and the MSE scatter, a secondary view, last.
    suffix_order = {"frontier": 0, **dict.fromkeys(family, 1), "reconstructions": 2, "": 4}
    files.sort(key=lambda n: suffix_order.get(_plot_suffix(task, n), 3))
    captions = {**CAPTIONS, **{suffix: plot.caption for suffix, plot in family.items()}}
    out = []
    for name in files:
        suffix = _plot_suffix(task, name)
        out.append(
            {
                "path": f"plots/{name}",
                "caption": captions.get(suffix, suffix.replace("_", " ")),
                "wide": suffix in WIDE_PLOTS or suffix in family,
            }
        )
    return out


def write_frontier_plots(
    out_dir: Path, rows: list[dict[str, Any]], utility_metrics: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """plots/<task>_frontier.png per task that has utility and worst-case rows; returns the
    frontier of each task for the page. `utility_metrics` maps task -> utility metric."""
    frontiers: dict[str, dict[str, Any]] = {}
    for task, task_rows in rows_by_task(rows).items():
        utility = (utility_metrics or {}).get(task) or utility_metric_of(task_rows)
        score, points = frontier_points(task_rows, utility)
        if not points or utility is None or score is None:
            stale = out_dir / "plots" / f"{safe_name(task)}_frontier.png"
            stale.unlink(missing_ok=True)
            continue
        path = out_dir / "plots" / f"{safe_name(task)}_frontier.png"
        png = frontier_png(
            task,
            points,
            utility,
            score,
            mechanism_colours(task_rows),
            chance_levels(task_rows, score),
        )
        atomic_write(path, png)
        frontiers[task] = {"utility": utility, "score": score, "points": points}
    return frontiers


def _load_row_components(rows: list[dict[str, Any]]) -> None:
    """Import each row's mechanism and attack, so the metrics they register (e.g. posthoc's
    local_lipschitz) are described and ordered the same whichever process writes the page:
    a run with worker processes, or `bench reproduce --write` reading JSON alone."""
    for registry, key in ((MECHANISMS, "mechanism"), (ATTACKS, "attack")):
        for name in sorted({r[key] for r in rows if r.get(key)}):
            try:
                registry.get(name)
            except UnknownNameError:  # a plug-in not installed here, or a "worst case" row
                continue


def task_order(suite: str, tasks: set[str]) -> list[str]:
    """`tasks` in the order the shipped suite file lists them (its author's order: the main
    task first), any it does not list after them, sorted; sorted for a suite not shipped."""
    try:
        listed = [t.get("name") for t in shipped_suite(suite).get("task", [])]
    except (AttributeError, TypeError):
        listed = []
    first = [t for t in dict.fromkeys(listed) if t in tasks]
    return first + sorted(tasks - set(first))


def task_overviews(
    doc: dict[str, Any], utility_metrics: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """Each task's summary (bench.report.board.overview.task_overview), in the page's task
    order."""
    rows = doc["rows"]
    tasks = task_order(doc["suite"], {r["task"] for r in rows})
    return {
        t: task_overview([r for r in rows if r["task"] == t], (utility_metrics or {}).get(t))
        for t in tasks
    }


def render_index_html(
    doc: dict[str, Any],
    frontiers: dict[str, dict[str, Any]],
    plots: dict[str, list[dict]],
    utility_metrics: dict[str, str] | None = None,
    reproductions: list[dict[str, Any]] | None = None,
    inputs_digest: str | None = None,
    track_plots: dict[str, str] | None = None,
) -> str:
    """The page for a leaderboard document (the dict leaderboard.json holds), led by its
    kind, title and description. A track's page opens, per task, on the ranked bands beside
    its privacy-utility plot (`track_plots`: task -> the plot's path), then the ranking by
    claimed guarantee; any other board's on its paper reproduction tables (if a reference
    table names the suite). Then per task a summary of each setting, every row in a details
    section, and the plots."""
    rows = doc["rows"]
    _load_row_components(rows)
    labels = attack_labels(rows)
    tasks = task_order(doc["suite"], {r["task"] for r in rows})
    columns = metric_columns(rows)
    heading = board_heading(doc)
    shown = set((track_plots or {}).values())
    return (
        template_environment()
        .get_template("leaderboard.html.j2")
        .render(
            report_stamp=report_stamp(),
            inputs_stamp=inputs_stamp(inputs_digest),
            heading=heading,
            track=heading.kind == "track",
            track_plots=track_plots or {},
            suite=doc["suite"],
            suite_version=doc["suite_version"],
            code_version=doc["code_version"],
            generated_at=doc["generated_at"],
            rows=[_row_view(r, labels) for r in rows],
            tasks=tasks,
            notions=sorted({(r.get("guarantee") or {}).get("notion") or "none" for r in rows}),
            text_columns=TEXT_COLUMNS,
            metric_columns=columns,
            metric_help={m: _metric_help(m) for m in columns},
            frontiers=frontiers,
            plots={t: [p for p in found if p["path"] not in shown] for t, found in plots.items()},
            reproductions=[{**d, "view": table_view(d)} for d in reproductions or []],
            overviews=task_overviews(doc, utility_metrics),
        )
    )


CURVES = "curves"  # plots/<task>_curves.png: a track's privacy-utility plot


def write_track_plots(
    out_dir: Path, doc: dict[str, Any], overviews: dict[str, dict[str, Any]]
) -> dict[str, str]:
    """plots/<task>_curves.png for each task of a track board with curves to draw
    (bench.report.board.curves), the page's path of each; a board of another kind gets none
    and loses any a previous write left."""
    out: dict[str, str] = {}
    for task, o in overviews.items():
        path = out_dir / "plots" / f"{safe_name(task)}_{CURVES}.png"
        data = None
        if board_kind(doc) == "track" and o["has_attacks"]:
            data = plot_data(
                task,
                [r for r in doc["rows"] if r["task"] == task],
                o["shown_utility"],
                o["score"],
                utility_words=o["utility_words"],
                score_words=o["score_words"],
                chance=o["chance_value"],
                floor=o["floor"],
                prior=o["prior"],
                lower_is_private=not o["lower_is_stronger"],
            )
        if data is None or not data.curves:
            path.unlink(missing_ok=True)
            continue
        atomic_write(path, curves_png(data))
        out[task] = f"plots/{path.name}"
    return out


def write_index_html(
    out_dir: Path,
    doc: dict[str, Any],
    utility_metrics: dict[str, str] | None = None,
    reproductions: list[dict[str, Any]] | None = None,
    inputs_digest: str | None = None,
) -> list[Path]:
    """Write the frontier plots and index.html for the leaderboard document `doc` (as in
    leaderboard.json) into `out_dir`, beside the plots already there; `inputs_digest` is
    stamped into the page (`inputs_stamp`)."""
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    family = {p.suffix: p for p in board_plots(r["mechanism"] for r in doc["rows"])}
    frontiers = write_frontier_plots(out_dir, doc["rows"], utility_metrics)
    _load_row_components(doc["rows"])
    track_plots = write_track_plots(out_dir, doc, task_overviews(doc, utility_metrics))
    tasks = sorted({r["task"] for r in doc["rows"]})
    plots = {task: _task_plots(out_dir, task, family) for task in tasks}
    html = render_index_html(
        doc, frontiers, plots, utility_metrics, reproductions, inputs_digest, track_plots
    )
    index = out_dir / "index.html"
    atomic_write(index, html.encode("utf-8"))
    frontier_files = [out_dir / "plots" / f"{safe_name(t)}_frontier.png" for t in frontiers]
    track_files = [out_dir / path for path in track_plots.values()]
    return [*frontier_files, *track_files, index]
