"""The site index, leaderboards/index.html: the tracks first (one compact table per track:
the top settings of each empirical band, with their claim and audit), then the paper
reproductions (one line per paper with a reference table: its like-for-like verdict counts,
its headline coverage and its suites), then every other board (attack strength, solver
comparisons, anything no paper names) and the studies under studies/ where that folder
exists; every suite linked to its own page."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.fsutil import atomic_write
from bench.report.board.heading import (
    board_heading,
    shipped_references,
    split_lead,
    track_title,
)
from bench.report.board.html import template_environment
from bench.report.board.labels import WORST_CASE
from bench.report.board.load import board_kind, load_leaderboard
from bench.report.board.suite_info import shipped_kinds
from bench.report.reproduce.reproduction import (
    VERDICTS,
    coverage,
    coverage_counts,
)
from bench.suite.read import DEFAULT_KIND

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
    kind: str = DEFAULT_KIND  # the board's kind (bench.report.board.load.board_kind)
    title: str = ""  # the board page's title (bench.report.board.heading)

    @property
    def lead(self) -> tuple[str, str]:
        """The description's first sentence and the rest: the index shows the first and
        folds the rest, so a long suite description does not bury the table."""
        return split_lead(self.description)

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
        heading = board_heading(doc)
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
                kind=board_kind(doc),
                title=heading.title,
            )
        )
    return entries


@dataclass(frozen=True)
class TrackTable:
    """One task of a committed track: the top settings of each empirical band."""

    task: str
    utility: str  # the utility's words
    score: str  # the attack score's words
    bands: list[dict[str, Any]]
    floor_rule: str


def track_tables(root: Path, entry: SuiteEntry) -> list[TrackTable]:
    """The compact ranked tables of a committed track board (its tasks in the suite file's
    order), from the same summary its page opens on."""
    from bench.plugin.families import load_families
    from bench.report.board.html import task_overviews
    from bench.report.board.write import declared_utility_metrics

    doc = load_leaderboard(Path(root) / entry.link.split("/")[0] / "leaderboard.json")
    load_families(r["mechanism"] for r in doc["rows"])
    overviews = task_overviews(doc, declared_utility_metrics({r["task"] for r in doc["rows"]}))
    return [
        TrackTable(task, o["utility_words"], o["score_words"], o["empirical"], o["floor_rule"])
        for task, o in overviews.items()
    ]


@dataclass(frozen=True)
class PaperSuite:
    """A suite a paper's reference table names: its committed board, if any, and the
    like-for-like verdict counts of the paper's cells on it."""

    name: str
    entry: SuiteEntry | None
    like_for_like: dict[str, int]
    substitute: dict[str, int]


@dataclass(frozen=True)
class PaperLine:
    """One paper with a reference table: its name, title and address, the verdict counts of
    its like-for-like and of its substitute cells over its committed suites, its headline
    coverage and its suites."""

    id: str
    name: str
    title: str
    url: str
    like_for_like: dict[str, int]
    substitute: dict[str, int]
    coverage: str  # bench.report.reproduce.reproduction.coverage_counts
    headline: tuple[int, int]  # (answered like-for-like with a run verdict, headlines)
    suites: list[PaperSuite]


def paper_lines(root: Path, entries: list[SuiteEntry]) -> list[PaperLine]:
    """One line per shipped reference table, its counts read off the committed
    reproduction.json of each suite it names (a suite with no committed board: not run)."""
    by_name = {e.name: e for e in entries}
    lines = []
    for reference in shipped_references():
        docs, suites = [], []
        for suite in reference.suites():
            mine = [
                d
                for d in _reproductions(Path(root) / suite / "reproduction.json")
                if d["paper"]["id"] == reference.id
            ]
            docs += mine
            suites.append(
                PaperSuite(
                    suite,
                    by_name.get(suite),
                    _class_counts(mine, "like-for-like"),
                    _class_counts(mine, "substitute"),
                )
            )
        cov = coverage(reference, docs)
        lines.append(
            PaperLine(
                id=reference.id,
                name=reference.name,
                title=reference.title,
                url=reference.url,
                like_for_like=_class_counts(docs, "like-for-like"),
                substitute=_class_counts(docs, "substitute"),
                coverage=coverage_counts(cov),
                headline=(cov["like_for_like"], cov["total"]),
                suites=suites,
            )
        )
    return lines


def _class_counts(docs: list[dict[str, Any]], klass: str) -> dict[str, int]:
    """Verdict -> cells of one comparability class over reproduction documents."""
    counts: dict[str, int] = {}
    for doc in docs:
        for verdict, n in (doc.get("counts_by_class") or {}).get(klass, {}).items():
            counts[verdict] = counts.get(verdict, 0) + n
    return {v: counts[v] for v in VERDICTS if counts.get(v)}


@dataclass(frozen=True)
class StudyEntry:
    """A study under studies/: its title (its README's heading), its README and its
    committed boards, as (name, link relative to the site root)."""

    name: str
    title: str
    readme: str
    boards: list[tuple[str, str]]


def study_entries(root: Path, studies: Path | None) -> list[StudyEntry]:
    """Every studies/<study>/ with a README.md, its boards under boards/<name>/; none when
    the folder does not exist."""
    if studies is None or not studies.is_dir():
        return []
    out = []
    for folder in sorted(p for p in studies.iterdir() if (p / "README.md").is_file()):
        readme = folder / "README.md"
        heading = next(
            (
                ln[2:].strip()
                for ln in readme.read_text("utf-8").splitlines()
                if ln.startswith("# ")
            ),
            folder.name,
        )
        boards = []
        for board in sorted((folder / "boards").glob("*/leaderboard.json")):
            page = board.parent / "index.html"
            target = page if page.is_file() else board.parent / "leaderboard.md"
            boards.append((board.parent.name, os.path.relpath(target, root)))
        out.append(
            StudyEntry(
                name=folder.name,
                title=heading.removeprefix("Study: "),
                readme=os.path.relpath(readme, root),
                boards=boards,
            )
        )
    return out


def default_studies(root: Path) -> Path:
    """Where a site's studies live: studies/ beside its leaderboards folder."""
    return Path(root).resolve().parent / "studies"


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
    root: Path,
    descriptions: dict[str, str],
    versions: dict[str, str] | None = None,
    studies: Path | None = None,
) -> str:
    """The site index page over the suites under `root` and the studies under `studies`
    (default: studies/ beside `root`); a one-line error when no suite has a board."""
    entries = suite_entries(root, descriptions, versions)
    if not entries:
        raise BenchError(f"no leaderboard under {root}/*/leaderboard.json; run a suite first")
    papers = paper_lines(root, entries)
    named = {s.name for p in papers for s in p.suites}
    tracks = [e for e in entries if e.kind == "track"]
    committed = {e.name for e in entries}
    unrun = [
        (name, track_title(name, descriptions.get(name, ""), []))
        for name, kind in shipped_kinds().items()
        if kind == "track" and name not in committed
    ]
    template = template_environment().get_template("site.html.j2")
    return template.render(
        tracks=[(e, track_tables(root, e)) for e in tracks],
        unrun_tracks=unrun,
        papers=papers,
        suites=[e for e in entries if e.kind != "track" and e.name not in named],
        studies=study_entries(root, default_studies(root) if studies is None else studies),
        generator=GENERATOR,
    )


def write_site_index(
    root: Path,
    descriptions: dict[str, str],
    versions: dict[str, str] | None = None,
    studies: Path | None = None,
) -> Path:
    """Write `root/index.html` (`render_site_index`) atomically; for the checkout's own
    leaderboards/, also its docs/*.md as HTML (bench.report.reproduce.docs_pages), which the suite
    pages' "docs" links open."""
    from bench.data.locations import checkout_root
    from bench.report.reproduce.docs_pages import write_doc_pages

    index = Path(root) / "index.html"
    page = render_site_index(root, descriptions, versions, studies)
    atomic_write(index, page.encode("utf-8"))
    checkout = checkout_root()
    if checkout is not None and Path(root).resolve() == (checkout / "leaderboards").resolve():
        write_doc_pages(checkout / "docs")
    return index
