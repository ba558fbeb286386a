"""Paper reproduction tables: reference files are checked, cells match exactly one row, and
verdicts follow the stated rules from the numbers alone; committed reproduction files are
what the rules give on the committed leaderboards."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.core.errors import ConfigError
from bench.report.board.write import write_leaderboard
from bench.report.reproduce import reproduction as rp
from bench.report.reproduce import verdicts as vr
from tests.conftest import ROOT

REFERENCE = """
[paper]
id = "toy"
title = "A toy paper"
url = "https://example.org/toy"

[[cell]]
id = "eps1"
source = "Table 1"
dataset = "MNIST"
model = "CNN"
setting = "eps = 1"
metric = "accuracy"
value = 0.50
class = "same"
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 1 }

[[cell]]
id = "eps2"
source = "Table 1"
dataset = "MNIST"
model = "CNN"
setting = "eps = 2"
metric = "accuracy"
value = 0.70
class = "scaled"
difference = "1,000 training images"
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 2.0 }

[[cell]]
id = "eps5"
source = "Table 1"
dataset = "MNIST"
model = "CNN"
setting = "eps = 5"
metric = "accuracy"
value = 0.90
class = "same"
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 5.0 }

[[cell]]
id = "attack"
source = "Fig. 2"
dataset = "MNIST"
model = "CNN"
setting = "eps = 5, optimisation attack"
metric = "ssim"
value = 0.30
class = "scaled"
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 5.0 }
attack = "optimization"
difference = "100 attacked samples"

[[cell]]
id = "elsewhere"
source = "Table 3"
dataset = "CIFAR-100"
model = "ResNet-18"
setting = "eps = 1"
metric = "accuracy"
value = 0.6
class = "same"
suite = ""
task = "cifar100"
mechanism = "m"
params = {}

[[trend]]
id = "by-eps"
source = "Table 1"
claim = "accuracy rises with eps"
tiers = [["eps5"], ["eps2"], ["eps1"]]
"""


def _metric(value: float, half: float) -> dict:
    return {"value": value, "ci": [value - half, value + half], "n": 100}


def _row(
    eps: float, accuracy: float, half: float = 0.02, attack: str | None = None, prior=0.1
) -> dict:
    metrics = {"accuracy": _metric(accuracy, half), "chance": _metric(0.1, 0.0)}
    if attack:
        metrics = {"ssim": _metric(accuracy, half), "ssim_prior": _metric(prior, 0.01)}
    return {
        "task": "mnist",
        "mechanism": "m",
        "params": {"eps": eps, "delta": 1e-5},
        "guarantee": {"notion": "dp", "eps": eps},
        "attack": attack,
        "attack_params": {},
        "seeds": 3,
        "metrics": metrics,
    }


@pytest.fixture
def reference() -> rp.Reference:
    return rp.parse_reference(REFERENCE, "toy.toml")


def _doc(reference: rp.Reference, rows: list[dict] | None) -> dict:
    return rp.reproduction(reference, "toy-suite", rows)


def _verdicts(reference: rp.Reference, rows: list[dict] | None) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in _doc(reference, rows)["cells"]}


def _substitute(text: str) -> str:
    """The toy table with its Table 1 cells run on another dataset."""
    same = 'class = "same"\nsuite = "toy-suite"'
    scaled = 'class = "scaled"\ndifference = "1,000 training images"'
    swap = 'class = "substitute"\ndifference = "Fashion-MNIST"'
    return text.replace(same, swap + '\nsuite = "toy-suite"').replace(scaled, swap)


def test_a_value_inside_a_narrow_ci_is_reproduced_and_a_kept_order_is_a_trend(reference) -> None:
    rows = [
        _row(1.0, 0.505),
        _row(2.0, 0.60),
        _row(5.0, 0.80),
        _row(5.0, 0.30, attack="optimization"),
    ]
    doc = _doc(reference, rows)
    assert {c["id"]: c["verdict"] for c in doc["cells"]} == {
        "eps1": rp.REPRODUCED,  # 0.50 in [0.485, 0.525], half-width 0.02 < 0.4 to chance
        "eps2": rp.TREND,  # 0.70 outside, but 0.505 < 0.60 < 0.80 as in the paper
        "eps5": rp.TREND,
        "attack": rp.REPRODUCED,  # 0.30 vs the prior guess's 0.1
    }
    (trend,) = doc["trends"]
    # bench's mean difference over the 3 ordered pairs: (0.095 + 0.295 + 0.2) / 3; the
    # paper's: (0.2 + 0.4 + 0.2) / 3 -> ratio 0.7375, inside [1/2, 2]
    assert trend["verdict"] == vr.TREND_KEPT and trend["ratio"] == pytest.approx(0.7375)
    assert doc["summary"] == ("like-for-like: 2 reproduced, 2 trend reproduced; substitutes: none")


def test_an_effect_outside_the_factor_is_no_trend(reference) -> None:
    """Ordered the paper's way with disjoint CIs, but at 0.15x the paper's effect (mean
    difference 0.04 over the 3 pairs against 0.267)."""
    rows = [_row(1.0, 0.30, 0.005), _row(2.0, 0.33, 0.005), _row(5.0, 0.36, 0.005)]
    doc = _doc(reference, rows)
    assert doc["trends"][0]["verdict"] == vr.TREND_NOT
    assert doc["trends"][0]["ratio"] == pytest.approx(0.15)
    assert _verdicts(reference, rows)["eps5"] == rp.NOT_REPRODUCED


def test_a_row_at_chance_reproduces_nothing(reference) -> None:
    """eps 1's row reaches chance (0.1): the paper's 0.50 lies in its wide CI, which says
    nothing; had the paper been at chance too, both would be."""
    rows = [_row(1.0, 0.40, 0.31), _row(2.0, 0.70), _row(5.0, 0.90)]
    assert _verdicts(reference, rows)["eps1"] == vr.INCONCLUSIVE
    at_chance = rp.parse_reference(REFERENCE.replace("value = 0.50", "value = 0.11"), "t")
    rows = [_row(1.0, 0.11, 0.02), _row(2.0, 0.70), _row(5.0, 0.90)]
    assert _verdicts(at_chance, rows)["eps1"] == vr.BOTH_AT_CHANCE


def test_a_constant_predictor_or_an_attack_below_the_prior_is_never_reproduced(
    reference,
) -> None:
    constant = {**_row(1.0, 0.50), "constant_predictor": True}
    rows = [
        constant,
        _row(2.0, 0.70),
        _row(5.0, 0.90),
        _row(5.0, 0.30, attack="optimization", prior=0.29),
    ]
    verdicts = _verdicts(reference, rows)
    assert verdicts["eps1"] == vr.INCONCLUSIVE  # paper 0.50 is not at chance; the row says nothing
    assert verdicts["attack"] == vr.INCONCLUSIVE  # CI [0.28, 0.32] reaches the prior's 0.29
    cell = next(c for c in _doc(reference, rows)["cells"] if c["id"] == "attack")
    assert cell["bench"]["flags"] == [vr.BELOW_FLOOR]


def test_a_ci_too_wide_to_tell_the_paper_from_its_neighbours_is_inconclusive(reference) -> None:
    """0.70 in [0.55, 0.85]: the CI also holds the paper's 0.90 of eps 5 (0.2 away)."""
    rows = [_row(1.0, 0.505), _row(2.0, 0.70, 0.2), _row(5.0, 0.90)]
    doc = _doc(reference, rows)
    by_id = {c["id"]: c for c in doc["cells"]}
    assert by_id["eps2"]["verdict"] == vr.INCONCLUSIVE and "0.2" in by_id["eps2"]["why"]
    assert by_id["eps1"]["verdict"] == by_id["eps5"]["verdict"] == rp.REPRODUCED


def test_a_significant_reversal_breaks_the_trend(reference) -> None:
    rows = [_row(1.0, 0.60), _row(2.0, 0.40), _row(5.0, 0.80)]
    doc = _doc(reference, rows)
    assert doc["trends"][0]["verdict"] == vr.TREND_REVERSED
    verdicts = {c["id"]: c["verdict"] for c in doc["cells"]}
    assert verdicts["eps2"] == verdicts["eps5"] == rp.NOT_REPRODUCED
    assert verdicts["attack"] == rp.NOT_RUN  # no attack row


def test_substitute_cells_get_direction_verdicts_only(reference) -> None:
    substitute = rp.parse_reference(_substitute(REFERENCE), "t")
    assert {c.klass for c in substitute.cells if c.source == "Table 1"} == {"substitute"}
    exact = [_row(1.0, 0.50), _row(2.0, 0.70), _row(5.0, 0.90)]  # the paper's own numbers
    assert set(_verdicts(substitute, exact).values()) == {vr.DIRECTION_KEPT, rp.NOT_RUN}
    reversed_ = [_row(1.0, 0.60), _row(2.0, 0.40), _row(5.0, 0.80)]
    assert _verdicts(substitute, reversed_)["eps1"] == vr.DIRECTION_REVERSED
    summary = _doc(substitute, exact)["summary"]
    assert summary == "like-for-like: 1 not run; substitutes: 3 direction kept"


def test_a_trend_with_an_unanswered_cell_is_not_judged(reference) -> None:
    rows = [_row(1.0, 0.30), _row(2.0, 0.40)]  # eps 5 never ran
    doc = _doc(reference, rows)
    assert doc["trends"][0]["verdict"] == rp.NOT_RUN
    assert {c["id"]: c["verdict"] for c in doc["cells"]} == {
        "eps1": rp.NOT_REPRODUCED,
        "eps2": rp.NOT_REPRODUCED,
        "eps5": rp.NOT_RUN,
        "attack": rp.NOT_RUN,
    }


def test_no_leaderboard_means_every_cell_is_not_run(reference) -> None:
    doc = rp.reproduction(reference, "toy-suite", None)
    assert doc["counts"] == {rp.NOT_RUN: 4}
    assert rp.reproduction(reference, "", None)["cells"][0]["id"] == "elsewhere"


def test_a_cell_matching_two_rows_is_refused(reference) -> None:
    rows = [_row(1.0, 0.5), {**_row(1.0, 0.5), "params": {"eps": 1.0, "delta": 1e-6}}]
    with pytest.raises(ConfigError, match="2 rows of suite toy-suite match"):
        rp.reproduction(reference, "toy-suite", rows)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace("value = 0.50", 'value = "half"'), "value must be a float"),
        (lambda t: t.replace('id = "eps2"', 'id = "eps1"'), "appears twice"),
        (lambda t: t.replace('class = "same"', 'klass = "same"', 1), "unknown keys"),
        (lambda t: t.replace('class = "same"', 'class = "alike"', 1), "class must be one of"),
        (lambda t: t.replace('"MNIST"', '"SVHN"', 1), "declare it 'substitute'"),
        (lambda t: t.replace('difference = "1,000 training images"\n', ""), "state the"),
        (lambda t: t.replace('[["eps5"], ["eps2"]', '[["eps2"], ["eps5"]'), "does not put"),
        (lambda t: t.replace('"eps2"]', '"eps9"]'), "'eps9' is no cell"),
        (lambda t: t.replace('metric = "accuracy"\nvalue = 0.50', "value = 0.50"), "missing"),
        (lambda t: t.replace("[paper]", "[paper"), "not valid TOML"),
        (lambda t: t.replace('url = "https://example.org/toy"', ""), r"needs a \[paper\]"),
    ],
)
def test_malformed_reference_tables_are_refused_in_one_line(edit, message) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        rp.parse_reference(edit(REFERENCE), "toy.toml")
    assert "\n" not in str(info.value)


def test_the_leaderboard_writer_adds_the_reproduction_to_files_and_page(
    reference, tmp_path, monkeypatch
) -> None:
    monkeypatch.setattr(rp, "references_for_suite", lambda suite: [reference])
    rows = [_row(1.0, 0.505), _row(2.0, 0.60), _row(5.0, 0.80)]
    write_leaderboard("toy-suite", "1", rows, tmp_path, code_version="0.1+abc", generated_at="t")
    doc = json.loads((tmp_path / "reproduction.json").read_text())["reproductions"][0]
    assert doc["counts"] == {rp.REPRODUCED: 1, rp.TREND: 2, rp.NOT_RUN: 1}
    md = (tmp_path / "reproduction.md").read_text()
    row = "| Table 1 | MNIST / CNN | eps = 1 | accuracy | 0.5 | 0.505 [0.485, 0.525] | 3 | — |"
    assert row + " same | — | **reproduced** |" in md
    assert "| Table 1 | MNIST / CNN | eps = 2 |" in md and "| scaled | D1 |" in md
    assert md.count("1,000 training images") == 1  # each difference stated once
    assert "| by-eps | Table 1 | accuracy rises with eps | 3 / 0 / 0 of 3 |" in md
    page = (tmp_path / "index.html").read_text()
    assert 'id="reproduction-toy"' in page and "trend reproduced" in page


def test_reproductions_refresh_from_the_committed_leaderboard_alone(
    reference, tmp_path, monkeypatch
) -> None:
    from bench.report.board.write import refresh_reproductions

    monkeypatch.setattr(rp, "references_for_suite", lambda suite: [reference])
    rows = [_row(1.0, 0.505), _row(2.0, 0.60), _row(5.0, 0.80)]
    write_leaderboard("toy-suite", "1", rows, tmp_path, code_version="0.1+abc", generated_at="t")
    board = (tmp_path / "leaderboard.json").read_text()
    (tmp_path / "reproduction.json").write_text("stale")
    (tmp_path / "index.html").write_text("stale")
    refresh_reproductions(tmp_path)
    doc = json.loads((tmp_path / "reproduction.json").read_text())["reproductions"][0]
    assert doc["counts"] == {rp.REPRODUCED: 1, rp.TREND: 2, rp.NOT_RUN: 1}
    assert 'id="reproduction-toy"' in (tmp_path / "index.html").read_text()
    assert (tmp_path / "leaderboard.json").read_text() == board  # the rows are untouched


def test_bench_reproduce_refuses_an_unknown_paper_in_one_line(
    tmp_path, monkeypatch, capsys
) -> None:
    from tests.conftest import cli_here

    result = cli_here(monkeypatch, capsys, "reproduce", "nosuch", "--root", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "no reference table" in result.stderr


@pytest.mark.parametrize("paper", rp.known_papers())
def test_shipped_reference_tables_parse_and_name_real_components(paper) -> None:
    from bench.plugin.registry import ATTACKS, MECHANISMS
    from bench.suite.read import available_suites, load_suite

    reference = rp.load_reference(paper)
    suites = set(available_suites())
    for cell in reference.cells:
        if not cell.suite:
            continue
        assert cell.suite in suites, cell.id
        suite = load_suite(cell.suite)
        assert cell.task in {t.name for t in suite.tasks}, cell.id
        mech = MECHANISMS.get(cell.mechanism)
        assert set(cell.params) <= set(mech.defaults) | {"tasks"}, cell.id
        if cell.attack:
            ATTACKS.get(cell.attack)
    for comparison in reference.comparisons:
        assert comparison.suite in suites, comparison.id
        assert comparison.task in {t.name for t in load_suite(comparison.suite).tasks}
        for side in (comparison.a, comparison.b):
            known = set(MECHANISMS.get(side.mechanism).defaults)
            assert set(side.params) | set(comparison.match) <= known, comparison.id


@pytest.mark.parametrize("paper", rp.known_papers())
def test_committed_reproductions_are_what_the_rules_give(paper) -> None:
    """Each committed reproduction.json equals the verdicts recomputed from the committed
    leaderboard.json beside it: nothing in it is typed in or stale."""
    for doc in rp.paper_report(paper, ROOT / "leaderboards"):
        path = ROOT / "leaderboards" / doc["suite"] / "reproduction.json"
        if not doc["suite"] or not path.is_file():
            continue
        committed = json.loads(path.read_text())["reproductions"]
        assert doc in committed, f"{path} is stale: run bench leaderboard --suite {doc['suite']}"


DOC_PAGES = {
    "posthoc": "docs/posthoc.md",
    "dfil": "docs/dfil.md",
    "lucid": "docs/lucid.md",
    "ip": "docs/inference-privacy.md",
}


# A page may open with one section before its reproduction block: the measurement that
# explains the block's gaps (Posthoc: the attribution of its Table 1 gap, cause by cause).
LEAD_SECTIONS = {
    "posthoc": [
        "## Why bench's Fashion-MNIST rows sit below the paper's Table 1: attribution",
        "## Why bench's MNIST rows sit below the paper's Table 1: attribution",
    ],
}


@pytest.mark.parametrize("paper", rp.known_papers())
def test_each_paper_doc_leads_with_its_committed_reproduction(paper) -> None:
    """The doc page's reproduction block is exactly what the committed leaderboards give, so
    every number in it quotes a committed row (`bench reproduce PAPER --docs PAGE`)."""
    page = (ROOT / DOC_PAGES[paper]).read_text()
    begin = page.find("<!-- reproduction:begin")
    assert begin >= 0, f"{DOC_PAGES[paper]} has no reproduction block"
    before = [line for line in page[:begin].splitlines() if line.startswith("## ")]
    assert before == LEAD_SECTIONS.get(paper, []), "the block must come before the sections"
    end = page.index(rp.DOC_END) + len(rp.DOC_END)
    expected = rp.docs_block(paper, ROOT / "leaderboards").rstrip("\n")
    assert page[begin:end] == expected, f"run bench reproduce {paper} --docs {DOC_PAGES[paper]}"


def test_a_fresh_process_gives_the_same_verdicts_as_one_that_imported_the_families() -> None:
    """A flag that reads a row's notion ("estimate fails" reads its bound's false-alarm rate)
    is the same whether or not anything imported the mechanism families before: the
    reproduction loads the families of the rows it judges. A fresh interpreter, which has
    imported none, writes dfil's block exactly as the page holds it."""
    script = (
        "import sys; from pathlib import Path; "
        "from bench.report.reproduce import reproduction as rp; "
        "sys.stdout.write(rp.docs_block('dfil', Path(sys.argv[1])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(ROOT / "leaderboards")],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    page = (ROOT / DOC_PAGES["dfil"]).read_text()
    begin, end = page.find("<!-- reproduction:begin"), page.index(rp.DOC_END) + len(rp.DOC_END)
    assert out.rstrip("\n") == page[begin:end]


def test_the_docs_block_replaces_itself_and_is_inserted_after_the_title() -> None:
    block = rp.DOC_BEGIN.format(paper="x") + "\nnew\n" + rp.DOC_END + "\n"
    fresh = rp.replace_docs_block("# Title\n\ntext\n", block)
    assert fresh.startswith("# Title\n\n<!-- reproduction:begin") and fresh.endswith("text\n")
    again = rp.replace_docs_block(fresh, block.replace("new", "newer"))
    assert "newer" in again and "\nnew\n" not in again and again.count("reproduction:end") == 1


def test_parameters_match_by_value_and_booleans_only_booleans() -> None:
    assert rp._same(1, 1.0) and rp._same(False, False) and rp._same("early", "early")
    assert not rp._same(True, 1) and not rp._same(0, False) and not rp._same(1.0, 2)


def test_a_stated_relative_tolerance_widens_the_ci_and_nothing_else(reference) -> None:
    rows = [_row(1.0, 0.54), _row(2.0, 0.90), _row(5.0, 0.80)]  # no trend: eps 2 > eps 5
    assert _verdicts(reference, rows)["eps1"] == rp.NOT_REPRODUCED  # 0.50 vs [0.52, 0.56]
    tolerant = rp.parse_reference(
        REFERENCE.replace("params = { eps = 1 }", "params = { eps = 1 }\nrel_tolerance = 0.05"), "t"
    )
    assert _verdicts(tolerant, rows)["eps1"] == rp.REPRODUCED  # 0.50 + 0.025 reaches 0.52


def _committed_docs() -> list[dict]:
    return [
        doc
        for path in sorted((ROOT / "leaderboards").glob("*/reproduction.json"))
        for doc in json.loads(path.read_text())["reproductions"]
    ]


def test_no_committed_verdict_says_more_than_its_numbers() -> None:
    """Over every committed reproduction.json: no "reproduced" on a row at chance, constant,
    below the prior floor or with a CI too wide to tell the paper's value from chance; no
    level verdict on a substitute cell; no "trend reproduced" check with a reversed or
    overlapping pair or an effect outside [1/2, 2] x the paper's."""
    docs = _committed_docs()
    assert docs, "no committed reproduction.json"
    for doc in docs:
        for cell in doc["cells"]:
            where = f"{doc['suite']}: {cell['id']}"
            assert cell["class"] in vr.CLASSES, where
            if cell["class"] == vr.SUBSTITUTE:
                assert cell["verdict"] in vr.DIRECTION_VERDICTS, where
            if cell["verdict"] != vr.REPRODUCED:
                continue
            bench = cell["bench"]
            assert not set(bench["flags"]) & set(vr.UNINFORMATIVE), where
            if bench["level"] is not None:
                assert vr.half_width(bench) < abs(cell["paper"] - bench["level"]), where
        for trend in doc["trends"]:
            if trend["verdict"] in (vr.TREND_KEPT, vr.DIRECTION_KEPT):
                assert trend["reversed"] == trend["unseparated"] == 0, trend["id"]
            if trend["verdict"] == vr.TREND_KEPT:
                assert 0.5 <= trend["ratio"] <= 2.0, trend["id"]
        for cell in doc["cells"]:
            if cell["verdict"] == vr.TREND:
                checks = [t for t in doc["trends"] if t["id"] in cell["trends"]]
                assert checks and all(t["verdict"] == vr.TREND_KEPT for t in checks), cell["id"]


def test_the_cells_bench_has_no_row_for_say_why() -> None:
    """The shipped tables: the LUCID middle column is eps = 0.2 (see the next test) and
    no row answers it yet; every such cell carries the note saying so."""
    lucid = rp.load_reference("lucid")
    middle = [c for c in lucid.cells if c.params.get("eps") == 0.2]
    assert len(middle) == 9 and all("eps = 0.2" in c.note for c in middle)


def test_lucids_middle_column_is_the_eps_its_naive_noise_numbers_imply() -> None:
    """The paper's Naive-Noise accuracy is p * acc + (1 - p) * (1 - acc), p the keep
    probability of its exponential mechanism (the one bench implements): the eps each cell
    names must reproduce the printed value to its 3 digits, from the unprotected accuracy
    the same table prints."""
    from mechanisms.label_only.base import keep_probability

    lucid = rp.load_reference("lucid")
    clean = {(c.suite, c.task): c.value for c in lucid.cells if c.mechanism == "label-only"}
    noise = [c for c in lucid.cells if c.mechanism == "naive-noise"]
    assert {c.params["eps"] for c in noise} == {0.0, 0.2, 1.0}
    for cell in noise:
        acc = clean[(cell.suite, cell.task)]
        p = keep_probability(cell.params["eps"], 2)
        assert p * acc + (1 - p) * (1 - acc) == pytest.approx(cell.value, abs=0.0015), cell.id


def test_bench_reproduce_without_a_leaderboard_exits_1_in_one_line(
    tmp_path, monkeypatch, capsys
) -> None:
    from tests.conftest import cli_here

    result = cli_here(monkeypatch, capsys, "reproduce", "ip", "--root", str(tmp_path))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "no committed leaderboard" in result.stderr


def test_bench_reproduce_prints_metrics_flags_and_classes(monkeypatch, capsys) -> None:
    from tests.conftest import cli_here

    result = cli_here(
        monkeypatch, capsys, "reproduce", "lucid", "--root", str(ROOT / "leaderboards")
    )
    assert result.returncode == 0
    line = next(
        x for x in result.stdout.splitlines() if "t2-lucid-adult-adult-naive-noise-eps0 " in x
    )
    assert "accuracy" in line and "scaled" in line and "[at chance]" in line
    assert result.stdout.splitlines()[-1].startswith("lucid: like-for-like: ")


@pytest.mark.parametrize("paper", rp.known_papers())
def test_each_paper_page_leads_its_coverage_with_the_like_for_like_count(paper) -> None:
    """The doc page states the three counts, the like-for-like one first; they nest (a
    like-for-like run verdict is a run verdict, a run verdict needs a cell or check), and
    every headline has cells or checks, or the reason none can."""
    reference = rp.load_reference(paper)
    cov = rp.coverage(reference, rp.paper_report(paper, ROOT / "leaderboards"))
    assert cov["like_for_like"] <= cov["run"] <= cov["covered"] <= cov["total"], cov
    page = (ROOT / DOC_PAGES[paper]).read_text()
    assert f"Headline results: {rp.coverage_counts(cov)}." in page
    assert rp.coverage_counts(cov).startswith(f"{cov['like_for_like']} of {cov['total']} ")
    for line in cov["headlines"]:
        assert line["covered"] or line["reason"], line["id"]


def test_a_cell_of_the_same_computation_is_marked_as_one_measurement() -> None:
    """ip's (eps, r) = (0.25, 0.05) calibrates the sigma of (0.5, 0.1): the table says it is
    the same computation, and no verdict counts it as evidence of r / eps invariance."""
    (doc,) = [d for d in rp.paper_report("ip", ROOT / "leaderboards") if d["suite"] == "ip-fmnist"]
    cell = next(c for c in doc["cells"] if c["same_as"])
    assert cell["verdict"] == vr.NO_DIRECTION and not cell["trends"]
    notes = {cid: text for _, cid, text in rp.table_view(doc)["notes"]}
    assert notes[cell["id"]].startswith(f"the same computation as {cell['same_as']}")


def test_chance_flags_speak_of_the_utility_only() -> None:
    """A cost cell (release time) on a row whose accuracy is at chance carries no chance
    flag: chance is about what the answers are worth, not how long they take."""
    row = {**_row(1.0, 0.1), "at_chance": True, "constant_predictor": True}
    row["metrics"]["release_ms"] = _metric(0.2, 0.01)
    assert vr.row_flags("accuracy", row) == [vr.AT_CHANCE, vr.CONSTANT]
    assert vr.row_flags("release_ms", row) == []
    row["metrics"]["auc"] = _metric(0.6, 0.02)  # one label for all, but scores that rank
    assert vr.row_flags("auc", row) == []


def test_no_committed_match_reads_reproduced_beside_a_flag() -> None:
    """Over every committed reproduction.json: no "reproduced" cell whose row carries a flag,
    no "trend reproduced" cell or check any of whose rows (the cell's and its checks') carries
    one; every check lists the flags of the rows it uses, and one with a row at chance or
    below the floor, or whose contrast holds by construction, is inconclusive."""
    docs = _committed_docs()
    for doc in docs:
        flags = {c["id"]: (c["bench"] or {}).get("flags", []) for c in doc["cells"]}
        checks = {t["id"]: t for t in doc["trends"]}
        for cell in doc["cells"]:
            if cell["verdict"] == vr.REPRODUCED:
                assert not flags[cell["id"]], (doc["suite"], cell["id"])
            if cell["verdict"] == vr.TREND:
                used = {c for t in cell["trends"] for c in checks[t]["cells"]} | {cell["id"]}
                assert not any(flags[c] for c in used), (doc["suite"], cell["id"])
        for trend in doc["trends"]:
            if trend["verdict"] == vr.NOT_RUN:
                continue
            found = {f: [c for c in trend["cells"] if f in flags[c]] for f in vr.FLAGS}
            assert trend["flags"] == {f: cs for f, cs in found.items() if cs}, trend["id"]
            if set(trend["flags"]) & set(vr.UNINFORMATIVE) or trend["by_construction"]:
                assert trend["verdict"] == vr.INCONCLUSIVE, trend["id"]
            if trend["verdict"] == vr.TREND_KEPT:
                assert not trend["flags"], trend["id"]


def test_a_kept_direction_is_kept_within_a_factor_of_two_only() -> None:
    for doc in _committed_docs():
        for trend in doc["trends"]:
            ratio = trend.get("ratio")
            if trend["verdict"] == vr.DIRECTION_KEPT and ratio is not None:
                assert 0.5 <= ratio <= 2.0, trend["id"]
            if trend["verdict"] in (vr.DIRECTION_SMALLER, vr.DIRECTION_LARGER):
                assert vr.size_words(ratio) in trend["why"], trend["id"]


def test_every_credit_cell_is_a_substitute() -> None:
    """The credit task loads modeldata credit_data, not the LUCID paper's Default of Credit
    Card Clients."""
    credit = [c for c in rp.load_reference("lucid").cells if c.task == "credit"]
    assert credit and all(c.klass == vr.SUBSTITUTE for c in credit)
    committed = [c for d in _committed_docs() for c in d["cells"] if c["row"]["task"] == "credit"]
    assert committed and all(c["class"] == vr.SUBSTITUTE for c in committed)


@pytest.mark.parametrize("paper", rp.known_papers())
def test_each_cell_names_the_dataset_its_task_loads_or_is_a_substitute(paper) -> None:
    """A same or scaled cell's dataset is the one its task declares it loads
    (`source_dataset` on the task class); any other cell is a substitute."""
    for cell in rp.load_reference(paper).cells:
        loads = rp.task_source_dataset(cell.task)
        assert loads is not None, f"task {cell.task} declares no source dataset"
        if rp.paper_dataset(cell.dataset) != loads:
            assert cell.klass == vr.SUBSTITUTE, (cell.id, cell.dataset, loads)


PAPERS = Path(os.environ.get("BENCH_PAPERS", "/work/shared/seeds"))
SEED_OF = {"posthoc": ("000", "001"), "dfil": ("002",), "lucid": ("003",), "ip": ("004",)}


def _paper_text(paper: str) -> str | None:
    files = [f for s in SEED_OF[paper] for f in sorted(PAPERS.glob(f"{s}_*.txt"))]
    return "\n".join(f.read_text() for f in files) if files else None


def _printed_forms(value: float) -> set[str]:
    """How a paper may print `value`: as is, or in percent."""
    forms = {f"{value:g}", f"{value * 100:g}", f"{value * 100:.1f}", f"{value * 100:.2f}"}
    return forms | ({f"{value:g}"[1:]} if f"{value:g}".startswith("0.") else set())


def _in_text(token: str, text: str) -> bool:
    return re.search(r"(?<![\d.])" + re.escape(token) + r"(?![\d])", text) is not None


@pytest.mark.parametrize("paper", rp.known_papers())
def test_each_cell_value_is_printed_read_from_a_figure_or_derived(paper) -> None:
    """A cell's value is printed in the paper's text (as is, in percent, or as its `printed`
    text says: "2 sec/image" for 2000 ms), read from a named figure with a reading tolerance,
    or follows from what the paper states (`derived`, with the reason); else it has no value
    (nan). The papers' text is read from $BENCH_PAPERS (the plain-text copies)."""
    text = _paper_text(paper)
    if text is None:
        pytest.skip(f"no plain-text copy of the papers under {PAPERS} (set BENCH_PAPERS)")
    for cell in rp.load_reference(paper).cells:
        if math.isnan(cell.value) or cell.derived:
            continue
        if "read from Fig." in cell.source:
            assert cell.rel_tolerance > 0, cell.id
            continue
        tokens = {cell.printed} if cell.printed else _printed_forms(cell.value)
        assert any(_in_text(t, text) for t in tokens), (cell.id, cell.value, tokens)


def test_the_headline_claims_that_had_no_check_have_one_with_a_verdict() -> None:
    """Posthoc E1 (ARL-C-N best of the combinations) on MNIST and Fashion-MNIST, and the
    Inference Privacy comparisons at equal (eps, r), from the committed boards."""
    checks = {t["id"]: t for d in _committed_docs() for t in d["trends"]}
    for dataset in ("mnist", "fmnist"):
        e1 = [t for tid, t in checks.items() if tid.startswith(f"e1-{dataset}-arl-c-n-best-")]
        assert len(e1) == 4 and all(t["verdict"] in vr.TREND_VERDICTS for t in e1)
        assert any(t["verdict"] != vr.NOT_RUN for t in e1)
    for cid in (
        "ip-gauss-output-above-input-sll",
        "ip-finetuned-above-plain",
        "ip-sll-output-crosses-finetuned-input",
    ):
        assert checks[cid]["verdict"] != vr.NOT_RUN and checks[cid]["pairs"] >= 2, cid
    comparison = next(c for c in rp.load_reference("ip").comparisons if c.id == cid)
    assert comparison.suite == "ip-fmnist"  # the parameter a track board would replace


def test_the_posthoc_fmnist_page_says_where_the_papers_values_are_reached() -> None:
    """Only releases bench refutes reach the paper's Table 1 values on Fashion-MNIST: the
    committed page says so in one line, linked to the attribution section."""
    (doc,) = json.loads((ROOT / "leaderboards/posthoc-fmnist/reproduction.json").read_text())[
        "reproductions"
    ]
    line = doc["attribution"]
    assert line and line["reached"] >= 1 and line["page"] == "docs/posthoc.md"
    md = (ROOT / "leaderboards/posthoc-fmnist/reproduction.md").read_text()
    assert line["text"] in md and f"../../docs/posthoc.md#{line['anchor']}" in md
    assert (ROOT / "docs/posthoc.md").read_text().count(f"## {line['section']}") == 1
