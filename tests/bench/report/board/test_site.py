"""The site index (leaderboards/index.html): every committed suite listed and linked, kept
in step with the committed leaderboards, and rendering in a real browser."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.report.board.rows import build_rows
from bench.report.board.site import render_site_index, suite_entries, write_site_index
from bench.report.board.write import write_leaderboard
from bench.suite.read import available_suites, load_suite
from tests.bench.report.board.test_leaderboard import STAMP, _results
from tests.conftest import ROOT

COMMITTED = ROOT / "leaderboards"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _descriptions() -> dict[str, str]:
    return {name: load_suite(name).description for name in available_suites()}


def _site(tmp_path: Path) -> Path:
    rows = build_rows(_results())
    for suite in ("alpha", "beta"):
        write_leaderboard(suite, "1", rows, tmp_path / suite, code_version="c", generated_at=STAMP)
    write_site_index(tmp_path, {"alpha": "the <first> suite"})
    return tmp_path / "index.html"


def test_the_index_lists_and_links_every_suite(tmp_path: Path) -> None:
    html = _site(tmp_path).read_text()
    assert 'href="alpha/index.html"' in html and 'href="beta/index.html"' in html
    assert "the &lt;first&gt; suite" in html  # descriptions are escaped
    alpha, beta = suite_entries(tmp_path, {})
    assert (alpha.name, beta.name) == ("alpha", "beta")
    rows = build_rows(_results())
    assert alpha.rows == sum(r["attack"] != "worst case" for r in rows)
    assert alpha.settings == len({(r["task"], r["mechanism"], str(r["params"])) for r in rows})


def test_only_a_site_index_bench_wrote_is_recognised(tmp_path: Path) -> None:
    from bench.report.board.site import is_site_index

    assert is_site_index(_site(tmp_path))
    other = tmp_path / "other.html"
    other.write_text("<html>someone's own page</html>")
    assert not is_site_index(other) and not is_site_index(tmp_path / "missing.html")


def test_no_leaderboard_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(BenchError, match="no leaderboard under"):
        write_site_index(tmp_path, {})


def test_the_index_shows_a_descriptions_first_sentence_and_folds_the_rest(tmp_path: Path) -> None:
    _site(tmp_path)
    write_site_index(tmp_path, {"alpha": "Short lead. The long rest, e.g. 3 seeds.", "beta": "One"})
    html = (tmp_path / "index.html").read_text()
    assert "Short lead.\n      <details><summary>more</summary>The long rest, e.g. 3 seeds." in html
    assert '<div class="desc">One</div>' in html


def test_the_index_says_how_many_seeds_and_which_suites_changed_since(tmp_path: Path) -> None:
    _site(tmp_path)
    alpha, beta = suite_entries(tmp_path, {}, {"alpha": "2", "beta": "1"})
    assert alpha.seeds == beta.seeds == min(r["seeds"] for r in build_rows(_results()))
    assert alpha.outdated and not beta.outdated
    html = render_site_index(tmp_path, {}, {"alpha": "2", "beta": "1"})
    assert html.count("badge outdated") == 1 and "suite now v2: not re-run yet" in html


def _versions() -> dict[str, str]:
    return {name: load_suite(name).version for name in available_suites()}


def test_the_committed_index_is_current_and_links_every_committed_suite() -> None:
    committed = (COMMITTED / "index.html").read_text()
    assert committed == render_site_index(COMMITTED, _descriptions(), _versions()), (
        "leaderboards/index.html is stale: run `bench leaderboard --all`"
    )
    suites = sorted(p.parent.name for p in COMMITTED.glob("*/leaderboard.json"))
    # Every committed board is linked once, from its section (tracks, papers, other boards).
    links = [
        link
        for link in re.findall(r'<a class="board" href="([^"]+)">', committed)
        if not link.startswith("../")  # a study's boards live beside leaderboards/
    ]
    assert sorted(link.split("/")[0] for link in links) == suites
    assert all((COMMITTED / link.split("#")[0]).is_file() for link in links)


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_the_index_renders_and_opens_a_suite_page_in_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    index = _site(tmp_path)
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(10_000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(index.as_uri())
            assert page.locator("#suites tbody tr").count() == 2
            page.screenshot(path=str(tmp_path / "site.png"), full_page=True)
            page.locator("#suites a", has_text="beta").click()
            page.wait_for_load_state()
            assert page.url.endswith("/beta/index.html")
            assert page.locator("#leaderboard tbody tr").count() > 0
            assert errors == []
        finally:
            browser.close()


# What a reader's first screen must hold on every committed page (1440x900, a laptop).
VIEWPORT = {"width": 1440, "height": 900}
# Per task section: [id, the ranked table's offset below the section top (null: none), and
# whether it comes before the per-setting summary].
RANKED_OFFSETS = """secs => secs.map(s => {
  const top = e => e.getBoundingClientRect().top;
  const r = s.querySelector('table.ranked'), o = s.querySelector('table.overview');
  return [s.id, r ? top(r) - top(s) : null, r && o ? top(r) < top(o) : true];
})"""


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_every_committed_page_fits_the_screen_and_ranks_each_task_first(tmp_path: Path) -> None:
    """Every committed page at 1440x900: no horizontal overflow, no script error, and in each
    task section the ranked best-at-fixed-privacy table (where the task has one) starts on
    the section's first screen, before the per-setting summary."""
    sync_api = pytest.importorskip("playwright.sync_api")
    pages = sorted(COMMITTED.glob("*/index.html"))
    assert pages, "no committed leaderboard pages"
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            for path in pages:
                page.goto(path.as_uri())
                width = page.evaluate("document.documentElement.scrollWidth")
                assert width <= VIEWPORT["width"], f"{path} is {width} px wide"
                offsets = page.eval_on_selector_all("section.task", RANKED_OFFSETS)
                for section, offset, first in offsets:
                    assert offset is None or offset < VIEWPORT["height"] / 2, (path, section)
                    assert first, (path, section)
            page.goto((COMMITTED / "default" / "index.html").as_uri())
            page.screenshot(path=str(tmp_path / "default.png"))
            assert errors == []
        finally:
            browser.close()


def test_the_index_counts_each_suites_paper_verdicts(tmp_path: Path) -> None:
    import json

    _site(tmp_path)
    docs = [
        {"counts": {"not run": 2, "reproduced": 1}, "paper": {"id": "p"}},
        {"counts": {"reproduced": 3}, "paper": {"id": "q"}},
    ]
    (tmp_path / "alpha" / "reproduction.json").write_text(json.dumps({"reproductions": docs}))
    alpha, beta = suite_entries(tmp_path, {})
    assert alpha.reproduction == {"reproduced": 4, "not run": 2} and beta.reproduction == {}
    html = render_site_index(tmp_path, {})
    assert 'href="alpha/index.html#reproduction-p">4 reproduced<br>2 not run</a>' in html


def test_the_index_opens_on_the_tracks_then_the_papers_then_everything_else(
    tmp_path: Path,
) -> None:
    """A track board in the first section with its top settings per band, a suite a paper's
    reference table names in the papers' section (one line per paper), any other board and
    the studies under studies/ last; each board linked once."""
    root, studies = tmp_path / "leaderboards", tmp_path / "studies"
    rows = build_rows(_results())
    write_leaderboard(
        "track-fmnist", "1", rows, root / "track-fmnist", code_version="c+1", generated_at=STAMP,
        kind="track",
    )  # fmt: skip
    for suite in ("ip-fmnist", "alpha"):
        write_leaderboard(suite, "1", rows, root / suite, code_version="c+1", generated_at=STAMP)
    study = studies / "why-lower"
    write_leaderboard(
        "why-lower-a", "1", rows, study / "boards" / "a", code_version="c+1", generated_at=STAMP
    )
    (study / "README.md").write_text("# Study: why a number is lower\n\nDated 2026-12-01.\n")
    html = render_site_index(root, {}, studies=studies)
    tracks, papers, other = (
        html.index(f'<section id="{s}">') for s in ("tracks", "papers", "other")
    )
    assert tracks < papers < other

    def section_of(link: str) -> str:
        at = html.index(f'href="{link}"')
        return "tracks" if at < papers else "papers" if at < other else "other"

    assert section_of("track-fmnist/index.html") == "tracks"
    assert section_of("ip-fmnist/index.html#reproduction-ip") == "papers"
    assert section_of("alpha/index.html") == "other"
    assert section_of("../studies/why-lower/boards/a/index.html") == "other"
    assert "why a number is lower" in html[other:]
    boards = re.findall(r'<a class="board" href="([^"]+)">', html)
    assert len(boards) == len(set(boards)) == 4
    # The track's compact table: the top settings per band with their claim and audit.
    track = html[tracks:papers]
    assert '<h3><a class="board" href="track-fmnist/index.html">Fashion-MNIST track</a>' in track
    assert 'class="track-top"' in track and "IP (ε=1, δ=1e-05, r=0.1) over l2/input" in track
    assert "not audited" in track
    # One line per paper with a reference table, its suites beneath it.
    lines = re.findall(r'<tr data-paper="([^"]+)">', html)
    assert lines == ["dfil", "ip", "lucid", "posthoc"]
    assert "Inference Privacy (2024)" in html[papers:other]
    # Shipped tracks with no committed board are named as not run yet.
    assert "Tracks not run yet:" in track and "(<code>track-mnist</code>)" in track
    # Without a studies folder the last section lists the boards alone.
    assert 'id="studies"' not in render_site_index(root, {}, studies=tmp_path / "none")
