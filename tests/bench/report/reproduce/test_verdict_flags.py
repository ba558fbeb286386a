"""A flag is never hidden behind a verdict: a cell on a row whose claim is refuted or whose
estimate fails reads what was matched and what the flag means, a trend check inherits the
flags of every row it uses (inconclusive on a row at chance or a contrast that holds by
construction), and a kept direction says how its size compares with the paper's."""

from __future__ import annotations

import pytest

from bench.core.errors import ConfigError
from bench.report.reproduce import reproduction as rp
from bench.report.reproduce import verdicts as vr

TABLE = """
[paper]
id = "toy"
title = "A toy paper"
url = "https://example.org/toy"

[[cell]]
id = "low"
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
params = { eps = 1.0 }

[[cell]]
id = "high"
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

[[trend]]
id = "by-eps"
source = "Table 1"
claim = "accuracy rises with eps"
tiers = [["high"], ["low"]]
"""


def _metric(value: float, half: float) -> dict:
    return {"value": value, "ci": [value - half, value + half], "n": 100}


def _row(eps: float, accuracy: float, half: float = 0.02, **flags) -> dict:
    return {
        "task": "mnist",
        "mechanism": "m",
        "params": {"eps": eps},
        "guarantee": {"notion": "dp", "eps": eps},
        "attack": None,
        "attack_params": {},
        "seeds": 3,
        "metrics": {"accuracy": _metric(accuracy, half), "chance": _metric(0.1, 0.0)},
        **flags,
    }


def _doc(text: str, rows: list[dict]) -> dict:
    return rp.reproduction(rp.parse_reference(text, "toy.toml"), "toy-suite", rows)


def _verdicts(doc: dict) -> dict[str, str]:
    return {c["id"]: c["verdict"] for c in doc["cells"]}


def test_a_matched_value_on_a_refuted_row_is_not_a_reproduction() -> None:
    doc = _doc(TABLE, [_row(1.0, 0.505, unreliable=True), _row(5.0, 0.905)])
    cell = next(c for c in doc["cells"] if c["id"] == "low")
    assert cell["verdict"] == vr.VALUE_MATCHED_REFUTED
    assert "does not meet its stated guarantee" in cell["why"]
    assert _verdicts(doc)["high"] == vr.REPRODUCED  # its own row is clean
    # The check that uses the refuted row keeps the order but is no reproduction either.
    (trend,) = doc["trends"]
    assert trend["verdict"] == vr.TREND_MATCHED_REFUTED
    assert trend["flags"] == {vr.UNRELIABLE: ["low"]}


def test_a_kept_trend_through_a_flagged_row_gives_its_cells_the_qualified_verdict() -> None:
    """Both cells outside their CIs, order and size kept (ratio 0.75): on clean rows both
    read trend reproduced; with the low row's claim refuted, both read trend matched."""
    clean = _doc(TABLE, [_row(1.0, 0.40), _row(5.0, 0.70)])
    assert set(_verdicts(clean).values()) == {vr.TREND}
    flagged = _doc(TABLE, [_row(1.0, 0.40, unreliable=True), _row(5.0, 0.70)])
    assert set(_verdicts(flagged).values()) == {vr.TREND_MATCHED_REFUTED}
    high = next(c for c in flagged["cells"] if c["id"] == "high")
    assert "flagged rows in its checks: low" in high["why"]


def test_a_row_at_chance_makes_its_trend_check_inconclusive() -> None:
    """The paper's order with disjoint CIs and the paper's size, but the low row's CI
    reaches chance (0.1): the check says nothing, and no cell takes a trend verdict."""
    doc = _doc(TABLE, [_row(1.0, 0.12, half=0.03), _row(5.0, 0.60)])
    (trend,) = doc["trends"]
    assert trend["kept"] == 1 and trend["verdict"] == vr.INCONCLUSIVE
    assert "low at chance" in trend["why"] and vr.TREND_KEPT in trend["why"]
    assert _verdicts(doc)["high"] == vr.NOT_REPRODUCED


def test_a_contrast_that_holds_by_construction_is_inconclusive() -> None:
    text = TABLE.replace(
        'tiers = [["high"], ["low"]]',
        'by_construction = "a coin flip is below any network"\ntiers = [["high"], ["low"]]',
    )
    doc = _doc(text, [_row(1.0, 0.40), _row(5.0, 0.70)])
    (trend,) = doc["trends"]
    assert trend["verdict"] == vr.INCONCLUSIVE
    assert trend["why"] == "holds by construction: a coin flip is below any network"
    assert set(_verdicts(doc).values()) == {vr.NOT_REPRODUCED}


def _substitute(text: str) -> str:
    return text.replace('class = "same"', 'class = "substitute"\ndifference = "SVHN"')


@pytest.mark.parametrize(
    ("low", "high", "verdict", "words"),
    [
        (0.50, 0.90, vr.DIRECTION_KEPT, ""),  # the paper's own effect
        (0.50, 0.52, vr.DIRECTION_SMALLER, "20x smaller"),  # 0.02 against 0.4
        (0.15, 0.52, vr.DIRECTION_KEPT, ""),  # 0.37: within 2x
        (0.30, 0.60, vr.DIRECTION_KEPT, ""),  # 0.3 against 0.4: 0.75x
        (0.30, 0.35, vr.DIRECTION_SMALLER, "8x smaller"),
    ],
)
def test_a_kept_direction_says_its_size(low, high, verdict, words) -> None:
    doc = _doc(_substitute(TABLE), [_row(1.0, low, 0.005), _row(5.0, high, 0.005)])
    (trend,) = doc["trends"]
    assert trend["verdict"] == verdict
    assert words in trend["why"]
    assert set(_verdicts(doc).values()) == {verdict}


def test_a_larger_effect_is_named_as_such() -> None:
    """A paper effect of 0.1 (0.5 -> 0.6) against bench's 0.483: 4.8x larger."""
    text = _substitute(TABLE).replace("value = 0.90", "value = 0.60")
    doc = _doc(text, [_row(1.0, 0.2, 0.005), _row(5.0, 0.683, 0.005)])
    (trend,) = doc["trends"]
    assert trend["verdict"] == vr.DIRECTION_LARGER and "4.8x larger" in trend["why"]


def test_size_words() -> None:
    assert vr.size_words(0.05) == "20x smaller"
    assert vr.size_words(4.83) == "4.8x larger"


def test_explicit_pairs_order_only_the_pairs_they_name() -> None:
    """A check over pairs: the paper orders high above low only, so the third cell's place
    is not judged."""
    third = TABLE.replace('id = "low"', 'id = "mid"', 1).split("[[cell]]")[1]
    text = TABLE.replace(
        "[[trend]]",
        "[[cell]]"
        + third.replace("value = 0.50", "value = 0.70").replace("eps = 1.0 }", "eps = 2.0 }")
        + "\n[[trend]]",
    )
    text = text.replace('tiers = [["high"], ["low"]]', 'pairs = [["high", "low"], ["high", "mid"]]')
    reference = rp.parse_reference(text, "toy.toml")
    (trend,) = reference.trends
    assert trend.pairs() == [("high", "low"), ("high", "mid")]
    assert trend.cell_ids() == ["high", "low", "mid"]
    doc = rp.reproduction(reference, "toy-suite", [_row(1.0, 0.5), _row(2.0, 0.95), _row(5.0, 0.9)])
    assert doc["trends"][0]["reversed"] == 1  # mid 0.95 above high 0.9


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        ('tiers = [["high"], ["low"]]', "needs exactly one of tiers or pairs"),
        ('pairs = [["high"]]', "pairs must be a non-empty list"),
        ('pairs = [["low", "high"]]', "does not put low"),
    ],
)
def test_malformed_pair_checks_are_refused(replace, message) -> None:
    text = TABLE.replace('tiers = [["high"], ["low"]]', replace)
    if replace.startswith("tiers"):
        text = text.replace(replace, replace + '\npairs = [["high", "low"]]')
    with pytest.raises(ConfigError, match=message):
        rp.parse_reference(text, "toy.toml")


def test_an_estimate_that_fails_qualifies_the_match_like_a_refuted_claim() -> None:
    answer = {
        "value": 0.5,
        "ci": [0.49, 0.51],
        "metric": "accuracy",
        "attack": False,
        "level": 0.1,
        "flags": [vr.ESTIMATE_FAILS],
    }
    verdict, why = vr.level_verdict(0.5, answer, 0.0, [])
    assert verdict == vr.VALUE_MATCHED_ESTIMATE and "estimate" in why
    assert vr.level_verdict(0.5, {**answer, "flags": []}, 0.0, [])[0] == vr.REPRODUCED
