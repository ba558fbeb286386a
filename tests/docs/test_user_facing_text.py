"""User-facing text speaks of the project, not of how it was built: papers by title and
year, runs by suite version and date. The README, the changelog, the docs, the reproduction
READMEs, the suite files and the report templates must not carry internal milestone names
("stop 42"), tracker numbers ("issue 6") or the names of the papers' local copies ("seed
003", "seed paper"). A file name a reader clicks is user-facing too: record files under docs/
are named by the date they were first committed (profile-ip-fmnist-2026-11-27.txt).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT

# Case-insensitive: "Stop 44's search", "Issue 22 made ...", "Seed 004 (...)" are hits too.
FORBIDDEN = [
    re.compile(r"\bstop[ -]?\d", re.I),
    re.compile(r"\bissues? \d", re.I),
    re.compile(r"\bseed 00\d", re.I),
    re.compile(r"seed paper", re.I),
    # A milestone token inside a file name: `region_search_stop44.txt`, `make-run-stop40.txt`.
    re.compile(r"[_-]stop\d", re.I),
]
# A milestone token in a path: `stop` followed by digits.
MILESTONE_IN_PATH = re.compile(r"stop\d", re.I)


def user_facing_files(root: Path) -> list[Path]:
    """The files a reader of the project sees as prose: no generated pages, no code."""
    files = [root / "README.md", root / "CONTRIBUTING.md", root / "CHANGELOG.md"]
    files += [root / "datasets" / "README.md"]
    files += [root / "tests" / "README.md"]
    files += sorted((root / "docs").glob("*.md"))
    files += sorted((root / "docs" / "reproductions").glob("**/README.md"))
    files += sorted((root / "bench" / "suite" / "files").glob("*.toml"))
    files += sorted(
        p for p in (root / "bench" / "report" / "board" / "templates").glob("*") if p.is_file()
    )
    files += sorted((root / "mechanisms").glob("*/README*"))
    return [p for p in files if p.is_file()]


def history_mentions(path: Path, root: Path) -> list[str]:
    """Every line of `path` that names an internal milestone, tracker entry or seed copy,
    as 'file:line: text' (file names included: a name a reader clicks is user-facing)."""
    hits = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if any(pattern.search(line) for pattern in FORBIDDEN):
            hits.append(f"{path.relative_to(root)}:{number}: {line.strip()[:120]}")
    return hits


def test_the_scanner_flags_history_and_record_names_with_milestones(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (tmp_path / "README.md").write_text(
        "402 jobs, 32 min 27 s on 2026-11-27 (`profile-lucid-adult-2026-11-27a.txt`).\n"
        "See `profile-lucid-adult-stop41.txt`.\n"
        "32 min 27 s at stop 42.\n"
        "The search record region_search_stop44.txt.\n"
        "A nonstop run of 2 hours, stopped 3 times.\n"
    )
    (docs / "lucid.md").write_text(
        "# LUCID (Seed 003)\nThe stop-30 board.\nIssue 6's headline case.\nThe dFIL seed paper.\n"
    )
    hits = [h for p in user_facing_files(tmp_path) for h in history_mentions(p, tmp_path)]
    assert [h.split(": ", 1)[0] for h in hits] == [
        "README.md:2",
        "README.md:3",
        "README.md:4",
        "docs/lucid.md:1",
        "docs/lucid.md:2",
        "docs/lucid.md:3",
        "docs/lucid.md:4",
    ]


def test_user_facing_text_carries_no_development_history() -> None:
    files = user_facing_files(ROOT)
    assert ROOT / "README.md" in files and any(p.suffix == ".toml" for p in files)
    hits = [hit for path in files for hit in history_mentions(path, ROOT)]
    assert not hits, (
        "user-facing text names internal history; name papers by title and year and runs "
        "by suite version and date:\n" + "\n".join(hits)
    )


def tracked_docs_paths(root: Path) -> list[str]:
    """Every file path under docs/ that git tracks, relative to `root`."""
    listing = subprocess.run(
        ["git", "ls-files", "-z", "--", "docs"], cwd=root, capture_output=True, check=True
    )
    return [p for p in listing.stdout.decode("utf-8").split("\0") if p]


def test_no_tracked_docs_path_carries_a_milestone_token() -> None:
    paths = tracked_docs_paths(ROOT)
    assert "docs/performance.md" in paths
    offenders = [p for p in paths if MILESTONE_IN_PATH.search(p)]
    assert not offenders, (
        "record files under docs/ are named by date, not by internal milestone:\n"
        + "\n".join(offenders)
    )


def code_files(root: Path) -> list[Path]:
    """The project's Python sources, whose comments and docstrings a contributor reads; this
    file is left out (its patterns and examples name what they forbid)."""
    packages = ("bench", "mechanisms", "attacks", "datasets", "tests", "docs")
    files = [p for package in packages for p in sorted((root / package).glob("**/*.py"))]
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def test_code_comments_carry_no_development_history() -> None:
    """Comments and docstrings say what and why: no tracker numbers, milestones or the names
    of the papers' local copies (papers by title and year, as in the docs)."""
    files = code_files(ROOT)
    assert ROOT / "bench" / "cli" / "app.py" in files
    hits = [hit for path in files for hit in history_mentions(path, ROOT)]
    assert not hits, "code comments name internal history:\n" + "\n".join(hits)
