"""The static HTML leaderboard and the privacy-utility frontier: every row on the page,
escaped text, Pareto marking, and (in headless Chromium) a table that renders, sorts and
filters."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from bench.report.board.frontier import frontier_points
from bench.report.board.html import metric_columns
from bench.report.board.labels import WORST_CASE
from bench.report.board.rows import build_rows
from bench.report.board.write import write_leaderboard
from tests.bench.report.board.test_leaderboard import STAMP, _job, _results
from tests.conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _metric(value: float, half: float = 0.01) -> dict[str, Any]:
    return {"value": value, "ci": [value - half, value + half], "n": 10}


def _setting(mechanism: str, eps: float, accuracy: float, ssim: float) -> list[dict[str, Any]]:
    """A utility row and a worst-case row of one setting."""
    common = {"task": "t", "mechanism": mechanism, "params": {"eps": eps}, "seeds": 2}
    return [
        {**common, "attack": None, "metrics": {"accuracy": _metric(accuracy)}},
        {
            **common,
            "attack": WORST_CASE,
            "metrics": {"ssim": _metric(ssim)},
            "sources": {"ssim": "map"},
        },
    ]


def test_frontier_marks_exactly_the_undominated_settings() -> None:
    rows = [
        *_setting("a", 1.0, 0.9, 0.8),  # frontier: most useful
        *_setting("a", 2.0, 0.7, 0.5),  # frontier
        *_setting("b", 1.0, 0.6, 0.6),  # dominated by a/2 (less useful, more exposed)
        *_setting("b", 2.0, 0.7, 0.5),  # ties a/2 exactly: not dominated
        *_setting("c", 1.0, 0.1, 0.1),  # frontier: most private
    ]
    score, points = frontier_points(rows, "accuracy")
    assert score == "ssim"
    flags = {(p.mechanism, p.params["eps"]): p.pareto for p in points}
    assert flags == {
        ("a", 1.0): True,
        ("a", 2.0): True,
        ("b", 1.0): False,
        ("b", 2.0): True,
        ("c", 1.0): True,
    }
    assert [p.attack for p in points] == sorted(p.attack for p in points)
    assert all(p.attack_source == "map" for p in points)


def test_a_setting_whose_claim_is_refuted_is_drawn_but_never_on_the_frontier() -> None:
    rows = [*_setting("a", 1.0, 0.9, 0.1), *_setting("b", 1.0, 0.5, 0.5)]
    rows[0]["unreliable"] = True  # a/1 would dominate b/1; its audit refutes its claim
    _, points = frontier_points(rows, "accuracy")
    flags = {p.mechanism: (p.pareto, p.refuted) for p in points}
    assert flags == {"a": (False, True), "b": (True, False)}


def test_frontier_prefers_scores_over_all_samples_for_abstaining_mechanisms() -> None:
    rows = _setting("ptr", 1.0, 0.8, 0.9)
    rows[1]["metrics"]["ssim_all"] = _metric(0.4)
    score, points = frontier_points(rows, "accuracy")
    assert score == "ssim_all" and points[0].attack == 0.4


def test_index_html_lists_every_row_and_escapes_text(tmp_path: Path) -> None:
    results = _results()
    results.append(_job(0, "<script>alert(1)</script>", {"sigma": 0.2}, None))
    rows = build_rows(results)
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    html = (tmp_path / "index.html").read_text()
    assert html.count('<tr class="') == len(rows)
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    for column in metric_columns(rows):
        assert f">{column}</th>" in html
    # The plots of the task, the frontier among them, are linked with relative paths.
    assert 'src="plots/mnist-small.png"' in html
    assert 'src="plots/mnist-small_frontier.png"' in html
    assert (tmp_path / "plots" / "mnist-small_frontier.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (make test installs it)")
def test_page_renders_sorts_and_filters_in_headless_chromium(tmp_path: Path) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    rows = build_rows(_results())
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    doc = json.loads((tmp_path / "leaderboard.json").read_text())
    flags = [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
    ]
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=flags)
        try:
            page = browser.new_page()
            page.set_default_timeout(10_000)
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto((tmp_path / "index.html").as_uri())
            # Summary first: one line per setting of each task; the full table folded away.
            settings = {(r["task"], r["mechanism"], str(r["params"])) for r in rows}
            assert page.locator("table.overview > tbody > tr").count() == len(settings)
            assert page.locator("table.overview").first.is_visible()
            # Each setting's every-attack table is one click away, folded until then.
            per_attack = page.locator("details.per-attack").first
            assert not per_attack.locator("table").is_visible()
            per_attack.locator("summary").click()
            assert per_attack.locator("table").is_visible()
            assert per_attack.locator("tr").count() >= 2  # header + at least one attack
            assert not page.locator("#leaderboard").is_visible()
            page.locator("#all-rows > summary").click()
            assert page.locator("#leaderboard").is_visible()
            body_rows = page.locator("#leaderboard tbody tr")
            assert body_rows.count() == len(doc["rows"])
            assert page.locator("#shown-count").inner_text() == f"{len(rows)} of {len(rows)} rows"

            def header(name: str) -> Any:
                return page.locator("#leaderboard thead th").filter(
                    has_text=re.compile(f"^{name}$")
                )

            def column(name: str) -> list[float]:
                index = page.locator("#leaderboard thead th").all_inner_texts().index(name)
                values = page.eval_on_selector_all(
                    "#leaderboard tbody tr:not([hidden])",
                    f"rows => rows.map(r => r.cells[{index}].dataset.v)",
                )
                return [float(v) for v in values if v]

            expected = sorted(r["metrics"]["mse"]["value"] for r in rows if "mse" in r["metrics"])
            header("mse").click()
            assert column("mse") == pytest.approx(expected, rel=1e-5)
            header("mse").click()
            assert column("mse") == pytest.approx(expected[::-1], rel=1e-5)

            page.select_option("#filter-kind", "utility")
            shown = page.locator("#leaderboard tbody tr:not([hidden])")
            assert shown.count() == sum(r["attack"] is None for r in rows)
            assert errors == []
        finally:
            browser.close()


def test_declared_expected_failures_are_shown_on_the_rows(tmp_path: Path) -> None:
    from bench.plugin.checks.waivers import attach_expected_failures

    spec = "tests.bench.plugin.checks.test_validate:WaivedEncoder"
    results = [_job(0, spec, {}, None), _job(0, "identity", {}, None)]
    rows = attach_expected_failures(build_rows(results))
    waived = [r for r in rows if r["mechanism"] == spec]
    assert waived and all(
        r["expected_failures"]
        == {"check_encoder_and_noise_exposed": "the encoder is a remote service"}
        for r in waived
    )
    assert all("expected_failures" not in r for r in rows if r["mechanism"] == "identity")
    write_leaderboard("smoke", "1", rows, tmp_path, code_version="c", generated_at=STAMP)
    assert "the encoder is a remote service" in (tmp_path / "index.html").read_text()
    markdown = (tmp_path / "leaderboard.md").read_text()
    assert "`check_encoder_and_noise_exposed`: the encoder is a remote service" in markdown


def test_overview_names_the_strongest_attack_and_flags_a_broken_bound() -> None:
    from bench.report.board.overview import task_overview

    rows = [*_setting("a", 1.0, 0.9, 0.8), *_setting("a", 2.0, 0.7, 0.5)]
    rows[0]["metrics"]["bound_validity"] = _metric(0.97, 0.0)  # the bound failed on 3%
    rows[0]["metrics"]["eps_audit_lb"] = _metric(0.4, 0.0)
    overview = task_overview(rows, "accuracy")
    assert (overview["utility"], overview["score"]) == ("accuracy", "ssim")
    first, second = overview["lines"]
    assert (first["setting"], second["setting"]) == ("eps=1", "eps=2")  # only what varies
    assert first["attack"]["text"] == "0.8" and first["attack_by"] == "map"
    assert first["audit"]["text"] == "0.4" and first["bound_broken"]
    assert second["validity"] is None and not second["bound_broken"]
    # The most useful setting whose strongest attack stays at or under each SSIM band.
    bands = _leaders(overview)
    assert bands["attack SSIM ≤ 0.2"] is None and bands["attack SSIM ≤ 0.4"] is None
    assert bands["attack SSIM ≤ 0.6"]["setting"] == "eps=2"


def _leaders(overview: dict[str, Any]) -> dict[str, dict[str, Any] | None]:
    """Each ranked band's leading setting (None when no setting qualifies)."""
    return {
        band["label"]: band["entries"][0]["line"] if band["entries"] else None
        for band in overview["ranked"]
    }


def test_a_task_with_one_setting_names_no_most_useful_setting() -> None:
    from bench.report.board.overview import task_overview

    assert task_overview(_setting("a", 1.0, 0.9, 0.3), "accuracy")["ranked"] == []


def test_the_page_lists_tasks_in_the_suite_files_order() -> None:
    from bench.report.board.html import task_order

    # default-full.toml lists fmnist before mnist and faces: the main task opens the page.
    assert task_order("default-full", {"faces", "fmnist", "mnist", "spam"}) == [
        "fmnist",
        "mnist",
        "faces",
        "spam",
    ]
    # Tasks the file does not list come after, sorted; a suite not shipped: sorted.
    assert task_order("default-full", {"mnist", "cifar10", "adult"}) == [
        "mnist",
        "adult",
        "cifar10",
    ]
    assert task_order("my-own-suite", {"b", "a"}) == ["a", "b"]


def _with_chance(rows: list[dict[str, Any]], chance: float, prior_ssim: float) -> None:
    for row in rows:
        if row["attack"] is None:
            row["metrics"]["chance"] = _metric(chance, 0.0)
        else:
            row["metrics"]["ssim_prior"] = _metric(prior_ssim)


def test_a_setting_at_chance_is_flagged_and_never_on_the_frontier_or_best() -> None:
    from bench.report.board.overview import task_overview

    rows = [
        *_setting("a", 1.0, 0.9, 0.8),
        *_setting("a", 2.0, 0.7, 0.5),
        *_setting("ldp", 1.0, 0.105, 0.05),  # CI [0.095, 0.115] reaches chance 0.1
    ]
    _with_chance(rows, 0.1, 0.03)
    _, points = frontier_points(rows, "accuracy")
    flags = {p.mechanism: (p.pareto, p.above_chance) for p in points if p.params["eps"] == 1.0}
    # Without the chance rule ldp would be on the frontier (the most private setting).
    assert flags == {"a": (True, True), "ldp": (False, False)}
    overview = task_overview(rows, "accuracy")
    at_chance = {line["mechanism"]: line["at_chance"] for line in overview["lines"]}
    assert at_chance == {"a": False, "ldp": True}
    assert overview["chance"]["utility"] == "0.1"
    assert overview["chance"]["attack"]["text"] == "0.03"
    # Bands anchored at the prior guess's 0.03: only ldp is at the prior guess (SSIM at most
    # 0.03 + 0.05 x 0.97), and it serves nothing.
    bands = _leaders(overview)
    assert bands["attack SSIM ≤ 0.0785"] is None
    assert overview["empirical"][0]["anchor"] == "at the prior guess"
    # Scored over all queries (abstentions get the prior guess), the same baseline applies.
    for row in rows:
        if row["attack"] == WORST_CASE:
            row["metrics"]["ssim_all"] = row["metrics"].pop("ssim")
    assert task_overview(rows, "accuracy")["chance"]["attack"]["text"] == "0.03"


def test_suite_page_links_each_mechanism_to_its_paper_and_shows_the_chance_line(
    tmp_path: Path,
) -> None:
    rows = [*_setting("a", 1.0, 0.9, 0.8), *_setting("ldp", 1.0, 0.105, 0.05)]
    _with_chance(rows, 0.1, 0.03)
    for row in rows:
        row["guarantee"] = {"notion": "ip", "eps": 1.0}
        if row["mechanism"] == "a":
            row["paper"] = "https://arxiv.org/abs/2411.18746"
            row["docs"] = "docs/inference-privacy.md"
    write_leaderboard("s", "1", rows, tmp_path, code_version="0.1.0+ab", generated_at=STAMP)
    page = (tmp_path / "index.html").read_text()
    assert '<a href="https://arxiv.org/abs/2411.18746"' in page
    assert 'href="../../docs/inference-privacy.html"' in page
    assert 'class="chance-row"' in page and ">at chance</span>" in page
    assert page.count(">at chance</span>") == 1
    doc = json.loads((tmp_path / "leaderboard.json").read_text())
    flagged = [(r["mechanism"], r["attack"]) for r in doc["rows"] if r.get("at_chance")]
    assert flagged == [("ldp", None)]
    markdown = (tmp_path / "leaderboard.md").read_text()
    assert "(chance: 0.1, the best constant predictor)" in markdown
    assert markdown.count("(at chance)") == 1


def test_every_in_tree_mechanism_row_gets_its_paper_and_an_existing_doc_page() -> None:
    from bench.plugin.registry import MECHANISMS
    from bench.run.publish import attach_papers

    rows = attach_papers([{"mechanism": name} for name in MECHANISMS.names()])
    by_name = {r["mechanism"]: r for r in rows}
    assert by_name["lucid"]["paper"] == "https://arxiv.org/abs/2502.16519"
    assert "paper" not in by_name["identity"]  # a reference point, not a published mechanism
    for row in rows:
        assert (ROOT / row["docs"]).is_file(), row
    assert attach_papers([{"mechanism": "not-installed"}]) == [{"mechanism": "not-installed"}]


def test_a_dfil_bound_is_broken_only_beyond_its_tests_false_alarms() -> None:
    from bench.report.board.overview import bound_broken

    def validity(value: float, n: int) -> dict[str, Any]:
        return {"value": value, "ci": [value, 1.0], "n": n}

    # Per-sample 95% tests: 1 of 32 failing is what a holding bound gives by chance ...
    assert not bound_broken(validity(31 / 32, 32), "dfil")
    # ... 7 of 32 is not (P(X >= 7) < 1% under the 5% false-alarm rate), nor is 0 of 100.
    assert bound_broken(validity(25 / 32, 32), "dfil")
    assert bound_broken(validity(0.0, 100), "dfil")
    # An exact certificate (iDP) is broken by one violation; a holding bound never is.
    assert bound_broken(validity(0.99, 100), "idp")
    assert not bound_broken(validity(1.0, 100), "idp")
    assert not bound_broken(None, "dfil")


def test_mechanisms_that_never_abstain_show_their_score_beside_abstaining_ones() -> None:
    from bench.report.board.overview import task_overview

    rows = [
        *_setting("ptr", 10.0, 0.9, 0.3),
        *_setting("ldp", 10.0, 0.6, 0.2),
        *_setting("ldp", 2.0, 0.5, 0.1),
    ]
    rows[1]["metrics"]["ssim_all"] = rows[1]["metrics"].pop("ssim")  # ptr abstains
    score, points = frontier_points(rows, "accuracy")
    assert score == "ssim_all" and len(points) == 3  # ldp counted on its plain ssim
    overview = task_overview(rows, "accuracy")
    by_setting = {(line["mechanism"], line["setting"]): line for line in overview["lines"]}
    assert by_setting["ldp", "eps=2"]["attack"]["text"] == "0.1"
    assert by_setting["ldp", "eps=2"]["attack_by"] == "map"
    # Numbers ordered as numbers: eps 2 before eps 10.
    assert [line["setting"] for line in overview["lines"]] == ["eps=2", "eps=10", ""]


def test_smoothed_scoring_is_shown_but_never_ranked_and_bounds_say_their_basis() -> None:
    """dFIL rows scored on smoothed inputs (targets = "smoothed") are the same mechanism
    scored another way: off the frontier and the fixed-privacy bands, with a badge; a
    failed bound that rests on an estimate is "estimate fails", not "bound broken"."""
    from bench.report.board.overview import task_overview

    raw = _setting("dfil", 1.0, 0.8, 0.5)
    smoothed = _setting("dfil", 1.0, 0.8, 0.1)
    for row in smoothed:
        row["params"] = {"eps": 1.0, "targets": "smoothed"}
    attack = {**raw[1], "attack": "map", "metrics": {"ssim": _metric(0.5)}}
    attack["metrics"]["bound_validity"] = {"value": 0.0, "ci": [0.0, 0.0], "n": 1}
    why = "van Trees prior term estimated on smoothed inputs"
    attack["guarantee"] = {
        "notion": "dfil",
        "bound": {"bound": "van-trees", "basis": "estimate", "why": why},
    }
    rows = [*raw, attack, *smoothed]
    _, points = frontier_points(rows, "accuracy")
    assert [p.params for p in points] == [{"eps": 1.0}]
    overview = task_overview(rows, "accuracy")
    lines = {line["all_params"]: line for line in overview["lines"]}
    assert [line["alternative_scoring"] for line in lines.values()] == [False, True]
    bands = _leaders(overview)  # the smoothed scoring's 0.1 is not used
    assert bands["attack SSIM ≤ 0.2"] is None and bands["attack SSIM ≤ 0.4"] is None
    (raw_line,) = [line for line in lines.values() if not line["alternative_scoring"]]
    assert raw_line["estimate_fails"] and not raw_line["bound_broken"]
    assert raw_line["validity_basis"] == "estimate"
    assert overview["bases"] == [("van-trees", "estimate", why)]


def test_an_audit_without_a_testable_pair_does_not_claim_power() -> None:
    """A PTR audit that found no pair to test stores eps_audit_lb 0 with 0 draws: the page
    says the 0 is no evidence, not "could show X"."""
    from bench.report.board.overview import _audit_power

    def entry(v: float) -> dict:
        return {"value": v, "ci": [v, v], "n": 1}

    none = {"eps_audit_lb": entry(0.0), "eps_audit_ideal": entry(18.8), "audit_draws": entry(0)}
    assert "no testable pair" in _audit_power(none) and "could show" not in _audit_power(none)
    some = {**none, "audit_draws": entry(200_000)}
    assert _audit_power(some) == "could show 18.8 · 200,000 draws"


@pytest.mark.slow
def test_plugin_metrics_are_described_whoever_writes_the_page(tmp_path: Path) -> None:
    """A page re-written from JSON alone (bench reproduce --write, or the parent of worker
    processes) still describes the metrics a mechanism registers on import: a fresh
    interpreter that never imported mechanisms.posthoc renders posthoc's delta_p with its
    description, not its bare name."""
    import subprocess
    import sys

    metric = {"value": 3.2, "ci": [3.0, 3.4], "n": 3}
    doc = {
        "suite": "t",
        "suite_version": "1",
        "code_version": "x",
        "generated_at": STAMP,
        "rows": [
            {
                "task": "mnist",
                "mechanism": "posthoc-ptr",
                "params": {"eps": 1.0},
                "guarantee": {},
                "attack": None,
                "attack_params": {},
                "seeds": 3,
                "metrics": {"accuracy": metric, "delta_p": metric},
            }
        ],
    }
    (tmp_path / "doc.json").write_text(json.dumps(doc))
    script = (
        "import json, sys; from bench.report.board.html import render_index_html; "
        "assert 'mechanisms.posthoc.mechanism' not in sys.modules; "
        f"doc = json.load(open({str(tmp_path / 'doc.json')!r})); "
        "print(render_index_html(doc, {}, {'mnist': []}))"
    )
    page = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert 'title="delta_p"' not in page
    assert "DeltaP = mean + 3 std" in page


def test_a_page_rewritten_from_its_json_keeps_each_tasks_declared_utility() -> None:
    """`bench reproduce --write` rewrites pages from leaderboard.json alone: MovieLens's
    utility stays AUC (declared by the task), not the accuracy its rows also carry."""
    from bench.report.board.write import declared_utility_metrics

    declared = declared_utility_metrics({"movielens", "mnist", "no-such-task"})
    assert declared == {"mnist": "accuracy", "movielens": "auc"}
