"""The doc pages as HTML (docs/NAME.html, bench.report.reproduce.docs_pages): the leaderboard pages'
"docs" links open them, they are current with their Markdown, and links between doc pages
stay within the HTML versions."""

from __future__ import annotations

import re

from bench.report.reproduce.docs_pages import render_doc_page
from tests.conftest import ROOT

DOCS = ROOT / "docs"


def test_links_between_doc_pages_point_at_their_html() -> None:
    text = "# Title <1>\n\n[a](posthoc.md#ptr) [b](../README.md) [c](https://x.org/posthoc.md)\n"
    page = render_doc_page(text, "fallback", {"posthoc"})
    assert 'href="posthoc.html#ptr"' in page
    assert 'href="../README.md"' in page and 'href="https://x.org/posthoc.md"' in page
    assert "<title>Title &lt;1&gt;</title>" in page
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page


def test_tables_and_code_render() -> None:
    page = render_doc_page("| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nx < y\n```\n", "t", set())
    assert "<th>a</th>" in page and "<td>2</td>" in page
    assert "<pre><code>x &lt; y\n</code></pre>" in page
    assert "<title>t</title>" in page  # no heading: the file's name


def test_committed_html_is_current_with_its_markdown() -> None:
    sources = sorted(DOCS.glob("*.md"))
    pages = {p.stem for p in sources}
    stale = [
        p.name
        for p in sources
        if not p.with_suffix(".html").is_file()
        or p.with_suffix(".html").read_text() != render_doc_page(p.read_text(), p.stem, pages)
    ]
    assert not stale, f"stale doc pages {stale}: run `bench leaderboard --all`"


def test_every_docs_link_of_a_committed_board_opens_a_rendered_page() -> None:
    links = 0
    for board_page in sorted((ROOT / "leaderboards").glob("*/index.html")):
        for href in re.findall(r'<a class="docs" href="([^"]+)"', board_page.read_text()):
            links += 1
            assert href.endswith(".html"), (board_page, href)
            assert (board_page.parent / href).resolve().is_file(), (board_page, href)
    assert links > 0
