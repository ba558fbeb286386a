"""Where a paper's values are reached only by releases whose privacy claim bench refutes
(`[[attribution]]` in a reference table): the one line a suite's reproduction page says
about its gap, computed from the committed boards that study it, and said only when it is
what their rows show.

For each like-for-like cell of the suite that bench does not reproduce, the rows of the
named boards (the suite's own included) of the same task, mechanism and matched parameters
are searched for one whose 95% CI reaches the paper's value (its upper end at or above it,
the metric being one a higher value is better on). The line is written when some cell is
reached and every reaching row is flagged (`unreliable`: bench refutes its claim), so that
"only by releases bench refutes" holds for every value it counts.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.metrics import METRICS
from bench.report.reproduce.comparisons import same_param
from bench.report.reproduce.verdicts import COMPARABLE, NOT_REPRODUCED

_KEYS = {"suite", "source", "boards", "match", "page", "section"}


@dataclass(frozen=True)
class Attribution:
    """A suite whose page says where the paper's values are reached: the paper's table
    (`source`), the boards searched, the parameters a row shares with a cell (`match`) and
    the doc page section that attributes the gap (the link)."""

    suite: str
    source: str
    boards: tuple[str, ...]
    match: tuple[str, ...]
    page: str
    section: str

    @property
    def anchor(self) -> str:
        """The section's anchor as GitHub writes it (lower case, punctuation dropped, spaces
        to hyphens)."""
        slug = re.sub(r"[^\w\- ]", "", self.section.lower())
        return slug.replace(" ", "-")


def parse_attribution(raw: Any, where: str) -> Attribution:
    """One `[[attribution]]` table (one-line ConfigError otherwise)."""
    if not isinstance(raw, dict) or set(raw) != _KEYS:
        raise ConfigError(f"{where}: needs exactly {sorted(_KEYS)}")
    lists = ("boards", "match")
    if not all(isinstance(raw[k], list) and raw[k] for k in lists) or not all(
        isinstance(raw[k], str) for k in _KEYS - set(lists)
    ):
        raise ConfigError(f"{where}: boards and match are non-empty lists, the rest strings")
    return Attribution(
        raw["suite"],
        raw["source"],
        tuple(raw["boards"]),
        tuple(raw["match"]),
        raw["page"],
        raw["section"],
    )


def board_rows(root: Path, boards: tuple[str, ...]) -> dict[str, list[dict[str, Any]]]:
    """The committed rows of each board that has a leaderboard.json: a board's name is its
    directory under `root` (the committed leaderboards), a path (a study's board, e.g.
    studies/<study>/boards/<name>) is taken from the project root beside `root`. Rows are
    keyed by the board's own name."""
    out = {}
    for board in boards:
        folder = Path(root).parent / board if "/" in board else Path(root) / board
        path = folder / "leaderboard.json"
        if path.is_file():
            out[Path(board).name] = json.loads(path.read_text())["rows"]
    return out


def _reaches(row: dict[str, Any], metric: str, paper: float) -> bool:
    entry = row["metrics"].get(metric)
    return entry is not None and float(entry["ci"][1]) >= paper


def _candidates(
    attr: Attribution, entry: dict[str, Any], rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The utility rows of `rows` that stand for the cell's setting (same task, mechanism and
    matched parameters)."""
    cell = entry["row"]
    return [
        r
        for r in rows
        if r["attack"] is None
        and r["task"] == cell["task"]
        and r["mechanism"] == cell["mechanism"]
        and all(
            k in r["params"]
            and k in cell["params"]
            and same_param(r["params"][k], cell["params"][k])
            for k in attr.match
        )
    ]


def attribution_line(
    attr: Attribution, entries: list[dict[str, Any]], boards: dict[str, list[dict[str, Any]]]
) -> dict[str, Any] | None:
    """{"text", "page", "anchor", "reached", "gaps"} for the suite's page, or None when the
    rows do not show it (no gap reached, or some reaching row not flagged)."""
    gaps = [
        e
        for e in entries
        if e["source"] == attr.source
        and e["class"] in COMPARABLE
        and e["verdict"] == NOT_REPRODUCED
        and e["paper"] is not None
        and math.isfinite(float(e["paper"]))
        and METRICS.get(e["metric"]) is not None
        and METRICS[e["metric"]].better == "higher"
    ]
    reached, used = 0, set()
    for entry in gaps:
        reaching = [
            (board, r)
            for board, rows in boards.items()
            for r in _candidates(attr, entry, rows)
            if _reaches(r, entry["metric"], float(entry["paper"]))
        ]
        if any(not r.get("unreliable") for _, r in reaching):
            return None  # a release that meets its claim reaches this value: not what we say
        if reaching:
            reached += 1
            used.update(board for board, _ in reaching)
    if not reached:
        return None
    names = ", ".join(Path(b).name for b in attr.boards if Path(b).name in used)
    text = (
        f"Where bench's rows reach the paper's {attr.source} values on this task, they are "
        f"releases whose privacy claim bench refutes: {reached} of the {len(gaps)} values "
        f"bench does not reproduce here are reached by rows of {names}, every one of them "
        "flagged, and by no release that meets its stated guarantee."
    )
    return {
        "text": text,
        "page": attr.page,
        "anchor": attr.anchor,
        "section": attr.section,
        "reached": reached,
        "gaps": len(gaps),
    }
