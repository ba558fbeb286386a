"""Paper tables against bench's leaderboards: each headline cell a seed paper reports (its
reference table, bench/reference/<paper>.toml), the bench row that answers it, and a verdict
computed from the numbers by the rules in `RULES`, never typed in.

A cell names its suite, task, mechanism, a subset of the row's params and the attack ("" for
the utility row); exactly one row of the suite's leaderboard may match. The verdicts:

- reproduced: the paper's value lies inside the bench row's 95% CI (widened on each side by
  the cell's stated `rel_tolerance` x |paper value|, 0 unless the paper states a limit or an
  approximate value, e.g. "converges to tau^2").
- trend reproduced: not inside the CI, but the cell is in a trend group (>= 3 cells sharing a
  `trend` key, all answered) whose order bench keeps: no pair the paper orders is reversed by
  bench with disjoint CIs, and at least one pair the paper orders bench orders the same way
  with disjoint CIs; and the cell's own row is not at chance (its utility CI does not reach
  the best constant predictor): a row a constant predictor matches says nothing about where
  the paper's value lies in the order.
- not reproduced: answered, but neither of the above.
- not run: no suite, no leaderboard for it, no matching row, or the row lacks the metric.
"""

from __future__ import annotations

import json
import tomllib
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from importlib import resources
from itertools import combinations
from pathlib import Path
from typing import Any

from bench.errors import ConfigError
from bench.hashing import canonical_json

REPRODUCED = "reproduced"
TREND = "trend reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_RUN = "not run"
VERDICTS = (REPRODUCED, TREND, NOT_REPRODUCED, NOT_RUN)
RULES = (
    "reproduced: the paper's value lies inside the bench row's 95% CI (widened by the cell's "
    "stated relative tolerance, 0 unless the paper states a limit or an approximate value). "
    "trend reproduced: outside the CI, but in a trend group (>= 3 answered cells sharing a "
    "trend key) whose order bench keeps: no pair the paper orders is reversed by bench with "
    "disjoint CIs, and at least one pair is ordered the paper's way with disjoint CIs; and the "
    "cell's own row is not at chance. "
    "not reproduced: answered, neither of the above. "
    "not run: no suite, no leaderboard, no matching row or no such metric."
)
MIN_TREND = 3
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
    "difference": str,
    "trend": str,
    "rel_tolerance": float,
}
_OPTIONAL = {"attack_params": {}, "difference": "", "trend": "", "attack": "", "rel_tolerance": 0.0}


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
    attack: str = ""
    attack_params: dict[str, Any] = field(default_factory=dict, hash=False)
    difference: str = ""
    trend: str = ""
    rel_tolerance: float = 0.0


@dataclass(frozen=True)
class Reference:
    """A paper's reference table."""

    id: str
    title: str
    url: str
    cells: tuple[Cell, ...]

    def suites(self) -> list[str]:
        """The suites whose leaderboards answer some cell, in first-mention order."""
        return list(dict.fromkeys(c.suite for c in self.cells if c.suite))


def known_papers() -> list[str]:
    """Ids of the reference tables shipped in bench/reference."""
    folder = resources.files("bench") / "reference"
    if not folder.is_dir():
        return []
    names = (p.name for p in folder.iterdir())
    return sorted(n.removesuffix(".toml") for n in names if n.endswith(".toml"))


def load_reference(paper: str) -> Reference:
    """The reference table of `paper`; a ConfigError (one line) for an unknown paper or a
    malformed file."""
    if paper not in known_papers():
        raise ConfigError(f"no reference table for paper {paper!r}; known: {known_papers()}")
    path = resources.files("bench") / "reference" / f"{paper}.toml"
    return parse_reference(path.read_text(), f"bench/reference/{paper}.toml")


def parse_reference(text: str, where: str) -> Reference:
    """Parse and check a reference table (see the module docstring for the cell keys)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc})") from None
    head = data.get("paper")
    if not isinstance(head, dict) or not all(
        isinstance(head.get(k), str) for k in ("id", "title", "url")
    ):
        raise ConfigError(f"{where}: needs a [paper] table with id, title and url")
    cells, seen = [], set()
    for i, raw in enumerate(data.get("cell", [])):
        cells.append(_parse_cell(raw, f"{where}: cell {i + 1}"))
        if cells[-1].id in seen:
            raise ConfigError(f"{where}: cell id {cells[-1].id!r} appears twice")
        seen.add(cells[-1].id)
    if not cells:
        raise ConfigError(f"{where}: no [[cell]] entries")
    return Reference(head["id"], head["title"], head["url"], tuple(cells))


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
    return Cell(**values)


# ------------------------------------------------------------------------ matching


def _same(a: Any, b: Any) -> bool:
    """Parameter equality with ints and floats alike (1 == 1.0); booleans only equal
    booleans (True is not 1 here)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return canonical_json(a) == canonical_json(b)


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
    """The bench metric answering `cell` (value, ci, n, seeds), None when not run. More than
    one matching row is an error in the reference table: it must name one row."""
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
    metric = found[0]["metrics"][cell.metric]
    return {
        "value": metric["value"],
        "ci": list(metric["ci"]),
        "n": metric["n"],
        "seeds": found[0]["seeds"],
        "params": found[0]["params"],
        "at_chance": bool(found[0].get("at_chance")),
    }


# ------------------------------------------------------------------------ verdicts


def _within(paper: float, bench: dict[str, Any], rel_tolerance: float = 0.0) -> bool:
    lo, hi = bench["ci"]
    slack = rel_tolerance * abs(paper)
    return lo - slack <= paper <= hi + slack


def _trend_kept(group: list[tuple[Cell, dict[str, Any]]]) -> bool:
    """Bench keeps the paper's order over `group`: no significant reversal of a pair the
    paper orders, and at least one pair significantly in the paper's direction."""
    agreed = False
    for (a, ba), (b, bb) in combinations(group, 2):
        if a.value == b.value:
            continue
        low, high = (ba, bb) if a.value < b.value else (bb, ba)
        if low["ci"][0] > high["ci"][1]:  # bench orders them the other way, CIs disjoint
            return False
        if low["ci"][1] < high["ci"][0]:
            agreed = True
    return agreed


def verdicts(cells: list[Cell], answers: dict[str, dict[str, Any] | None]) -> dict[str, str]:
    """Cell id -> verdict, from the paper values and the bench answers (`answers[id]`)."""
    groups: dict[str, list[tuple[Cell, dict[str, Any]]]] = defaultdict(list)
    complete: dict[str, bool] = defaultdict(lambda: True)
    for cell in cells:
        if cell.trend:
            answer = answers.get(cell.id)
            if answer is None:
                complete[cell.trend] = False
            else:
                groups[cell.trend].append((cell, answer))
    kept = {
        key: complete[key] and len(group) >= MIN_TREND and _trend_kept(group)
        for key, group in groups.items()
    }
    out = {}
    for cell in cells:
        answer = answers.get(cell.id)
        if answer is None:
            out[cell.id] = NOT_RUN
        elif _within(cell.value, answer, cell.rel_tolerance):
            out[cell.id] = REPRODUCED
        elif cell.trend and kept.get(cell.trend, False) and not answer.get("at_chance"):
            out[cell.id] = TREND
        else:
            out[cell.id] = NOT_REPRODUCED
    return out


# ------------------------------------------------------------------------ reports


def reproduction(
    reference: Reference, suite: str, rows: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """The reproduction document of `suite` against `reference` (what reproduction.json
    holds): every cell of the paper that names this suite, with its verdict. Trend groups
    are judged over their cells in this suite."""
    cells = [c for c in reference.cells if c.suite == suite]
    answers = {c.id: bench_value(c, rows) for c in cells}
    verdict = verdicts(cells, answers)
    entries = [
        {
            "id": c.id,
            "source": c.source,
            "dataset": c.dataset,
            "model": c.model,
            "setting": c.setting,
            "metric": c.metric,
            "paper": c.value,
            "bench": answers[c.id],
            "difference": c.difference,
            "trend": c.trend,
            "rel_tolerance": c.rel_tolerance,
            "row": {
                "task": c.task,
                "mechanism": c.mechanism,
                "params": c.params,
                "attack": c.attack or None,
            },
            "verdict": verdict[c.id],
        }
        for c in cells
    ]
    return {
        "paper": {"id": reference.id, "title": reference.title, "url": reference.url},
        "suite": suite,
        "rules": RULES,
        "counts": {v: n for v in VERDICTS if (n := Counter(e["verdict"] for e in entries)[v])},
        "cells": entries,
    }


def references_for_suite(suite: str) -> list[Reference]:
    """Every paper whose reference table names `suite`."""
    return [ref for ref in map(load_reference, known_papers()) if suite in ref.suites()]


def suite_reproductions(suite: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The reproduction documents of `suite`, one per paper naming it (usually one)."""
    return [reproduction(ref, suite, rows) for ref in references_for_suite(suite)]


def _fmt(v: float) -> str:
    return f"{v:.4g}"


def _bench_text(b: dict[str, Any]) -> str:
    return f"{_fmt(b['value'])} [{_fmt(b['ci'][0])}, {_fmt(b['ci'][1])}]"


def reproduction_markdown(docs: list[dict[str, Any]]) -> str:
    """reproduction.md: per paper, the table paper value | bench value [CI] | setting
    difference | verdict, and the rules the verdicts follow."""
    lines: list[str] = []
    for doc in docs:
        paper = doc["paper"]
        counts = ", ".join(f"{doc['counts'].get(v, 0)} {v}" for v in VERDICTS)
        lines += [
            f"# Reproduction: {paper['title']} on "
            + (f"suite {doc['suite']}" if doc["suite"] else "no bench suite yet"),
            "",
            f"Paper: {paper['url']}. Cells: {counts}.",
            "",
            f"Verdict rules (computed, never typed in): {doc['rules']}",
            "",
            "| source | dataset / model | setting | metric | paper | bench [95% CI] | seeds "
            "| difference | verdict |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for e in doc["cells"]:
            b = e["bench"]
            bench = "—" if b is None else _bench_text(b)
            if b and b["at_chance"]:
                bench += " (at chance)"
            cells = [
                e["source"],
                f"{e['dataset']} / {e['model']}",
                e["setting"],
                e["metric"],
                _fmt(e["paper"]),
                bench,
                "—" if b is None else str(b["seeds"]),
                e["difference"] or "same",
                f"**{e['verdict']}**",
            ]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


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
        docs.append(reproduction(reference, suite, rows))
    unassigned = [c for c in reference.cells if not c.suite]
    if unassigned:
        docs.append(reproduction(reference, "", None))
    return docs


# ------------------------------------------------------------------------ doc pages

DOC_BEGIN = "<!-- reproduction:begin (written by `bench reproduce {paper} --docs`; do not edit) -->"
DOC_END = "<!-- reproduction:end -->"


def docs_block(paper: str, leaderboards: Path, link_root: str = "../leaderboards") -> str:
    """The block a paper's doc page leads with: per suite, the verdict counts and the table of
    its committed reproduction (so every number in it is a committed one), then the suites the
    paper names that have no leaderboard yet."""
    docs = paper_report(paper, leaderboards)
    lines = [
        DOC_BEGIN.format(paper=paper),
        "",
        "## Reproduction of the paper's headline numbers",
        "",
    ]
    lines.append(f"Verdict rules (computed, never typed in): {RULES}")
    for doc in docs:
        suite = doc["suite"]
        counts = ", ".join(f"{doc['counts'][v]} {v}" for v in VERDICTS if doc["counts"].get(v))
        if not suite:
            lines += ["", f"Cells no bench suite answers yet: {counts}."]
            continue
        if all(c["bench"] is None for c in doc["cells"]):
            lines += ["", f"**{suite}**: no committed leaderboard yet ({counts})."]
            continue
        lines += [
            "",
            f"**{suite}**{_link(leaderboards, suite, link_root)}: {counts}.",
            "",
        ]
        table = reproduction_markdown([doc]).splitlines()
        start = next(i for i, line in enumerate(table) if line.startswith("| source"))
        lines += [line for line in table[start:] if line]
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
