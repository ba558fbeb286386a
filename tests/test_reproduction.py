"""Paper reproduction tables: reference files are checked, cells match exactly one row, and
verdicts follow the stated rules from the numbers alone; committed reproduction files are
what the rules give on the committed leaderboards."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.errors import ConfigError
from bench.report import reproduction as rp
from bench.report.write import write_leaderboard

ROOT = Path(__file__).resolve().parents[1]

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
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 1 }
trend = "by-eps"

[[cell]]
id = "eps2"
source = "Table 1"
dataset = "MNIST"
model = "CNN"
setting = "eps = 2"
metric = "accuracy"
value = 0.70
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 2.0 }
trend = "by-eps"

[[cell]]
id = "eps5"
source = "Table 1"
dataset = "MNIST"
model = "CNN"
setting = "eps = 5"
metric = "accuracy"
value = 0.90
suite = "toy-suite"
task = "mnist"
mechanism = "m"
params = { eps = 5.0 }
trend = "by-eps"

[[cell]]
id = "attack"
source = "Fig. 2"
dataset = "MNIST"
model = "CNN"
setting = "eps = 5, optimisation attack"
metric = "ssim"
value = 0.30
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
suite = ""
task = "cifar100"
mechanism = "m"
params = {}
"""


def _metric(value: float, half: float) -> dict:
    return {"value": value, "ci": [value - half, value + half], "n": 100}


def _row(eps: float, accuracy: float, half: float = 0.02, attack: str | None = None) -> dict:
    metrics = {"accuracy": _metric(accuracy, half), "chance": _metric(0.1, 0.0)}
    if attack:
        metrics = {"ssim": _metric(accuracy, half)}
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


def _verdicts(reference: rp.Reference, rows: list[dict] | None) -> dict[str, str]:
    doc = rp.reproduction(reference, "toy-suite", rows)
    return {c["id"]: c["verdict"] for c in doc["cells"]}


def test_a_value_inside_the_ci_is_reproduced_and_a_kept_order_is_a_trend(reference) -> None:
    rows = [
        _row(1.0, 0.505),
        _row(2.0, 0.60),
        _row(5.0, 0.80),
        _row(5.0, 0.30, attack="optimization"),
    ]
    assert _verdicts(reference, rows) == {
        "eps1": rp.REPRODUCED,  # 0.50 in [0.485, 0.525]
        "eps2": rp.TREND,  # 0.70 outside, but 0.505 < 0.60 < 0.80 as in the paper
        "eps5": rp.TREND,
        "attack": rp.REPRODUCED,
    }


def test_a_row_at_chance_is_no_trend(reference) -> None:
    """The order holds over the group, but eps 2's row is at chance: it says nothing of
    where the paper's 0.70 lies, so that cell alone is not reproduced."""
    rows = [_row(1.0, 0.505), {**_row(2.0, 0.60), "at_chance": True}, _row(5.0, 0.80)]
    verdicts = _verdicts(reference, rows)
    assert verdicts["eps2"] == rp.NOT_REPRODUCED and verdicts["eps5"] == rp.TREND


def test_a_significant_reversal_breaks_the_trend(reference) -> None:
    rows = [_row(1.0, 0.60), _row(2.0, 0.40), _row(5.0, 0.80)]
    verdicts = _verdicts(reference, rows)
    assert verdicts["eps2"] == verdicts["eps5"] == rp.NOT_REPRODUCED
    assert verdicts["attack"] == rp.NOT_RUN  # no attack row


def test_overlapping_cis_alone_do_not_make_a_trend(reference) -> None:
    rows = [_row(1.0, 0.60, 0.3), _row(2.0, 0.61, 0.3), _row(5.0, 0.62, 0.25)]
    verdicts = _verdicts(reference, rows)  # no pair is significantly ordered either way
    assert verdicts["eps5"] == rp.NOT_REPRODUCED
    assert verdicts["eps1"] == rp.REPRODUCED and verdicts["eps2"] == rp.REPRODUCED


def test_a_trend_with_an_unanswered_cell_is_not_judged(reference) -> None:
    rows = [_row(1.0, 0.30), _row(2.0, 0.40)]  # eps 5 never ran
    verdicts = _verdicts(reference, rows)
    assert verdicts == {
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
        (lambda t: t.replace('trend = "by-eps"', 'trnd = "x"', 1), "unknown keys"),
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
    assert "| Table 1 | MNIST / CNN | eps = 1 | accuracy | 0.5 | 0.505 [0.485, 0.525] | 3 |" in md
    page = (tmp_path / "index.html").read_text()
    assert 'id="reproduction-toy"' in page and "trend reproduced" in page


def test_reproductions_refresh_from_the_committed_leaderboard_alone(
    reference, tmp_path, monkeypatch
) -> None:
    from bench.report.write import refresh_reproductions

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
    from bench.registry import ATTACKS, MECHANISMS
    from bench.suite import available_suites, load_suite

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


@pytest.mark.parametrize("paper", rp.known_papers())
def test_each_paper_doc_leads_with_its_committed_reproduction(paper) -> None:
    """The doc page's reproduction block is exactly what the committed leaderboards give, so
    every number in it quotes a committed row (`bench reproduce PAPER --docs PAGE`)."""
    page = (ROOT / DOC_PAGES[paper]).read_text()
    begin = page.find("<!-- reproduction:begin")
    assert begin >= 0, f"{DOC_PAGES[paper]} has no reproduction block"
    assert page[:begin].count("\n## ") == 0, "the block must come before the first section"
    end = page.index(rp.DOC_END) + len(rp.DOC_END)
    expected = rp.docs_block(paper, ROOT / "leaderboards").rstrip("\n")
    assert page[begin:end] == expected, f"run bench reproduce {paper} --docs {DOC_PAGES[paper]}"


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
        REFERENCE.replace('trend = "by-eps"', 'trend = "by-eps"\nrel_tolerance = 0.05', 1), "t"
    )
    assert _verdicts(tolerant, rows)["eps1"] == rp.REPRODUCED  # 0.50 + 0.025 reaches 0.52
