"""Paper tables against bench's leaderboards: each headline cell a source paper reports (its
reference table, bench/report/reproduce/reference/<paper>.toml), the bench row that answers
it, and a verdict computed from the numbers by the rules in bench.report.reproduce.verdicts,
never typed in.

A cell names its suite, task, mechanism, a subset of the row's params and the attack ("" for
the utility row); exactly one row of the suite's leaderboard may match. Each cell declares its
comparability `class` (`same`, `scaled` with the difference stated, or `substitute`: another
dataset, model or task), checked against the dataset the task loads (`check_class`), and
where its value comes from: printed in the paper's text (`printed` when the text prints it
otherwise, e.g. "2 sec/image" for 2000 ms), read from a figure (a source naming "read from
Fig. N" with its reading tolerance), or following from what the paper states (`derived`).
`[[trend]]` tables declare the paper's own contrasts (tiers of cells from its highest value
to its lowest, or explicit pairs), `[[comparison]]` tables its mechanism comparisons at equal
settings (bench.report.reproduce.comparisons), `[[attribution]]` tables where a suite's page
says that the paper's values are reached only by releases bench refutes
(bench.report.reproduce.attribution), and `[[headline]]` tables the paper's headline results
(tables and figures that carry numbers or a stated trend) and the cells or checks that answer
each, or why none can: the coverage counts.
"""

from __future__ import annotations

import json
import math
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError, ConfigError
from bench.plugin.families import load_families
from bench.report.reproduce import verdicts as vr
from bench.report.reproduce.attribution import (
    Attribution,
    attribution_line,
    board_rows,
    parse_attribution,
)
from bench.report.reproduce.comparisons import Comparison, expand, parse_comparison, same_param
from bench.report.reproduce.verdicts import (
    CLASSES,
    COMPARABLE,
    NO_DIRECTION,
    NOT_RUN,
    RULES,
    SUBSTITUTE,
    TREND,
    VERDICTS,
    Trend,
)

__all__ = ["NOT_RUN", "RULES", "TREND", "VERDICTS", "Cell", "Reference", "Trend"]

REPRODUCED = vr.REPRODUCED
NOT_REPRODUCED = vr.NOT_REPRODUCED

# How the papers name the datasets they use -> the dataset, in the words the tasks declare
# theirs (`source_dataset` on the task classes, bench/tasks). A `same` or `scaled` cell must
# name the dataset its task loads; any other dataset makes the cell a `substitute`.
PAPER_DATASETS = {
    "FMNIST": "Fashion-MNIST",
    "Adult": "UCI Adult",
    "Credit": "UCI Default of Credit Card Clients",
    "GLUE-SST2": "GLUE SST-2",
}
_CELL_KEYS = {
    "id": str,
    "source": str,
    "dataset": str,
    "model": str,
    "setting": str,
    "metric": str,
    "value": float,
    "suite": str,
    "task": str,
    "mechanism": str,
    "params": dict,
    "attack": str,
    "attack_params": dict,
    "class": str,
    "difference": str,
    "note": str,
    "same_as": str,
    "rel_tolerance": float,
    "printed": str,
    "derived": str,
}
_OPTIONAL = {
    "attack_params": {},
    "difference": "",
    "note": "",
    "same_as": "",
    "attack": "",
    "rel_tolerance": 0.0,
    "printed": "",
    "derived": "",
}


@dataclass(frozen=True)
class Cell:
    """One number a paper reports and where bench answers it."""

    id: str
    source: str
    dataset: str
    model: str
    setting: str
    metric: str
    value: float
    suite: str
    task: str
    mechanism: str
    params: dict[str, Any] = field(hash=False)
    klass: str = SUBSTITUTE
    attack: str = ""
    attack_params: dict[str, Any] = field(default_factory=dict, hash=False)
    difference: str = ""
    note: str = ""
    same_as: str = ""
    rel_tolerance: float = 0.0
    printed: str = ""
    derived: str = ""


@dataclass(frozen=True)
class Headline:
    """A headline result of the paper and what answers it (cells, trend checks) or why
    nothing can."""

    id: str
    source: str
    what: str
    cells: tuple[str, ...] = ()
    trends: tuple[str, ...] = ()
    reason: str = ""

    @property
    def covered(self) -> bool:
        return bool(self.cells or self.trends)


@dataclass(frozen=True)
class Reference:
    """A paper's reference table."""

    id: str
    title: str
    url: str
    cells: tuple[Cell, ...]
    trends: tuple[Trend, ...] = ()
    headlines: tuple[Headline, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    attributions: tuple[Attribution, ...] = ()
    short: str = ""  # how a page names the paper in a title ("Posthoc privacy")
    year: int | None = None  # its year of publication

    @property
    def name(self) -> str:
        """The paper as a page title names it: its short title and year, e.g. "Posthoc
        privacy (2023)"; the full title where the table gives no short one."""
        name = self.short or self.title
        return f"{name} ({self.year})" if self.year else name

    def suites(self) -> list[str]:
        """The suites whose leaderboards answer some cell or comparison, in first-mention
        order."""
        named = [c.suite for c in self.cells] + [c.suite for c in self.comparisons]
        return list(dict.fromkeys(s for s in named if s))


def known_papers() -> list[str]:
    """Ids of the reference tables shipped in bench/report/reproduce/reference."""
    folder = resources.files("bench") / "report" / "reproduce" / "reference"
    if not folder.is_dir():
        return []
    names = (p.name for p in folder.iterdir())
    return sorted(n.removesuffix(".toml") for n in names if n.endswith(".toml"))


def load_reference(paper: str) -> Reference:
    """The reference table of `paper`; a ConfigError (one line) for an unknown paper or a
    malformed file."""
    if paper not in known_papers():
        raise ConfigError(f"no reference table for paper {paper!r}; known: {known_papers()}")
    path = resources.files("bench") / "report" / "reproduce" / "reference" / f"{paper}.toml"
    return parse_reference(path.read_text(), f"bench/report/reproduce/reference/{paper}.toml")


def parse_reference(text: str, where: str) -> Reference:
    """Parse and check a reference table (see the module docstring for the keys)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc})") from None
    head = data.get("paper")
    if not isinstance(head, dict) or not all(
        isinstance(head.get(k), str) for k in ("id", "title", "url")
    ):
        raise ConfigError(f"{where}: needs a [paper] table with id, title and url")
    year = head.get("year")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool)):
        raise ConfigError(f"{where}: [paper] year must be an integer, got {year!r}")
    if not isinstance(head.get("short", ""), str):
        raise ConfigError(f"{where}: [paper] short must be a string")
    cells: list[Cell] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("cell", [])):
        cells.append(_parse_cell(raw, f"{where}: cell {i + 1}"))
        if cells[-1].id in seen:
            raise ConfigError(f"{where}: cell id {cells[-1].id!r} appears twice")
        seen.add(cells[-1].id)
    if not cells:
        raise ConfigError(f"{where}: no [[cell]] entries")
    by_id = {c.id: c for c in cells}
    for cell in cells:
        if cell.same_as and cell.same_as not in by_id:
            raise ConfigError(f"{where}: cell {cell.id}: same_as {cell.same_as!r} is no cell")
    trends = tuple(
        _parse_trend(raw, by_id, f"{where}: trend {i + 1}")
        for i, raw in enumerate(data.get("trend", []))
    )
    comparisons = tuple(
        parse_comparison(raw, f"{where}: comparison {i + 1}")
        for i, raw in enumerate(data.get("comparison", []))
    )
    names = [t.id for t in trends] + [c.id for c in comparisons]
    if len(set(names)) != len(names):
        raise ConfigError(f"{where}: two trend checks or comparisons share an id")
    headlines = tuple(
        _parse_headline(raw, by_id, set(names), f"{where}: headline {i + 1}")
        for i, raw in enumerate(data.get("headline", []))
    )
    attributions = tuple(
        parse_attribution(raw, f"{where}: attribution {i + 1}")
        for i, raw in enumerate(data.get("attribution", []))
    )
    return Reference(
        head["id"],
        head["title"],
        head["url"],
        tuple(cells),
        trends,
        headlines,
        comparisons,
        attributions,
        short=head.get("short", ""),
        year=year,
    )


def _parse_cell(raw: Any, where: str) -> Cell:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = set(raw) - set(_CELL_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    values = {**_OPTIONAL, **raw}
    missing = [k for k in _CELL_KEYS if k not in values]
    if missing:
        raise ConfigError(f"{where}: missing keys {missing}")
    for key, kind in _CELL_KEYS.items():
        value = values[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            values[key] = float(value)
        elif not isinstance(value, kind):
            raise ConfigError(f"{where}: {key} must be a {kind.__name__}")
    values["klass"] = values.pop("class")
    cell = Cell(**values)
    check_class(cell, where)
    return cell


def task_source_dataset(task: str) -> str | None:
    """The dataset the registered task `task` loads by default (its `source_dataset`), or
    None for an unknown task or one that declares none."""
    from bench.plugin.registry import TASKS

    try:
        return getattr(TASKS.get(task), "source_dataset", None)
    except BenchError:
        return None


def paper_dataset(name: str) -> str:
    """The dataset a paper's name for it stands for, in the tasks' words (PAPER_DATASETS)."""
    return PAPER_DATASETS.get(name, name)


def check_class(cell: Cell, where: str) -> None:
    """A cell's comparability class against the task its row runs: `same` and `scaled`
    need the task to load the paper's own dataset (the task's `source_dataset`) and
    `scaled` a stated difference; anything else must be declared `substitute`."""
    if cell.klass not in CLASSES:
        raise ConfigError(f"{where}: class must be one of {list(CLASSES)}, not {cell.klass!r}")
    if cell.klass in COMPARABLE:
        loads = task_source_dataset(cell.task)
        if loads is None or paper_dataset(cell.dataset) != loads:
            raise ConfigError(
                f"{where}: cell {cell.id} is {cell.klass!r} but task {cell.task!r} loads "
                f"{loads or 'no declared dataset'}, not the paper's {cell.dataset!r}: declare "
                "it 'substitute'"
            )
    if cell.klass != "same" and not cell.difference:
        raise ConfigError(f"{where}: cell {cell.id} is {cell.klass!r}: state the difference")


_TREND_KEYS = {"id", "source", "claim"}


def _parse_trend(raw: Any, cells: dict[str, Cell], where: str) -> Trend:
    if not isinstance(raw, dict) or not set(raw) >= _TREND_KEYS:
        raise ConfigError(f"{where}: needs id, source, claim and tiers or pairs")
    extra = set(raw) - _TREND_KEYS - {"by_construction"}
    if extra not in ({"tiers"}, {"pairs"}):
        raise ConfigError(f"{where}: needs exactly one of tiers or pairs (and no other keys)")
    construction = raw.get("by_construction", "")
    if not isinstance(construction, str):
        raise ConfigError(f"{where}: by_construction must be a string (why the contrast holds)")
    if "tiers" in raw:
        tiers = raw["tiers"]
        if (
            not isinstance(tiers, list)
            or len(tiers) < 2
            or not all(
                isinstance(t, list) and t and all(isinstance(c, str) for c in t) for t in tiers
            )
        ):
            raise ConfigError(f"{where}: tiers must be >= 2 non-empty lists of cell ids")
        trend = Trend(
            raw["id"], raw["source"], raw["claim"], tuple(tuple(t) for t in tiers), (), construction
        )
    else:
        pairs = raw["pairs"]
        if (
            not isinstance(pairs, list)
            or not pairs
            or not all(
                isinstance(p, list) and len(p) == 2 and all(isinstance(c, str) for c in p)
                for p in pairs
            )
        ):
            raise ConfigError(f"{where}: pairs must be a non-empty list of [higher, lower] ids")
        explicit = tuple((p[0], p[1]) for p in pairs)
        trend = Trend(raw["id"], raw["source"], raw["claim"], (), explicit, construction)
    for cid in trend.cell_ids():
        if cid not in cells:
            raise ConfigError(f"{where}: {trend.id}: {cid!r} is no cell")
    for high, low in trend.pairs():
        if math.isnan(cells[high].value) or math.isnan(cells[low].value):
            continue  # a plotted trend with no printed value: the claim states the order
        if not cells[high].value > cells[low].value:
            raise ConfigError(
                f"{where}: {trend.id}: the paper does not put {high} ({cells[high].value:g}) "
                f"above {low} ({cells[low].value:g})"
            )
    metrics = {cells[c].metric for c in trend.cell_ids()}
    if len(metrics) != 1:
        raise ConfigError(f"{where}: {trend.id}: cells of one check share a metric")
    return trend


def _parse_headline(raw: Any, cells: dict[str, Cell], trends: set[str], where: str) -> Headline:
    allowed = {"id", "source", "what", "cells", "trends", "reason"}
    if not isinstance(raw, dict) or not {"id", "source", "what"} <= set(raw) <= allowed:
        raise ConfigError(f"{where}: needs id, source, what and cells / trends or a reason")
    head = Headline(
        raw["id"],
        raw["source"],
        raw["what"],
        tuple(raw.get("cells", ())),
        tuple(raw.get("trends", ())),
        raw.get("reason", ""),
    )
    for cid in head.cells:
        if cid not in cells:
            raise ConfigError(f"{where}: {head.id}: {cid!r} is no cell")
    for tid in head.trends:
        if tid not in trends:
            raise ConfigError(f"{where}: {head.id}: {tid!r} is no trend check or comparison")
    if not head.covered and not head.reason:
        raise ConfigError(f"{where}: {head.id}: no cell or trend check: give the reason")
    return head


# ------------------------------------------------------------------------ matching


_same = same_param  # parameter equality (bench.report.reproduce.comparisons)


def matching_rows(cell: Cell, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The leaderboard rows `cell` describes."""
    attack = cell.attack or None
    return [
        r
        for r in rows
        if r["task"] == cell.task
        and r["mechanism"] == cell.mechanism
        and r["attack"] == attack
        and all(k in r["params"] and _same(r["params"][k], v) for k, v in cell.params.items())
        and all(
            _same((r.get("attack_params") or {}).get(k), v) for k, v in cell.attack_params.items()
        )
    ]


def bench_value(cell: Cell, rows: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The bench metric answering `cell` (value, ci, n, seeds, the row's flags and what
    knowing nothing scores), None when not run. More than one matching row is an error in
    the reference table: it must name one row."""
    if rows is None or not cell.suite:
        return None
    found = matching_rows(cell, rows)
    if len(found) > 1:
        raise ConfigError(
            f"reference cell {cell.id}: {len(found)} rows of suite {cell.suite} match; "
            "add params that tell them apart"
        )
    if not found or cell.metric not in found[0]["metrics"]:
        return None
    row = found[0]
    metric = row["metrics"][cell.metric]
    return {
        "value": metric["value"],
        "ci": list(metric["ci"]),
        "n": metric["n"],
        "seeds": row["seeds"],
        "params": row["params"],
        "metric": cell.metric,
        "attack": row["attack"] is not None,
        "level": vr.reference_level(cell.metric, row),
        "flags": vr.row_flags(cell.metric, row),
    }


# ------------------------------------------------------------------------ verdicts


def judge(
    cells: list[Cell], trends: list[Trend], answers: dict[str, dict[str, Any] | None]
) -> tuple[dict[str, tuple[str, str]], list[dict[str, Any]]]:
    """Cell id -> (verdict, why), and the trend checks' results, from the paper values and
    the bench answers (`answers[id]`). A check is judged on direction only when one of its
    cells is (a substitute, or a plotted value the paper does not print); it inherits the
    flags of every row it uses (bench.report.reproduce.verdicts.trend_result)."""
    by_id = {c.id: c for c in cells}
    paper = {c.id: c.value for c in cells}
    results = [
        vr.trend_result(t, paper, answers, any(_direction_only(by_id[c]) for c in t.cell_ids()))
        for t in trends
    ]
    of_cell: dict[str, list[dict[str, Any]]] = {c.id: [] for c in cells}
    neighbours: dict[str, list[float]] = {c.id: [] for c in cells}
    for trend, result in zip(trends, results, strict=True):
        for cid in trend.cell_ids():
            of_cell[cid].append(result)
        for high, low in trend.pairs():  # the values the check orders against each cell
            for me, other in ((high, low), (low, high)):
                if not math.isnan(paper[other]):
                    neighbours[me].append(paper[other])
    out: dict[str, tuple[str, str]] = {}
    for cell in cells:
        answer = answers.get(cell.id)
        judged = [r for r in of_cell[cell.id] if r["verdict"] != NOT_RUN]
        if _direction_only(cell):
            verdict = vr.substitute_verdict(judged, answer is not None)
            why = "; ".join(f"{r['id']}: {r['why']}" for r in judged if r["why"])
            out[cell.id] = (verdict, why)
            continue
        verdict, why = vr.level_verdict(cell.value, answer, cell.rel_tolerance, neighbours[cell.id])
        from_trends = vr.cell_trend_verdict(judged)
        if (
            verdict == NOT_REPRODUCED
            and answer is not None
            and from_trends is not None
            and not set(answer["flags"]) & set(vr.UNINFORMATIVE)
        ):
            ratios = ", ".join(f"{r['ratio']:.2f}" for r in judged)
            why = f"outside the CI; effect ratio {ratios}"
            if from_trends != TREND:
                flagged = sorted({c for r in judged for cs in r["flags"].values() for c in cs})
                why += f"; flagged rows in its checks: {', '.join(flagged)}"
            verdict = from_trends
        out[cell.id] = (verdict, why)
    return out, results


def _direction_only(cell: Cell) -> bool:
    """Cells judged on direction alone: substitutes, and cells of a plotted trend whose
    value the paper does not print (value nan)."""
    return cell.klass == SUBSTITUTE or math.isnan(cell.value)


def verdicts(
    cells: list[Cell], answers: dict[str, dict[str, Any] | None], trends: list[Trend] = ()
) -> dict[str, str]:
    """Cell id -> verdict (see `judge`)."""
    judged, _ = judge(list(cells), list(trends), answers)
    return {k: v for k, (v, _) in judged.items()}


# ------------------------------------------------------------------------ reports


def _counts(entries: list[dict[str, Any]]) -> dict[str, int]:
    tally = Counter(e["verdict"] for e in entries)
    return {v: tally[v] for v in VERDICTS if tally[v]}


def class_counts(entries: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Verdict counts split into like-for-like (same, scaled) and substitute cells."""
    return {
        "like-for-like": _counts([e for e in entries if e["class"] in COMPARABLE]),
        "substitute": _counts([e for e in entries if e["class"] == SUBSTITUTE]),
    }


def summary_line(split: dict[str, dict[str, int]]) -> str:
    """E.g. "like-for-like: 12 reproduced, 3 inconclusive; substitutes: 8 direction kept"."""
    parts = []
    for label, counts in (
        ("like-for-like", split["like-for-like"]),
        ("substitutes", split["substitute"]),
    ):
        body = ", ".join(f"{n} {v}" for v, n in counts.items()) or "none"
        parts.append(f"{label}: {body}")
    return "; ".join(parts)


def suite_cells(
    reference: Reference, suite: str, rows: list[dict[str, Any]] | None
) -> tuple[list[Cell], list[Trend]]:
    """The cells and trend checks of `suite`: the reference's own, and those its comparisons
    take from the suite's rows (bench.report.reproduce.comparisons.expand)."""
    cells = [c for c in reference.cells if c.suite == suite]
    ids = {c.id for c in cells}
    trends = [t for t in reference.trends if set(t.cell_ids()) <= ids]
    for comparison in reference.comparisons:
        if comparison.suite != suite:
            continue
        generated, check = expand(comparison, rows)
        cells += [Cell(**kwargs) for kwargs in generated]
        trends.append(check)
    return cells, trends


def default_leaderboards() -> Path | None:
    """The checkout's committed leaderboards/, where attribution boards are read from when
    no root is given (a suite's board written on its own); None for an installed copy."""
    from bench.data.locations import checkout_root

    root = checkout_root()
    return None if root is None else root / "leaderboards"


def _attribution(
    reference: Reference, suite: str, entries: list[dict[str, Any]], root: Path | None
) -> dict[str, Any] | None:
    """The suite's attribution line (bench.report.reproduce.attribution), if the reference
    declares one for it and the committed boards show it."""
    for attr in reference.attributions:
        if attr.suite != suite:
            continue
        where = root if root is not None else default_leaderboards()
        if where is None:
            return None
        return attribution_line(attr, entries, board_rows(where, attr.boards))
    return None


def reproduction(
    reference: Reference,
    suite: str,
    rows: list[dict[str, Any]] | None,
    root: Path | None = None,
) -> dict[str, Any]:
    """The reproduction document of `suite` against `reference` (what reproduction.json
    holds): every cell of the paper that names this suite (and of its comparisons), with its
    verdict, the trend checks over those cells, and the attribution line where the reference
    declares one (its boards read under `root`, by default the checkout's leaderboards/).
    The rows' families are loaded first: a flag such as "estimate fails" reads the rows'
    notions, which a family registers when it is imported."""
    load_families(r["mechanism"] for r in rows or [])
    cells, trends = suite_cells(reference, suite, rows)
    answers = {c.id: bench_value(c, rows) for c in cells}
    judged, results = judge(cells, trends, answers)
    entries = [
        {
            "id": c.id,
            "source": c.source,
            "dataset": c.dataset,
            "model": c.model,
            "setting": c.setting,
            "metric": c.metric,
            "paper": None if math.isnan(c.value) else c.value,
            "bench": answers[c.id],
            "class": c.klass,
            "difference": c.difference,
            "note": c.note,
            "same_as": c.same_as,
            "trends": [t.id for t in trends if c.id in t.cell_ids()],
            "rel_tolerance": c.rel_tolerance,
            "row": {
                "task": c.task,
                "mechanism": c.mechanism,
                "params": c.params,
                "attack": c.attack or None,
            },
            "verdict": judged[c.id][0],
            "why": judged[c.id][1],
        }
        for c in cells
    ]
    split = class_counts(entries)
    return {
        "paper": {"id": reference.id, "title": reference.title, "url": reference.url},
        "suite": suite,
        "rules": dict(RULES),
        "counts": _counts(entries),
        "counts_by_class": split,
        "summary": summary_line(split),
        "attribution": _attribution(reference, suite, entries, root),
        "cells": entries,
        "trends": results,
    }


def references_for_suite(suite: str) -> list[Reference]:
    """Every paper whose reference table names `suite`."""
    return [ref for ref in map(load_reference, known_papers()) if suite in ref.suites()]


def suite_reproductions(
    suite: str, rows: list[dict[str, Any]], root: Path | None = None
) -> list[dict[str, Any]]:
    """The reproduction documents of `suite`, one per paper naming it (usually one)."""
    return [reproduction(ref, suite, rows, root) for ref in references_for_suite(suite)]


def _fmt(v: float | None) -> str:
    return "—" if v is None else f"{v:.4g}"


def _bench_text(b: dict[str, Any]) -> str:
    return f"{_fmt(b['value'])} [{_fmt(b['ci'][0])}, {_fmt(b['ci'][1])}]"


def rules_text(rules: dict[str, str]) -> list[str]:
    """The verdict rules, one sentence each, as Markdown list items."""
    return [f"- **{verdict}**: {sentence}" for verdict, sentence in rules.items()]


def difference_keys(entries: list[dict[str, Any]]) -> dict[str, str]:
    """Each distinct difference text -> its short key (D1, D2, ...), in first-seen order:
    the tables name the key and state each text once below."""
    texts = dict.fromkeys(e["difference"] for e in entries if e["difference"])
    return {text: f"D{i + 1}" for i, text in enumerate(texts)}


def _esc(text: str) -> str:
    return text.replace("|", "\\|")


def table_view(doc: dict[str, Any]) -> dict[str, Any]:
    """What a table of the document shows beyond its cells: per cell its difference key and
    note mark, the differences stated once (key, text) and the notes (mark, cell, text)."""
    keys = difference_keys(doc["cells"])
    marks: dict[str, str] = {}
    notes: list[tuple[str, str, str]] = []
    for e in doc["cells"]:
        if not (e["note"] or e["same_as"]):
            continue
        text = e["note"]
        if e["same_as"]:
            text = (
                f"the same computation as {e['same_as']} (same noise scale): one measurement, "
                "not a second piece of evidence. " + text
            ).strip()
        same = next((n for n in notes if n[2] == text), None)
        if same is not None:  # one note shared by several cells: stated once
            marks[e["id"]] = same[0]
            continue
        marks[e["id"]] = f"n{len(notes) + 1}"
        notes.append((marks[e["id"]], e["id"], text))
    return {
        "diff_key": {e["id"]: keys.get(e["difference"], "") for e in doc["cells"]},
        "mark": marks,
        "differences": [(k, t) for t, k in keys.items()],
        "notes": notes,
        "trend_numbers": {t["id"]: trend_numbers(t) for t in doc["trends"]},
        "worst_gaps": worst_gaps(doc["cells"]),
    }


WORST_GAPS_SHOWN = 3


def worst_gaps(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The like-for-like cells (same or scaled) that bench does not reproduce, with the
    largest relative distance between bench's value and the paper's: what a page's summary
    names first, so a reader sees the size of the disagreement before the full table."""
    gaps = []
    for e in cells:
        paper, bench = e.get("paper"), e.get("bench")
        if e.get("class") not in ("same", "scaled") or bench is None or paper is None:
            continue
        if e.get("verdict") != "not reproduced" or not math.isfinite(float(paper)):
            continue
        value = float(bench["value"])
        gaps.append({**e, "gap": (value - float(paper)) / max(abs(float(paper)), 1e-12)})
    gaps.sort(key=lambda e: -abs(e["gap"]))
    return gaps[:WORST_GAPS_SHOWN]


def cell_table(doc: dict[str, Any]) -> list[str]:
    """The cells of one document as a Markdown table, then the differences and the notes
    (each stated once), then the trend checks."""
    view = table_view(doc)
    lines = [
        "| source | dataset / model | setting | metric | paper | bench [95% CI] | seeds | flags "
        "| class | diff. | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in doc["cells"]:
        b = e["bench"]
        verdict = f"**{e['verdict']}**" + (f" ({e['why']})" if e["why"] else "")
        mark = view["mark"].get(e["id"])
        cells = [
            e["source"],
            f"{e['dataset']} / {e['model']}",
            e["setting"] + (f" [{mark}]" if mark else ""),
            e["metric"],
            _fmt(e["paper"]),
            "—" if b is None else _bench_text(b),
            "—" if b is None else str(b["seeds"]),
            (", ".join(b["flags"]) if b else "") or "—",
            e["class"],
            view["diff_key"][e["id"]] or "—",
            verdict,
        ]
        lines.append("| " + " | ".join(_esc(c) for c in cells) + " |")
    lines.append("")
    lines += [f"- {key}: {text}" for key, text in view["differences"]]
    lines += [f"- {mark} ({cid}): {text}" for mark, cid, text in view["notes"]]
    if doc["trends"]:
        lines += [
            "",
            "Trend checks (the paper's own contrasts; pairs ordered by the paper, kept / "
            "reversed / not separated by bench's CIs; effects are mean differences over the "
            "pairs):",
            "",
            "| check | source | claim | pairs kept / reversed / overlapping | paper effect "
            "| bench effect | ratio | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for t in doc["trends"]:
            row = [t["id"], t["source"], t["claim"], *trend_numbers(t)]
            row.append(f"**{t['verdict']}**" + (f" ({t['why']})" if t["why"] else ""))
            lines.append("| " + " | ".join(_esc(c) for c in row) + " |")
    return lines


def trend_numbers(t: dict[str, Any]) -> list[str]:
    """A trend check's pair counts, paper and bench effects and their ratio, as text."""
    if t["verdict"] == NOT_RUN:
        return ["—", "—", "—", "—"]
    ratio = "—" if t["ratio"] is None else f"{t['ratio']:.2f}"
    counts = f"{t['kept']} / {t['reversed']} / {t['unseparated']} of {t['pairs']}"
    return [counts, _fmt(t["paper_effect"]), _fmt(t["bench_effect"]), ratio]


def reproduction_markdown(docs: list[dict[str, Any]]) -> str:
    """reproduction.md: per paper, the summary split by class, the rules, the table of cells
    (paper value, bench value [CI], flags, class, difference key, verdict) and the trend
    checks."""
    lines: list[str] = []
    for doc in docs:
        paper = doc["paper"]
        lines += [
            f"# Reproduction: {paper['title']} on "
            + (f"suite {doc['suite']}" if doc["suite"] else "no bench suite yet"),
            "",
            f"Paper: {paper['url']}. Cells: {doc['summary']}.",
            "",
            *attribution_markdown(doc, "../.."),
            "Verdict rules (computed, never typed in):",
            "",
            *rules_text(doc["rules"]),
            "",
            *cell_table(doc),
            "",
        ]
    return "\n".join(lines)


def attribution_markdown(doc: dict[str, Any], checkout: str | None) -> list[str]:
    """The document's attribution line with its link (to the doc page's section, the page
    given relative to `checkout`, or within the page itself when `checkout` is None), and a
    blank line; nothing when the document has none."""
    attr = doc.get("attribution")
    if not attr:
        return []
    target = (
        f"#{attr['anchor']}" if checkout is None else f"{checkout}/{attr['page']}#{attr['anchor']}"
    )
    return [f"{attr['text']} The attribution: [{attr['section']}]({target}).", ""]


def reproduction_json(docs: list[dict[str, Any]]) -> str:
    """reproduction.json: the documents, keys sorted, for diffing and tests."""
    return json.dumps({"reproductions": docs}, indent=1, sort_keys=True) + "\n"


def paper_report(paper: str, leaderboards: Path) -> list[dict[str, Any]]:
    """`bench reproduce PAPER`: the paper's documents for each suite it names, from the
    committed leaderboards under `leaderboards` (a suite without one: every cell not run)."""
    reference = load_reference(paper)
    docs = []
    for suite in reference.suites():
        path = Path(leaderboards) / suite / "leaderboard.json"
        rows = json.loads(path.read_text())["rows"] if path.is_file() else None
        docs.append(reproduction(reference, suite, rows, Path(leaderboards)))
    unassigned = [c for c in reference.cells if not c.suite]
    if unassigned:
        docs.append(reproduction(reference, "", None))
    return docs


def _why_not_run(doc: dict[str, Any], entry: dict[str, Any]) -> str:
    """Why a cell has no answer: no suite, no committed board of its suite, or no row."""
    detail = entry["note"] or entry["difference"]
    if not doc["suite"]:
        return detail or "no bench suite runs this setting"
    if all(c["bench"] is None for c in doc["cells"]):
        return f"no committed {doc['suite']} leaderboard ({detail})" if detail else ""
    return detail


# A verdict that says a cell or check was judged on a committed row (not "not run", and not
# a substitute cell in no check, which gets no verdict at all).
UNJUDGED = (NOT_RUN, NO_DIRECTION)
# How a headline is counted, strongest first: what its coverage table says of it.
LIKE_FOR_LIKE, ANY_RUN, ANY_CELL, NONE = (
    "like-for-like, run",
    "run, substitutes only",
    "cells, none run",
    "nothing answers it",
)


def _headline_count(
    h: Headline,
    verdict: dict[str, str],
    klass: dict[str, str],
    trend: dict[str, dict[str, Any]],
) -> str:
    """Which of the three counts a headline is in (LIKE_FOR_LIKE includes ANY_RUN includes
    ANY_CELL): a like-for-like cell or check with a run verdict, any run verdict, any cell."""
    cells = [(verdict.get(c, NOT_RUN), klass.get(c) in COMPARABLE) for c in h.cells]
    checks = [(t["verdict"], not t["direction_only"]) for tid in h.trends if (t := trend.get(tid))]
    judged = [(v, comparable) for v, comparable in cells + checks if v not in UNJUDGED]
    if any(comparable for _, comparable in judged):
        return LIKE_FOR_LIKE
    if judged:
        return ANY_RUN
    return ANY_CELL if h.covered else NONE


def coverage(reference: Reference, docs: list[dict[str, Any]]) -> dict[str, Any]:
    """The paper's headline results and what answers each: the verdicts of its cells and
    trend checks, or the reason none can, and three counts, the first the headline one:
    `like_for_like` (a same or scaled cell, or a check over such cells, with a run verdict),
    `run` (any run verdict, substitutes included) and `covered` (any cell or check at all).
    A cell that never ran is "not run" in every count."""
    verdict = {e["id"]: e["verdict"] for d in docs for e in d["cells"]}
    klass = {e["id"]: e["class"] for d in docs for e in d["cells"]}
    why = {e["id"]: _why_not_run(d, e) for d in docs for e in d["cells"]}
    trend = {t["id"]: t for d in docs for t in d["trends"]}
    lines = []
    for h in reference.headlines:
        unanswered = [c for c in h.cells if verdict.get(c, NOT_RUN) == NOT_RUN]
        unanswered_checks = [
            t for t in h.trends if trend.get(t, {}).get("verdict", NOT_RUN) == NOT_RUN
        ]
        reasons = list(dict.fromkeys(why.get(c, "") for c in unanswered if why.get(c)))
        reasons += [trend[t]["why"] for t in unanswered_checks if t in trend and not h.cells]
        tally = Counter(
            [verdict.get(c, NOT_RUN) for c in h.cells]
            + [trend.get(t, {}).get("verdict", NOT_RUN) for t in h.trends]
        )
        lines.append(
            {
                "id": h.id,
                "source": h.source,
                "what": h.what,
                "cells": len(h.cells),
                "trends": len(h.trends),
                "verdicts": dict(sorted(tally.items())),
                "reason": h.reason or "; ".join(dict.fromkeys(reasons)),
                "covered": h.covered,
                "counted": _headline_count(h, verdict, klass, trend),
            }
        )
    return {
        "headlines": lines,
        "like_for_like": sum(h["counted"] == LIKE_FOR_LIKE for h in lines),
        "run": sum(h["counted"] in (LIKE_FOR_LIKE, ANY_RUN) for h in lines),
        "covered": sum(h["covered"] for h in lines),
        "total": len(lines),
    }


def coverage_counts(cov: dict[str, Any]) -> str:
    """The three counts in words, the like-for-like one first (the headline count)."""
    total = cov["total"]
    return (
        f"{cov['like_for_like']} of {total} answered like-for-like with a run verdict; "
        f"{cov['run']} of {total} with any run verdict (substitutes included); "
        f"{cov['covered']} of {total} with any cell or check"
    )


# ------------------------------------------------------------------------ doc pages

DOC_BEGIN = "<!-- reproduction:begin (written by `bench reproduce {paper} --docs`; do not edit) -->"
DOC_END = "<!-- reproduction:end -->"


def total_counts(docs: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Verdict counts by class summed over a paper's documents."""
    out: dict[str, Counter[str]] = {"like-for-like": Counter(), "substitute": Counter()}
    for doc in docs:
        for label, counts in doc["counts_by_class"].items():
            out[label].update(counts)
    return {k: {v: c[v] for v in VERDICTS if c[v]} for k, c in out.items()}


def coverage_lines(cov: dict[str, Any]) -> list[str]:
    """The headline-coverage table of a paper (Markdown), led by its three counts."""
    lines = [
        f'Headline results: {coverage_counts(cov)}. A cell that never ran is "not run" in '
        "every count, with the reason.",
        "",
        "| headline | source | what | cells / checks | counted as | verdicts | why not run |",
        "|---|---|---|---|---|---|---|",
    ]
    for h in cov["headlines"]:
        verdicts_ = ", ".join(f"{n} {v}" for v, n in h["verdicts"].items()) or "—"
        row = [
            h["id"],
            h["source"],
            h["what"],
            f"{h['cells']} / {h['trends']}",
            h["counted"],
            verdicts_,
            h["reason"] or "—",
        ]
        lines.append("| " + " | ".join(_esc(c) for c in row) + " |")
    return lines


def docs_block(paper: str, leaderboards: Path, link_root: str = "../leaderboards") -> str:
    """The block a paper's doc page leads with: the verdict counts split by class and the
    headline coverage, then per suite its committed reproduction table (so every number in it
    is a committed one), then the cells no suite answers."""
    reference = load_reference(paper)
    docs = paper_report(paper, leaderboards)
    cov = coverage(reference, docs)
    lines = [
        DOC_BEGIN.format(paper=paper),
        "",
        "## Reproduction of the paper's headline numbers",
        "",
        f"All cells: {summary_line(total_counts(docs))}.",
        "",
        *coverage_lines(cov),
        "",
        "Verdict rules (computed, never typed in):",
        "",
        *rules_text(dict(RULES)),
    ]
    for doc in docs:
        suite = doc["suite"]
        if not suite:
            lines += ["", f"**Cells no bench suite answers yet**: {doc['summary']}.", ""]
            lines += [line for line in cell_table(doc) if line]
            continue
        if all(c["bench"] is None for c in doc["cells"]):
            lines += ["", f"**{suite}**: no committed leaderboard yet ({doc['summary']})."]
            continue
        lines += [
            "",
            f"**{suite}**{_link(leaderboards, suite, link_root)}: {doc['summary']}.",
            "",
            *attribution_markdown(doc, None),
        ]
        lines += [line for line in cell_table(doc) if line]
    lines += ["", DOC_END]
    return "\n".join(lines) + "\n"


def _link(leaderboards: Path, suite: str, link_root: str) -> str:
    """A link to the suite's committed reproduction.md, or nothing if none is committed
    (the leaderboard predates the reference table: re-run the suite to write it)."""
    if not (Path(leaderboards) / suite / "reproduction.md").is_file():
        return " (from its committed leaderboard.json; no reproduction.md written yet)"
    return f" ([reproduction.md]({link_root}/{suite}/reproduction.md))"


def replace_docs_block(text: str, block: str) -> str:
    """`text` with its reproduction block replaced by `block` (inserted after the title when
    the page has none yet)."""
    begin = text.find("<!-- reproduction:begin")
    if begin >= 0:
        end = text.index(DOC_END, begin) + len(DOC_END)
        return text[:begin] + block.rstrip("\n") + text[end:]
    title_end = text.index("\n") + 1
    return text[:title_end] + "\n" + block + text[title_end:]
