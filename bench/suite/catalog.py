"""What `bench list suites` shows of each suite, read without importing a component: its
kind, version, description, the size and job time of its committed board, and what it needs
that a fresh machine lacks (a full dataset, an accelerator). The shipped suites and a
checkout's studies (bench.suite.read.study_suites). Fast by design: TOML and JSON only."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.data.embedded import _BUILT_IN, ITEMS
from bench.report.tools.estimate import DEFAULT_WORKERS, WORST_CASE, board_total_seconds
from bench.report.tools.estimate import duration_text as _duration_text
from bench.suite import read
from bench.suite.read import KINDS, suite_kind

PLUMBING_ONLY = "plumbing only"  # an embedded item too small to train on


def _embedded_tasks() -> set[str]:
    """Tasks whose default data is embedded (fetched or shipped with a dependency)."""
    tasks = set(_BUILT_IN)
    for item in ITEMS:
        if PLUMBING_ONLY in item.used_by:
            continue
        tasks |= {part.strip().split(" ")[0] for part in item.used_by.split(",")}
    return tasks


@dataclass(frozen=True)
class SuiteEntry:
    """One suite as the catalogue lists it."""

    name: str
    version: str
    description: str
    jobs: int | None  # jobs of its committed board (None: no board committed)
    needs: tuple[str, ...]  # "full <task> data", "an accelerator"
    kind: str = "paper"  # bench.suite.read.KINDS
    expected_time: str | None = None  # its board's job time on DEFAULT_WORKERS, "~3.4 min"


def _board(board: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads((board / "leaderboard.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _board_jobs(doc: dict[str, Any]) -> int:
    """The number of jobs behind a committed board: seeds of every row a job computes."""
    rows = doc.get("rows", [])
    return sum(int(r.get("seeds") or 0) for r in rows if r.get("attack") != WORST_CASE)


def suite_entry(path: Path, boards: Path, default_kind: str = "paper") -> SuiteEntry:
    """The catalogue entry of the suite file `path`, its board looked up under `boards`."""
    raw: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
    name = str(raw.get("name", path.stem))
    embedded = _embedded_tasks()
    needs = [
        f"full {task['name']} data"
        for task in raw.get("task", [])
        if task.get("name") not in embedded
    ]
    if raw.get("device") not in (None, "cpu"):
        needs.append(f"an accelerator ({raw['device']})")
    doc = _board(boards / name)
    seconds = board_total_seconds(doc) if doc is not None else None
    return SuiteEntry(
        name=name,
        version=str(raw.get("version", "?")),
        description=" ".join(str(raw.get("description", "")).split()),
        jobs=_board_jobs(doc) if doc is not None else None,
        needs=tuple(dict.fromkeys(needs)),
        kind=suite_kind(raw, default_kind),
        expected_time=None if seconds is None else _duration_text(seconds / DEFAULT_WORKERS),
    )


def catalog(boards: Path) -> list[SuiteEntry]:
    """Every shipped suite and every study, by kind (tracks, papers, studies) then name; a
    study without a `kind` key is a study."""
    entries = [suite_entry(p, boards) for p in sorted(read.suite_dir().glob("*.toml"))]
    names = {e.name for e in entries}
    for path in read.study_suites().values():
        entry = suite_entry(path, boards, default_kind="study")
        if entry.name not in names:
            entries.append(entry)
    order = {kind: i for i, kind in enumerate(KINDS)}
    return sorted(entries, key=lambda e: (order.get(e.kind, len(order)), e.name))


def committed_boards() -> Path:
    """Where the committed boards are read from (bench.core.places.boards_root)."""
    from bench.core.places import boards_root

    return boards_root().path
