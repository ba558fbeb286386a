"""Which committed leaderboards still show what `bench run` would give today.

A board is stamped with its suite's version and the code version of its jobs
(bench.api.code_version_of). It is stale when the suite file's version or any of its jobs'
code changed since it was written: its numbers may then differ from a re-run's, and a
reader should know before quoting them. A plug-in's own code and its distribution's
version are part of its jobs' code version (bench.core.codeversion), so a board whose
plug-in moved is stale too, and `plugin_code_moved` names the plug-in components whose rows
were made by other code than theirs now. Paper-scale suites that were never run here have
no board, which is said, not counted as stale.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.report.board.load import load_leaderboard

if TYPE_CHECKING:
    from bench.run.job import Job

CURRENT, STALE, UNCHECKED, NO_BOARD = "current", "stale", "unchecked", "no board"
STATES = (CURRENT, STALE, UNCHECKED, NO_BOARD)


@dataclass(frozen=True)
class BoardStatus:
    """One suite's committed board against the suite and code of now."""

    suite: str
    state: str  # one of STATES
    reasons: tuple[str, ...]  # why stale ("suite version 2 -> 3", "code A -> B") or unchecked
    generated_at: str | None


def has_board(board_dir: Path) -> bool:
    return (board_dir / "leaderboard.json").exists()


def no_board(suite: str) -> BoardStatus:
    """A suite with no committed board (a paper-scale suite never run here)."""
    return BoardStatus(suite, NO_BOARD, (), None)


def unchecked(suite: str, board_dir: Path, why: str) -> BoardStatus:
    """A board whose suite cannot be expanded here (its data is not installed, say)."""
    board = load_leaderboard(board_dir / "leaderboard.json")
    return BoardStatus(suite, UNCHECKED, (why,), str(board["generated_at"]))


def board_status(
    suite: str,
    suite_version: str,
    code_version: str,
    board_dir: Path,
    moved: Callable[[dict[str, Any]], list[str]] | None = None,
) -> BoardStatus:
    """Compare the board in `board_dir` with the suite's version and code version now;
    `moved` names, from the board, the plug-in components whose code moved since
    (`plugin_code_moved`), said as a reason of its own."""
    if not has_board(board_dir):
        return no_board(suite)
    board = load_leaderboard(board_dir / "leaderboard.json")
    reasons = []
    if str(board["suite_version"]) != str(suite_version):
        reasons.append(f"suite version {board['suite_version']} -> {suite_version}")
    if board["code_version"] != code_version:
        reasons.append(f"code {board['code_version']} -> {code_version}")
        plugins = moved(board) if moved is not None else []
        if plugins:
            reasons.append(f"plug-in code moved: {', '.join(plugins)}")
    return BoardStatus(
        suite, STALE if reasons else CURRENT, tuple(reasons), str(board["generated_at"])
    )


def plugin_code_moved(board: dict[str, Any], jobs: list[Job], plugins: set[str]) -> list[str]:
    """The components named in `plugins` (the suite's components that are plug-ins') of the
    board's rows whose recorded code version differs from that of their jobs now
    (bench.report.board.provenance), sorted."""
    from bench.report.board.provenance import jobs_of_rows, provenance_of

    moved: set[str] = set()
    rows = board.get("rows", [])
    for row, found in zip(rows, jobs_of_rows(rows, jobs), strict=True):
        recorded = (row.get("provenance") or {}).get("code_version")
        if not found or recorded is None:
            continue
        if provenance_of(found, "")["code_version"] != recorded:
            parts = (row.get("task"), row.get("mechanism"), row.get("attack"))
            moved |= {name for name in parts if name in plugins}
    return sorted(moved)


def status_lines(statuses: list[BoardStatus]) -> list[str]:
    """A line per suite, then a count: what `bench status` prints."""
    width = max((len(s.suite) for s in statuses), default=5)
    lines = []
    for s in statuses:
        when = f"  (board of {s.generated_at[:10]})" if s.generated_at else ""
        why = f": {'; '.join(s.reasons)}" if s.reasons else ""
        lines.append(f"{s.suite:<{width}}  {s.state}{why}{when}")
    counts = {state: sum(s.state == state for s in statuses) for state in STATES}
    lines.append(", ".join(f"{n} {state}" for state, n in counts.items() if n))
    return lines
