"""The README is a first reader's page: short, with the two commands exactly as the Makefile
runs them, and a link to every doc page (the reference lives in docs/usage.md, the history in
CHANGELOG.md, the current figures in docs/performance.md, kept short too)."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_keeps_the_two_commands() -> None:
    assert len(README.splitlines()) < 150
    assert re.search(r"^make run +# ", README, re.M) and re.search(r"^make test +# ", README, re.M)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^run: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)


def test_the_readme_links_every_doc_page_and_the_changelog() -> None:
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)(?:#[\w-]*)?\)", README))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, f"README links no {sorted(pages - linked)}"
    assert "](CHANGELOG.md)" in README and "](CONTRIBUTING.md)" in README


def test_the_performance_page_holds_current_figures_only() -> None:
    text = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 300
    assert "## Standard tracks" in text
    # Dated sections are history: they belong to CHANGELOG.md.
    assert not re.findall(r"^## .*\(\d{4}-\d{2}-\d{2}\)$", text, re.M)
