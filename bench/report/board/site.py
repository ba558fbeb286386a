"""The site index, leaderboards/index.html: one line per committed suite (its description,
tasks, rows, date, code version) linking to the suite's own page."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.fsutil import atomic_write
from bench.report.board.html import template_environment
from bench.report.board.labels import WORST_CASE
from bench.report.board.load import load_leaderboard
from bench.report.reproduce.reproduction import VERDICTS

GENERATOR = "bench leaderboard --all"  # marks a page as a site index bench may rewrite


def is_site_index(path: Path) -> bool:
    """True when `path` is a site index bench wrote (never clobber another index.html)."""
    try:
        return f'<meta name="generator" content="{GENERATOR}">' in path.read_text()
    except (OSError, UnicodeDecodeError):
        return False


@dataclass(frozen=True)
class SuiteEntry:
    """What the site index says of one committed suite."""

    name: str
    description: str
    tasks: list[str]
    settings: int  # (task, mechanism, params) rows a reader compares
    rows: int
    generated_at: str
    code_version: str
    suite_version: str
    link: str  # relative to the site root
    reproduction: dict[str, int]  # verdict -> cells, from reproduction.json (empty if none)
    seeds: int  # the fewest seeds behind any row: what every number rests on at least
    shipped_version: str | None = None  # the shipped suite's version now (None: not shipped)
    reproduction_link: str = ""  # the reproduction table, on the page when there is one

    @property
    def lead(self) -> tuple[str, str]:
        """The description's first sentence and the rest: the index shows the first and
        folds the rest, so a long suite description does not bury the table."""
        text = self.description
        for end in re.finditer(r"\. (?=[A-Z])", text):  # "Sec. 4", "et al. 2023" do not end one
            head = text[: end.start() + 1]
            if head.count("(") == head.count(")"):
                return head, text[end.end() :]
        return text, ""

    @property
    def outdated(self) -> bool:
        """The committed leaderboard ran an older version of the shipped suite."""
        return self.shipped_version is not None and self.shipped_version != self.suite_version


def suite_entries(
    root: Path, descriptions: dict[str, str], versions: dict[str, str] | None = None
) -> list[SuiteEntry]:
    """Every `root/<suite>/leaderboard.json`, read and validated, sorted by suite name;
    `versions` (suite -> shipped version) marks leaderboards of an older suite version."""
    entries = []
    for board in sorted(Path(root).glob("*/leaderboard.json")):
        doc = load_leaderboard(board)
        rows = doc["rows"]
        settings = {(r["task"], r["mechanism"], str(r["params"])) for r in rows}
        page = board.parent / "index.html"
        reproductions = _reproductions(board.parent / "reproduction.json")
        if reproductions and page.exists():
            first_paper = reproductions[0]["paper"]["id"]
            reproduction_link = f"{board.parent.name}/index.html#reproduction-{first_paper}"
        else:
            reproduction_link = f"{board.parent.name}/reproduction.md"
        entries.append(
            SuiteEntry(
                name=doc["suite"],
                description=descriptions.get(doc["suite"], ""),
                tasks=sorted({r["task"] for r in rows}),
                settings=len(settings),
                rows=sum(r["attack"] != WORST_CASE for r in rows),
                generated_at=doc["generated_at"],
                code_version=doc["code_version"],
                suite_version=doc["suite_version"],
                link=f"{board.parent.name}/{'index.html' if page.exists() else 'leaderboard.md'}",
                reproduction=_verdict_counts(reproductions),
                seeds=min((int(r["seeds"]) for r in rows), default=0),
                shipped_version=(versions or {}).get(doc["suite"]),
                reproduction_link=reproduction_link,
            )
        )
    return entries


def _reproductions(path: Path) -> list[dict[str, Any]]:
    """A suite's reproduction documents (reproduction.json), none when it has no file."""
    if not path.is_file():
        return []
    return json.loads(path.read_text())["reproductions"]


def _verdict_counts(reproductions: list[dict[str, Any]]) -> dict[str, int]:
    """Verdict -> number of paper cells over the suite's reproduction documents."""
    counts: dict[str, int] = {}
    for doc in reproductions:
        for verdict, n in doc["counts"].items():
            counts[verdict] = counts.get(verdict, 0) + n
    return {v: counts[v] for v in VERDICTS if counts.get(v)}


def render_site_index(
    root: Path, descriptions: dict[str, str], versions: dict[str, str] | None = None
) -> str:
    """The site index page over the suites under `root`; a one-line error when none is."""
    entries = suite_entries(root, descriptions, versions)
    if not entries:
        raise BenchError(f"no leaderboard under {root}/*/leaderboard.json; run a suite first")
    template = template_environment().get_template("site.html.j2")
    return template.render(suites=entries, generator=GENERATOR)


def write_site_index(
    root: Path, descriptions: dict[str, str], versions: dict[str, str] | None = None
) -> Path:
    """Write `root/index.html` (`render_site_index`) atomically; for the checkout's own
    leaderboards/, also its docs/*.md as HTML (bench.report.reproduce.docs_pages), which the suite
    pages' "docs" links open."""
    from bench.data.locations import checkout_root
    from bench.report.reproduce.docs_pages import write_doc_pages

    index = Path(root) / "index.html"
    atomic_write(index, render_site_index(root, descriptions, versions).encode("utf-8"))
    checkout = checkout_root()
    if checkout is not None and Path(root).resolve() == (checkout / "leaderboards").resolve():
        write_doc_pages(checkout / "docs")
    return index
