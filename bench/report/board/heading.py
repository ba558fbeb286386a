"""What a board's page and Markdown open with: what kind of board it is, a title that names
its track or its paper, and its suite's description.

A track's title names its task ("Fashion-MNIST track", from the suite description's lead
"The Fashion-MNIST track: ...", else the task's source dataset); a paper suite's names the
paper by short title and year ("Posthoc privacy (2023) reproduction: posthoc-mnist", from
the reference tables that name the suite); a study's says it is one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from bench.report.board.load import board_kind
from bench.report.board.suite_info import shipped_suite, suite_description
from bench.report.reproduce.reproduction import (
    Reference,
    known_papers,
    load_reference,
    task_source_dataset,
)

KIND_WORDS = {
    "track": "Track",
    "slice": "Track slice",
    "paper": "Paper reproduction",
    "study": "Study",
}
_TRACK_LEAD = re.compile(r"^The (.+?) track\b")


@dataclass(frozen=True)
class PaperLink:
    """A paper a board reproduces: its name for titles, full title and address."""

    name: str
    title: str
    url: str
    year: int | None = None


@dataclass(frozen=True)
class Heading:
    """A board's title, kind, the sentence saying what that kind means here, the papers it
    reproduces, and its suite's description split into the lead sentence and the rest."""

    kind: str
    title: str
    kind_words: str
    kind_line: str
    papers: tuple[PaperLink, ...]
    lead: str
    rest: str


@cache
def shipped_references() -> tuple[Reference, ...]:
    """Every shipped paper reference table, parsed once per process (a page and the site
    index ask for them once per board)."""
    return tuple(load_reference(paper) for paper in known_papers())


def references_naming(suite: str) -> list[Reference]:
    """The shipped reference tables that name `suite`."""
    return [ref for ref in shipped_references() if suite in ref.suites()]


def split_lead(text: str) -> tuple[str, str]:
    """A description's first sentence and the rest ("Sec. 4", "et al. 2023" and a full stop
    inside brackets end no sentence), so a page shows the first and folds the rest."""
    for end in re.finditer(r"\. (?=[A-Z])", text):
        head = text[: end.start() + 1]
        if head.count("(") == head.count(")"):
            return head, text[end.end() :]
    return text, ""


def track_title(suite: str, description: str, tasks: list[str]) -> str:
    """A track's title: "<X> track" from its description's "The X track", else from its one
    task's source dataset, else its suite name."""
    found = _TRACK_LEAD.match(description)
    if found:
        name = found[1]
        return f"{name[0].upper()}{name[1:]} track"
    sources = {task_source_dataset(t) for t in tasks}
    if len(sources) == 1 and None not in sources:
        return f"{sources.pop()} track"
    return f"{suite} track"


def _seeds(rows: list[dict[str, Any]]) -> int:
    return min((int(r["seeds"]) for r in rows), default=0)


def _partial(suite: str, seeds: int) -> str:
    """What a track board published on fewer seeds than its shipped suite declares adds to
    its first line (", of the N the track runs: ..."); "" otherwise."""
    declared = shipped_suite(suite).get("seeds")
    if not isinstance(declared, int) or isinstance(declared, bool) or declared <= seeds:
        return ""
    return f" of the {declared} the track runs: the others are not run yet"


def board_heading(doc: dict[str, Any]) -> Heading:
    """The heading of the board `doc` (a leaderboard.json document)."""
    suite, rows = doc["suite"], doc["rows"]
    kind = board_kind(doc)
    description = suite_description(suite)
    lead, rest = split_lead(description)
    papers = tuple(PaperLink(r.name, r.title, r.url, r.year) for r in references_naming(suite))
    tasks = sorted({r["task"] for r in rows})
    seeds = _seeds(rows)
    if kind == "track":
        title = track_title(suite, description, tasks)
        line = (
            "A track: one standard task, one attack battery, one scoring rule and fixed "
            "seeds, so its entries are ranked against each other; every row here rests on "
            f"{seeds} seed{'' if seeds == 1 else 's'}{_partial(suite, seeds)}."
        )
    elif kind == "slice":
        title = f"Track slice: {suite}"
        line = (
            "A slice of the standard tracks: a few of their settings, each row the same job "
            "as the track's (task, parameters, battery, scoring and seed), so it checks them "
            "in minutes; the ranking is the tracks'."
        )
    elif kind == "study":
        title = f"Study: {suite}"
        line = (
            "A study: a research question about bench or a paper; its rows are a record of "
            "what was measured, not a ranking."
        )
    elif papers:
        title = f"{' and '.join(p.name for p in papers)} reproduction: {suite}"
        line = (
            "the paper's settings re-run by bench, each headline number the paper reports "
            "beside the bench row that answers it, with a computed verdict."
        )
    else:
        title = f"bench leaderboard: {suite}"
        line = (
            "A paper board no paper's reference table names yet: none of its numbers is held "
            "against a paper's."
        )
    return Heading(kind, title, KIND_WORDS[kind], line, papers, lead, rest)
