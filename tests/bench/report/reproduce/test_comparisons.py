"""Mechanism comparisons at equal settings (`[[comparison]]`): cells taken from the rows of
the suite the comparison names, pairs at every shared setting (or, for a crossing, at the
two ends of each privacy axis); the headline coverage counts; the attribution line."""

from __future__ import annotations

import pytest

from bench.core.errors import ConfigError
from bench.report.reproduce import reproduction as rp
from bench.report.reproduce import verdicts as vr
from bench.report.reproduce.attribution import attribution_line, parse_attribution

TABLE = """
[paper]
id = "toy"
title = "A toy paper"
url = "https://example.org/toy"

[[cell]]
id = "clean"
source = "Fig. 1"
dataset = "CIFAR-10"
model = "CNN"
setting = "no noise"
metric = "accuracy"
value = nan
class = "substitute"
difference = "Fashion-MNIST"
suite = "{suite}"
task = "fmnist"
mechanism = "identity"
params = {{}}

[[comparison]]
id = "out-above-in"
source = "Sec. 5"
claim = "output noise above input noise at equal (eps, r)"
suite = "{suite}"
task = "fmnist"
metric = "accuracy"
dataset = "CIFAR-10"
model = "SLL"
class = "substitute"
difference = "Fashion-MNIST"
match = ["eps", "r"]
kind = "{kind}"
{privacy}
a = {{ mechanism = "out", params = {{ model = "sll" }}, label = "Output" }}
b = {{ mechanism = "in", params = {{ model = "sll" }}, label = "Input" }}

[[headline]]
id = "comparisons"
source = "Sec. 5"
what = "output against input"
trends = ["out-above-in"]
"""


def _table(suite: str = "board-a", kind: str = "above", privacy: str = "") -> rp.Reference:
    text = TABLE.format(suite=suite, kind=kind, privacy=privacy)
    return rp.parse_reference(text, "toy.toml")


def _row(mechanism: str, eps: float, r: float, accuracy: float, half: float = 0.01) -> dict:
    return {
        "task": "fmnist",
        "mechanism": mechanism,
        "params": {"eps": eps, "r": r, "model": "sll"},
        "attack": None,
        "attack_params": {},
        "seeds": 3,
        "guarantee": {"notion": "ip", "eps": eps},
        "metrics": {
            "accuracy": {"value": accuracy, "ci": [accuracy - half, accuracy + half], "n": 9},
            "chance": {"value": 0.1, "ci": [0.1, 0.1], "n": 9},
        },
    }


ROWS = [
    _row("out", 1.0, 0.1, 0.80),
    _row("in", 1.0, 0.1, 0.70),
    _row("out", 1.0, 0.2, 0.75),
    _row("in", 1.0, 0.2, 0.60),
    _row("out", 2.0, 0.1, 0.85),  # no "in" row at (2, 0.1): not a shared setting
]


def test_a_comparison_pairs_the_sides_at_every_shared_setting() -> None:
    doc = rp.reproduction(_table(), "board-a", ROWS)
    check = next(t for t in doc["trends"] if t["id"] == "out-above-in")
    assert check["pairs"] == 2 and check["kept"] == 2
    assert check["verdict"] == vr.DIRECTION_KEPT  # no printed values: the size is not compared
    made = [c for c in doc["cells"] if c["id"].startswith("out-above-in-")]
    assert sorted(c["id"] for c in made) == [
        "out-above-in-a-eps1-r0.1",
        "out-above-in-a-eps1-r0.2",
        "out-above-in-b-eps1-r0.1",
        "out-above-in-b-eps1-r0.2",
    ]
    assert all(c["paper"] is None and c["class"] == "substitute" for c in made)
    assert next(c for c in made if c["id"] == "out-above-in-b-eps1-r0.2")["bench"]["value"] == 0.6


def test_the_comparison_reads_the_board_its_suite_names() -> None:
    """The same comparison pointed at another board: it answers from that board's rows, and
    the board it no longer names has none of its cells."""
    moved = _table(suite="board-b")
    assert moved.suites() == ["board-b"]
    other = [_row("out", 1.0, 0.1, 0.60), _row("in", 1.0, 0.1, 0.70)]
    doc = rp.reproduction(moved, "board-b", other)
    (check,) = [t for t in doc["trends"] if t["id"] == "out-above-in"]
    assert check["verdict"] == vr.TREND_REVERSED
    assert not rp.reproduction(moved, "board-a", ROWS)["trends"]


def test_a_comparison_without_rows_is_not_run() -> None:
    doc = rp.reproduction(_table(), "board-a", None)
    (check,) = doc["trends"]
    assert check["verdict"] == vr.NOT_RUN and check["pairs"] == 0


def test_a_crossing_orders_the_two_ends_of_each_privacy_axis() -> None:
    """r up is more private: at r = 0.2 output must be above input, at r = 0.1 below it."""
    cross = _table(kind="cross", privacy='privacy = { r = "up" }')
    rows = [
        _row("out", 1.0, 0.1, 0.70),
        _row("in", 1.0, 0.1, 0.80),
        _row("out", 1.0, 0.2, 0.65),
        _row("in", 1.0, 0.2, 0.55),
    ]
    doc = rp.reproduction(cross, "board-a", rows)
    (check,) = [t for t in doc["trends"] if t["id"] == "out-above-in"]
    assert check["pairs"] == 2 and check["kept"] == 2
    (trend,) = [t for t in cross.comparisons]
    from bench.report.reproduce.comparisons import pairs_of

    assert pairs_of(trend, [(1.0, 0.1), (1.0, 0.2)]) == [
        ("out-above-in-a-eps1-r0.2", "out-above-in-b-eps1-r0.2"),
        ("out-above-in-b-eps1-r0.1", "out-above-in-a-eps1-r0.1"),
    ]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda t: t.replace('kind = "above"', 'kind = "cross"'), "a crossing needs privacy"),
        (lambda t: t.replace('kind = "above"', 'kind = "beside"'), "kind must be one of"),
        (lambda t: t.replace('match = ["eps", "r"]', "match = []"), "match must name"),
        (
            lambda t: t.replace(
                'params = { model = "sll" }, label = "Output"',
                'params = { eps = 1 }, label = "Output"',
            ),
            "naming no matched",
        ),
        (
            lambda t: t.replace('trends = ["out-above-in"]', 'trends = ["nope"]'),
            "no trend check or comparison",
        ),
    ],
)
def test_malformed_comparisons_are_refused(edit, message) -> None:
    text = edit(TABLE.format(suite="board-a", kind="above", privacy=""))
    with pytest.raises(ConfigError, match=message):
        rp.parse_reference(text, "toy.toml")


def test_coverage_counts_like_for_like_run_verdicts_first() -> None:
    """Three headlines: one answered by a like-for-like cell, one by substitutes only, one
    whose cells never ran; the counts nest and a never-run cell counts nowhere but 'any
    cell'."""
    reference = rp.parse_reference(
        TABLE.format(suite="board-a", kind="above", privacy="")
        + """
[[cell]]
id = "level"
source = "Table 1"
dataset = "Fashion-MNIST"
model = "CNN"
setting = "eps = 1"
metric = "accuracy"
value = 0.8
class = "same"
suite = "board-a"
task = "fmnist"
mechanism = "out"
params = { eps = 1.0, r = 0.1 }

[[cell]]
id = "never"
source = "Table 2"
dataset = "Fashion-MNIST"
model = "CNN"
setting = "eps = 9"
metric = "accuracy"
value = 0.9
class = "same"
suite = "board-a"
task = "fmnist"
mechanism = "out"
params = { eps = 9.0 }

[[headline]]
id = "table1"
source = "Table 1"
what = "level"
cells = ["level"]

[[headline]]
id = "table2"
source = "Table 2"
what = "never run"
cells = ["never"]
""",
        "toy.toml",
    )
    docs = [rp.reproduction(reference, "board-a", ROWS)]
    cov = rp.coverage(reference, docs)
    counted = {h["id"]: h["counted"] for h in cov["headlines"]}
    assert counted == {
        "comparisons": rp.ANY_RUN,
        "table1": rp.LIKE_FOR_LIKE,
        "table2": rp.ANY_CELL,
    }
    assert (cov["like_for_like"], cov["run"], cov["covered"], cov["total"]) == (1, 2, 3, 3)
    assert rp.coverage_counts(cov).startswith("1 of 3 answered like-for-like")


ATTRIBUTION = {
    "suite": "board-a",
    "source": "Table 1",
    "boards": ["study"],
    "match": ["variant", "eps"],
    "page": "docs/x.md",
    "section": "Why the rows sit below: attribution",
}


def _gap(paper: float = 0.7) -> dict:
    return {
        "source": "Table 1",
        "class": "scaled",
        "verdict": rp.NOT_REPRODUCED,
        "paper": paper,
        "metric": "accuracy",
        "row": {"task": "fmnist", "mechanism": "m", "params": {"variant": "c", "eps": 1.0}},
    }


def _study_row(accuracy: float, unreliable: bool, eps: float = 1.0) -> dict:
    return {
        "task": "fmnist",
        "mechanism": "m",
        "attack": None,
        "params": {"variant": "c", "eps": eps, "sensitivity": "reference-code"},
        "metrics": {"accuracy": {"value": accuracy, "ci": [accuracy - 0.02, accuracy + 0.02]}},
        "unreliable": unreliable,
    }


def test_the_attribution_line_is_said_only_when_the_rows_show_it() -> None:
    attr = parse_attribution(ATTRIBUTION, "toy")
    assert attr.anchor == "why-the-rows-sit-below-attribution"
    flagged = {"study": [_study_row(0.71, True), _study_row(0.2, False)]}
    line = attribution_line(attr, [_gap()], flagged)
    assert line is not None and line["reached"] == 1 and line["gaps"] == 1
    assert "releases whose privacy claim bench refutes" in line["text"]
    # A release that meets its claim reaching the value: the line would be false.
    clean = {"study": [_study_row(0.71, True), _study_row(0.69, False)]}
    assert attribution_line(attr, [_gap()], clean) is None
    # Nothing reaches the value (or the row is of another eps): nothing to say.
    assert attribution_line(attr, [_gap()], {"study": [_study_row(0.5, True)]}) is None
    assert attribution_line(attr, [_gap()], {"study": [_study_row(0.9, True, eps=2.0)]}) is None
