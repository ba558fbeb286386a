"""What a reader of a board sees first: the board's kind (track, paper, study) from its suite
file through leaderboard.json to the page, a title naming the track or the paper, and on a
track's page the ranked bands beside a privacy-utility plot with one curve per mechanism
variant (tested on the data the plot is drawn from, not its pixels)."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import BenchError, SuiteFileError
from bench.report.board.curves import curves_png, mechanism_family, plot_data
from bench.report.board.labels import WORST_CASE
from bench.report.board.load import board_kind, validate_leaderboard
from bench.report.board.write import refresh_board, write_leaderboard
from bench.suite.read import load_suite, parse_suite, suite_dir, suite_kind
from tests.bench.report.board.test_leaderboard import STAMP

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _metric(value: float, half: float = 0.01) -> dict[str, Any]:
    return {"value": value, "ci": [value - half, value + half], "n": 10}


def _setting(
    mechanism: str, params: dict, guarantee: dict, accuracy: float, ssim: float
) -> list[dict[str, Any]]:
    common = {"task": "fmnist", "mechanism": mechanism, "params": params, "seeds": 3}
    return [
        {
            **common,
            "guarantee": guarantee,
            "attack": None,
            "attack_params": {},
            "metrics": {"accuracy": _metric(accuracy), "chance": _metric(0.1, 0.0)},
        },
        {
            **common,
            "guarantee": guarantee,
            "attack": "map",
            "attack_params": {},
            "metrics": {"ssim": _metric(ssim), "ssim_prior": _metric(0.15, 0.0)},
        },
        {
            **common,
            "guarantee": guarantee,
            "attack": WORST_CASE,
            "attack_params": {},
            "metrics": {"ssim": _metric(ssim), "ssim_prior": _metric(0.15, 0.0)},
            "sources": {"ssim": "map"},
        },
    ]


def _ip(r: float) -> dict[str, Any]:
    return {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": r, "distance": "l2/input"}


def _track_rows() -> list[dict[str, Any]]:
    """gauss-input at three radii, as trained and fine-tuned; dfil at two levels, split early
    or late, plain or optimised; the identity."""
    rows = _setting("identity", {}, {"notion": "none"}, 0.9, 0.99)
    for i, r in enumerate((0.01, 0.1, 0.5)):
        for finetune in (False, True):
            acc = 0.85 - 0.2 * i + (0.05 if finetune else 0.0)
            rows += _setting(
                "gauss-input",
                {"r": r, "finetune": finetune, "eps": 1.0},
                _ip(r),
                acc,
                0.8 - 0.3 * i,
            )
    for j, level in enumerate((1.0, 100.0)):
        claim = {"notion": "dfil", "inv_dfil": level, "distance": "mse/input"}
        for split in ("early", "late"):
            for extra in ({}, {"noise_aware": True, "compression": 4}):
                params = {"inv_dfil": level, "split": split, **extra}
                rows += _setting("dfil", params, claim, 0.7 - 0.2 * j, 0.6 - 0.3 * j)
    return rows


def _data(rows: list[dict[str, Any]]) -> Any:
    return plot_data(
        "fmnist",
        rows,
        "accuracy",
        "ssim",
        utility_words="accuracy",
        score_words="SSIM",
        chance=0.1,
        floor=0.18,
        prior=0.15,
    )


def test_the_track_plot_draws_one_curve_per_mechanism_variant_with_a_legend() -> None:
    data = _data(_track_rows())
    keys = [c.key for c in data.curves]
    assert len(keys) == len(set(keys)) == 7  # 2 gauss-input + 4 dfil + the identity
    by_label = {c.label: c for c in data.curves}
    assert sorted(by_label) == [
        "dfil (compression=4, noise_aware=True, split=early)",
        "dfil (compression=4, noise_aware=True, split=late)",
        "dfil (split=early)",
        "dfil (split=late)",
        "gauss-input (finetune=False)",
        "gauss-input (finetune=True)",
        "identity (no protection)",
    ]
    # A curve runs through its privacy levels (r for gauss-input, 1/dFIL for dfil).
    assert [len(by_label[f"gauss-input (finetune={b})"].points) for b in (False, True)] == [3, 3]
    assert all(len(c.points) == 2 for c in data.curves if c.mechanism == "dfil")
    plain = by_label["gauss-input (finetune=False)"]
    assert {p.params["r"] for p in plain.points} == {0.01, 0.1, 0.5}
    assert [p.attack for p in plain.points] == sorted(p.attack for p in plain.points)
    # Colours by family: one colour per mechanism, a line style per variant.
    tuned = by_label["gauss-input (finetune=True)"]
    assert plain.colour == tuned.colour and plain.linestyle != tuned.linestyle
    assert plain.family == "mechanisms.noise" == mechanism_family("identity")
    assert by_label["dfil (split=early)"].family == mechanism_family("dfil") != plain.family
    assert len({c.colour for c in data.curves}) == 3  # gauss-input, dfil, identity
    assert by_label["identity (no protection)"].reference
    # The legend names every curve, then the chance line, the utility floor, the prior floor.
    assert data.legend == [c.label for c in data.curves] + [
        "chance (0.1)",
        "utility floor for ranking (0.18)",
        "prior floor: the attacker's guess (0.15)",
    ]
    assert [line.axis for line in data.lines] == ["utility", "utility", "attack"]
    assert data.x_label.startswith("strongest attack's SSIM over the battery")
    assert data.y_label == "accuracy (95% CI)"
    assert curves_png(data).startswith(b"\x89PNG")


def test_a_mechanism_no_package_registers_is_its_own_family() -> None:
    assert mechanism_family("no-such-mechanism") == "no-such-mechanism"


def test_the_suite_kind_is_validated_and_defaults_to_paper() -> None:
    assert load_suite("track-fmnist").kind == "track"
    assert suite_kind({}) == "paper"
    raw = tomllib.loads((suite_dir() / "track-fmnist.toml").read_text())
    with pytest.raises(SuiteFileError, match="'kind' must be one of track, slice, paper, study"):
        parse_suite({**raw, "kind": "benchmark"}, "s.toml")
    assert board_kind({"suite": "x"}) == "paper"
    doc = {"suite": "x", "suite_version": "1", "generated_at": STAMP, "code_version": "c+1"}
    with pytest.raises(BenchError, match="'kind' must be one of"):
        validate_leaderboard({**doc, "kind": "benchmark", "rows": []}, "x")


def _page(path: Path) -> str:
    return (path / "index.html").read_text()


def test_a_track_page_names_its_track_says_its_kind_and_opens_on_bands_and_plot(
    tmp_path: Path,
) -> None:
    rows = _track_rows()
    write_leaderboard(
        "track-fmnist", "1", rows, tmp_path, code_version="c+1", generated_at=STAMP, kind="track"
    )
    doc = json.loads((tmp_path / "leaderboard.json").read_text())
    assert list(doc)[:5] == ["suite", "suite_version", "generated_at", "code_version", "kind"]
    assert doc["kind"] == "track"
    page = _page(tmp_path)
    assert "<title>Fashion-MNIST track</title>" in page and "<h1>Fashion-MNIST track</h1>" in page
    assert '<span class="kind-badge kind-track">Track</span>' in page
    assert "The Fashion-MNIST track: every in-tree image mechanism" in page  # its description
    # The ranked bands, the plot beside them, then the claim view, then the summary.
    ranked, plot = page.index('class="ranked track-ranked"'), page.index("plots/fmnist_curves.png")
    claims, summary = page.index("By claimed guarantee"), page.index('class="overview sortable"')
    assert ranked < plot < claims < summary
    assert "at the prior guess" in page and "anchored at the prior floor f = 0.15" in page
    assert "identity&#39;s 0.9" in page  # the utility floor's rule, with its numbers
    assert (tmp_path / "plots" / "fmnist_curves.png").is_file()
    md = (tmp_path / "leaderboard.md").read_text()
    assert md.startswith("# Fashion-MNIST track\n\n**Track.** A track: one standard task")


def test_a_paper_board_names_its_paper_and_a_study_says_it_is_one(tmp_path: Path) -> None:
    rows = _track_rows()
    paper, study = tmp_path / "paper", tmp_path / "study"
    write_leaderboard("posthoc-mnist", "3", rows, paper, code_version="c+1", generated_at=STAMP)
    page = _page(paper)
    title = "Posthoc privacy (2023) reproduction: posthoc-mnist"
    assert f"<title>{title}</title>" in page and f"<h1>{title}</h1>" in page
    assert '<span class="kind-badge kind-paper">Paper reproduction</span>' in page
    assert "Reproduces <a href=" in page and "Posthoc privacy guarantees for collaborative" in page
    assert (
        'class="ranked track-ranked"' not in page
        and not (paper / "plots" / "fmnist_curves.png").exists()
    )
    assert "kind" not in json.loads((paper / "leaderboard.json").read_text())
    write_leaderboard(
        "my-question", "1", rows, study, code_version="c+1", generated_at=STAMP, kind="study"
    )
    page = _page(study)
    assert "<title>Study: my-question</title>" in page
    assert '<span class="kind-badge kind-study">Study</span>' in page
    other = tmp_path / "other"
    write_leaderboard("my-board", "1", rows, other, code_version="c+1", generated_at=STAMP)
    assert "no paper&#39;s reference table names yet" in _page(other)


def test_a_refresh_gives_a_board_the_kind_its_suite_file_declares(tmp_path: Path) -> None:
    rows = _track_rows()
    write_leaderboard("track-mnist", "1", rows, tmp_path, code_version="c+1", generated_at=STAMP)
    assert "kind" not in json.loads((tmp_path / "leaderboard.json").read_text())
    refresh_board(tmp_path)
    assert json.loads((tmp_path / "leaderboard.json").read_text())["kind"] == "track"
    assert "<title>MNIST track</title>" in _page(tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_a_track_pages_first_screen_shows_the_ranked_bands_and_the_plot(tmp_path: Path) -> None:
    """At 1440x900 the ranked bands and the privacy-utility plot both start on the first
    screen, side by side, and the page does not overflow sideways."""
    sync_api = pytest.importorskip("playwright.sync_api")
    write_leaderboard(
        "track-fmnist", "1", _track_rows(), tmp_path, code_version="c+1", generated_at=STAMP,
        kind="track",
    )  # fmt: skip
    flags = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1440, "height": 900})
            page.goto((tmp_path / "index.html").as_uri())
            table = page.locator("table.track-ranked").bounding_box()
            plot = page.locator("figure.track-plot img").bounding_box()
            assert table is not None and plot is not None
            assert table["y"] < 450 and plot["y"] < 450
            assert plot["x"] >= table["x"] + table["width"] - 1  # beside, not below
            assert plot["x"] + plot["width"] <= 1440
            assert page.evaluate("document.documentElement.scrollWidth") <= 1440
        finally:
            browser.close()


def test_a_track_board_on_fewer_seeds_than_the_track_says_so() -> None:
    from bench.report.board.heading import board_heading

    def doc(seeds: int) -> dict:
        row = {"task": "faces", "mechanism": "identity", "params": {}, "attack": None}
        return {"suite": "track-faces", "kind": "track", "rows": [{**row, "seeds": seeds}]}

    assert "rests on 1 seed of the 3 the track runs" in board_heading(doc(1)).kind_line
    assert board_heading(doc(3)).kind_line.endswith("rests on 3 seeds.")
