"""The checkout's docs/*.md as HTML pages beside them (docs/NAME.html), so that the
leaderboard pages' "docs" links open a readable page offline, not raw Markdown. Rendered
with markdown-it-py (CommonMark plus tables), which bench's rich dependency installs;
links between the doc pages are pointed at their HTML versions."""

from __future__ import annotations

import html
from pathlib import Path

from markdown_it import MarkdownIt

from bench.core.fsutil import atomic_write

GENERATOR = "bench leaderboard --all (from docs/*.md)"
_STYLE = (
    "body{font-family:system-ui,sans-serif;line-height:1.5;max-width:60rem;margin:2rem auto;"
    "padding:0 1rem;color:#222}pre,table{display:block;overflow-x:auto}"
    "pre{background:#f6f8fa;padding:.6rem}code{font-size:.9em}"
    "table{border-collapse:collapse}th,td{border:1px solid #ccc;padding:.2rem .5rem}"
)


def _linked_html(href: str, pages: set[str]) -> str:
    """`href` with a link to a sibling doc page (NAME.md, NAME.md#part) turned to its HTML."""
    path, hash_, part = href.partition("#")
    if "/" not in path and path.endswith(".md") and path[:-3] in pages:
        return f"{path[:-3]}.html{hash_}{part}"
    return href


def render_doc_page(text: str, title: str, pages: set[str]) -> str:
    """One doc page as a standalone HTML page titled by its first heading (else `title`)."""
    md = MarkdownIt("commonmark", {"html": True}).enable("table")
    tokens = md.parse(text)
    for token in tokens:
        for child in token.children or []:
            if child.type == "link_open":
                child.attrSet("href", _linked_html(str(child.attrGet("href") or ""), pages))
    heading = next(
        (ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")),
        title,
    )
    body = md.renderer.render(tokens, md.options, {})
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f'<meta name="generator" content="{GENERATOR}">\n'
        f"<title>{html.escape(heading)}</title>\n<style>{_STYLE}</style>\n</head>\n"
        f"<body>\n{body}</body>\n</html>\n"
    )


def write_doc_pages(docs_dir: Path) -> list[Path]:
    """Write docs_dir/NAME.html for every docs_dir/NAME.md; returns the paths written."""
    sources = sorted(Path(docs_dir).glob("*.md"))
    pages = {p.stem for p in sources}
    written = []
    for source in sources:
        target = source.with_suffix(".html")
        page = render_doc_page(source.read_text(encoding="utf-8"), source.stem, pages)
        atomic_write(target, page.encode("utf-8"))
        written.append(target)
    return written
