"""What `bench list suites` shows of each shipped suite, read without importing a component:
its version, description, the size of its committed board, and what it needs that a fresh
machine lacks (a full dataset, an accelerator). Fast by design: TOML and JSON only."""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.data.embedded import _BUILT_IN, ITEMS
from bench.data.locations import checkout_root

PLUMBING_ONLY = "plumbing only"  # an embedded item too small to train on
WORST_CASE = (
    "worst case"  # bench.report.board.labels.WORST_CASE: rows no job computes (no torch here)
)


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


def _board_jobs(board: Path) -> int | None:
    """The number of jobs behind a committed board: seeds of every row a job computes."""
    try:
        doc = json.loads((board / "leaderboard.json").read_text())
    except (OSError, ValueError):
        return None
    rows = doc.get("rows", [])
    return sum(int(r.get("seeds") or 0) for r in rows if r.get("attack") != WORST_CASE)


def suite_entry(path: Path, boards: Path) -> SuiteEntry:
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
    return SuiteEntry(
        name=name,
        version=str(raw.get("version", "?")),
        description=" ".join(str(raw.get("description", "")).split()),
        jobs=_board_jobs(boards / name),
        needs=tuple(dict.fromkeys(needs)),
    )


def committed_boards() -> Path:
    """Where the committed boards are: the checkout's leaderboards/ when bench runs from one,
    else leaderboards/ in the current directory."""
    root = checkout_root()
    return (root or Path(".")) / "leaderboards"
