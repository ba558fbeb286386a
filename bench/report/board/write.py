"""Write a whole leaderboard directory atomically: JSON, CSV, Markdown, plots, index.html."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.errors import BenchError, UnknownNameError
from bench.core.fsutil import atomic_write, atomic_write_text
from bench.plugin.families import load_families, write_board_plots
from bench.plugin.registry import TASKS
from bench.report.board.formats import leaderboard_csv, leaderboard_json
from bench.report.board.html import CURVES, inputs_stamp, report_stamp, write_index_html
from bench.report.board.labels import (
    flag_rows,
    row_sort_key,
    rows_by_task,
    safe_name,
    utility_metric_of,
)
from bench.report.board.load import board_kind
from bench.report.board.markdown import SENTENCES_HEADING, SentenceExample, leaderboard_markdown
from bench.report.board.plots import privacy_utility_png, reconstruction_grid_png
from bench.report.board.rows import flag_unreliable
from bench.report.board.suite_info import declared_kind
from bench.report.reproduce.reproduction import (
    reproduction_json,
    reproduction_markdown,
    suite_reproductions,
)


def write_leaderboard(
    suite: str,
    suite_version: str,
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    code_version: str,
    generated_at: str | None = None,
    utility_metrics: dict[str, str] | None = None,
    examples: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] | None = None,
    sentences: dict[str, list[SentenceExample]] | None = None,
    inputs_digest: str | None = None,
    kind: str | None = None,
) -> list[Path]:
    """Write leaderboard.{json,csv,md}, plots/<task>.png and plots/<task>_frontier.png under
    `out_dir`, atomically, plus plots/<task>_reconstructions.png for tasks with `examples`
    (label, x, x_hat), the plots the rows' mechanism families register
    (bench.plugin.families, e.g. a paper's own sweep), reproduction.{md,json} when a
    paper's reference table names the suite (bench.report.reproduce.reproduction), and last
    index.html, the static page that shows them all. Text tasks' reconstructed `sentences`
    (label, originals, reconstructions) go into the Markdown. `inputs_digest` (a digest of
    everything the files are made from, bench.api.board_inputs) is stamped into the page,
    so a rerun with the same inputs can leave the directory alone without rebuilding any
    row (`shows_inputs`).

    `generated_at` defaults to now (UTC, ISO 8601); pass it for byte-identical reruns.
    `utility_metrics` maps task -> its utility metric; otherwise it is inferred. `kind` (the
    suite's: track, slice, paper or study) goes into leaderboard.json and decides the page's layout;
    None writes no kind (the board reads as a paper board).
    """
    out_dir = Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    load_families(r["mechanism"] for r in rows)  # what their families add (plots, levels)
    stamp = generated_at or datetime.now(UTC).isoformat(timespec="seconds")
    rows = _prepared(rows, utility_metrics)
    board = leaderboard_json(suite, suite_version, rows, code_version, stamp, kind)
    doc = json.loads(board)
    # From the rows as published (rounded): `bench reproduce` on the committed JSON agrees.
    reproductions = suite_reproductions(suite, doc["rows"])
    written = [
        atomic_write_text(out_dir / "leaderboard.json", board),
        atomic_write_text(out_dir / "leaderboard.csv", leaderboard_csv(rows)),
        atomic_write_text(
            out_dir / "leaderboard.md",
            leaderboard_markdown(
                suite,
                suite_version,
                rows,
                code_version,
                stamp,
                utility_metrics,
                sentences,
                kind=board_kind(doc),
            ),
        ),
    ]
    written += _write_reproductions(out_dir, reproductions)
    for task, task_rows in rows_by_task(rows).items():
        if all(r["attack"] is None for r in task_rows):
            continue  # utility against attack MSE: nothing to plot without an attack
        utility = (utility_metrics or {}).get(task) or utility_metric_of(task_rows)
        png = privacy_utility_png(task, task_rows, utility)
        if png is not None:  # no empty plot: the page says nothing instead
            path = out_dir / "plots" / f"{safe_name(task)}.png"
            atomic_write(path, png)
            written.append(path)
    for task, entries in sorted((examples or {}).items()):
        if entries:
            path = out_dir / "plots" / f"{safe_name(task)}_reconstructions.png"
            atomic_write(path, reconstruction_grid_png(task, entries))
            written.append(path)
    written += _write_paper_plots(rows, out_dir)
    _drop_stale_plots(out_dir, written, keep_grids=not examples)
    written += write_index_html(out_dir, doc, utility_metrics, reproductions, inputs_digest)
    return written


def _drop_stale_plots(out_dir: Path, written: list[Path], keep_grids: bool) -> None:
    """Remove plots a previous write left that this one did not draw (a plot now judged
    empty, a sweep now too short), so the page never shows one; reconstruction grids are
    kept when this write has no examples to draw them from (a refresh). Frontier plots are
    the page writer's own (`write_frontier_plots`), and so are a track's curves
    (`write_track_plots`)."""
    drawn = {Path(p).name for p in written}
    for png in (out_dir / "plots").glob("*.png"):
        own = not png.stem.endswith(("_frontier", f"_{CURVES}")) and not (
            keep_grids and png.stem.endswith("_reconstructions")
        )
        if own and png.name not in drawn:
            png.unlink()


def refresh_reproductions(out_dir: Path) -> list[Path]:
    """Rewrite reproduction.{md,json}, the papers' sweep plots and the page of a committed
    leaderboard from its leaderboard.json alone, for when a reference table, the verdict
    rules or a paper plot change: no store, no rerun, the rows untouched."""
    out_dir = Path(out_dir)
    doc = checked_board(out_dir / "leaderboard.json")
    reproductions = suite_reproductions(doc["suite"], doc["rows"])
    utility_metrics = declared_utility_metrics({r["task"] for r in doc["rows"]})
    return (
        _write_reproductions(out_dir, reproductions)
        + _write_paper_plots(doc["rows"], out_dir)
        + write_index_html(out_dir, doc, utility_metrics, reproductions)
    )


# Row keys that the report code derives (flag_rows): dropped before a board is re-flagged.
DERIVED_ROW_KEYS = (
    "at_chance",
    "at_chance_reason",
    "constant_predictor",
    "bound_basis",
    "unreliable",
    "unreliable_reason",
)


def refresh_board(out_dir: Path) -> list[Path]:
    """Rewrite a committed board from its leaderboard.json alone with the current report
    code: the rows re-flagged (`flag_unreliable`, `flag_rows`), leaderboard.{json,csv,md},
    the task and paper plots, reproduction.{md,json} and the page. Values, generation time
    and code version stay as they are; what only the store has is kept as it is:
    reconstruction grids, and the Markdown of a board that shows reconstructed sentences
    (text tasks). The board's kind is its JSON's, else the one its shipped suite file now
    declares (none: the JSON stays without one). A leaderboard.json that is not a board of
    the schema with rows is refused in one line (`checked_board`) before anything is
    written."""
    out_dir = Path(out_dir)
    doc = checked_board(out_dir / "leaderboard.json")
    md_path = out_dir / "leaderboard.md"
    kept_md = md_path.read_text(errors="replace") if md_path.is_file() else ""
    rows = [{k: v for k, v in r.items() if k not in DERIVED_ROW_KEYS} for r in doc["rows"]]
    flag_unreliable(rows)
    # The keys where the board had them (a refresh that changes no flag changes no byte).
    rows = [_keys_in_order(new, old) for new, old in zip(rows, doc["rows"], strict=True)]
    written = write_leaderboard(
        doc["suite"],
        doc["suite_version"],
        rows,
        out_dir,
        code_version=doc["code_version"],
        generated_at=doc["generated_at"],
        utility_metrics=declared_utility_metrics({r["task"] for r in rows}),
        kind=doc.get("kind") or declared_kind(doc["suite"]),
    )
    if SENTENCES_HEADING in kept_md:
        atomic_write_text(md_path, kept_md)
        written.remove(md_path)
    return written


def checked_board(json_path: Path) -> dict[str, Any]:
    """The board at `json_path` to refresh: an existing regular file of bounded size, valid
    JSON of the leaderboard schema (bench.report.board.load, schema_check) with at least one
    row; else a one-line BenchError naming the file."""
    from bench.report.board.load import load_leaderboard
    from bench.report.board.schema_check import check_schema

    if not json_path.exists() and not json_path.is_symlink():
        raise UnknownNameError(f"no leaderboard at {json_path}")
    doc = load_leaderboard(json_path)
    check_schema(doc, json_path)
    if not doc["rows"]:
        raise BenchError(f"leaderboard {json_path} has no rows: nothing to refresh")
    return doc


def _keys_in_order(row: dict[str, Any], like: dict[str, Any]) -> dict[str, Any]:
    """`row` with its keys in the order `like` has them, keys `like` lacks last."""
    ordered = {k: row[k] for k in like if k in row}
    return {**ordered, **{k: v for k, v in row.items() if k not in ordered}}


def declared_utility_metrics(tasks: Iterable[str]) -> dict[str, str]:
    """Each task's declared utility metric (auc for movielens), for a run's page and for one
    rewritten from leaderboard.json alone, so neither guesses it from the stored metrics; a
    name no longer registered is left out (its rows' own metric is inferred)."""
    metrics = {}
    for name in sorted(set(tasks)):
        try:
            metrics[name] = TASKS.get(name).utility_metric
        except UnknownNameError:
            continue
    return metrics


def _write_paper_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """The plots the rows' mechanism families add (bench.plugin.families), drawn from
    leaderboard rows."""
    return write_board_plots(rows, out_dir)


def _write_reproductions(out_dir: Path, reproductions: list[dict[str, Any]]) -> list[Path]:
    """reproduction.{md,json} in `out_dir`, when a paper's reference table names the suite."""
    if not reproductions:
        return []
    return [
        atomic_write_text(out_dir / "reproduction.md", reproduction_markdown(reproductions)),
        atomic_write_text(out_dir / "reproduction.json", reproduction_json(reproductions)),
    ]


def _prepared(
    rows: list[dict[str, Any]], utility_metrics: dict[str, str] | None
) -> list[dict[str, Any]]:
    """Rows in leaderboard order with the at-chance flags set: what every file shows."""
    rows = sorted(rows, key=row_sort_key)
    for task, task_rows in rows_by_task(rows).items():
        flag_rows(task_rows, (utility_metrics or {}).get(task) or utility_metric_of(task_rows))
    return rows


def shows_inputs(out_dir: Path, inputs_digest: str) -> bool:
    """Whether `out_dir` holds a leaderboard whose page was rendered by this report code from
    inputs with this digest (`write_leaderboard`'s `inputs_digest`): then every file in it is
    what writing it again would give, and a rerun skips the rows, plots and page."""
    json_path, page = Path(out_dir) / "leaderboard.json", Path(out_dir) / "index.html"
    if not (json_path.is_file() and page.is_file()):
        return False
    text = page.read_text()
    return inputs_stamp(inputs_digest) in text and report_stamp() in text


def leaderboard_is_current(
    suite: str,
    suite_version: str,
    rows: list[dict[str, Any]],
    out_dir: Path,
    *,
    code_version: str,
    generated_at: str,
    utility_metrics: dict[str, str] | None = None,
    kind: str | None = None,
) -> bool:
    """Whether `out_dir` already holds exactly what `write_leaderboard` would write: the same
    leaderboard.json text and a page rendered by this report code. A rerun with nothing new
    then skips the plots (seconds of matplotlib) and rewrites nothing."""
    json_path, page = Path(out_dir) / "leaderboard.json", Path(out_dir) / "index.html"
    if not (json_path.is_file() and page.is_file()):
        return False
    rows = _prepared(rows, utility_metrics)
    text = leaderboard_json(suite, suite_version, rows, code_version, generated_at, kind)
    reproductions = suite_reproductions(suite, json.loads(text)["rows"])
    repro_path = Path(out_dir) / "reproduction.json"
    repro_current = (
        repro_path.is_file() and repro_path.read_text() == reproduction_json(reproductions)
        if reproductions
        else not repro_path.exists()
    )
    return json_path.read_text() == text and repro_current and report_stamp() in page.read_text()
