"""Leaderboard audit cells say "inconclusive" when the row's audit had less than the
stated power to refute 1.25x its claim at the draws it used (bench.report.board.audit_power)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.certify.audit.power import plan_at
from bench.report.board.audit_power import POWER_LEVEL, audit_power, audit_verdict, inconclusive
from bench.report.board.overview import _audit_power


def _m(value: float) -> dict[str, Any]:
    return {"value": value, "ci": [value, value], "n": 1}


def _row(
    eps: float, delta: float | None, draws: int, lb: float, notion: str = "ip"
) -> dict[str, Any]:
    guarantee: dict[str, Any] = {"notion": notion, "eps": eps, "distance": "l2/input"}
    if delta is not None:
        guarantee["delta"] = delta
    metrics = {"eps_audit_lb": _m(lb), "eps_audit_ideal": _m(lb), "audit_draws": _m(draws)}
    return {"guarantee": guarantee, "metrics": metrics, "attack": None}


def test_the_level_is_the_one_validate_uses() -> None:
    from bench.plugin.checks.validation import POWER_LEVEL as VALIDATE_LEVEL

    assert POWER_LEVEL == VALIDATE_LEVEL == 0.8


def test_a_board_sized_gaussian_audit_is_inconclusive() -> None:
    """eps 2, delta 1e-5 at 200,000 draws (the committed default board's gauss-input row):
    power 2% against 1.25x the claim."""
    row = _row(2.0, 1e-5, 200_000, 1.26)
    assert audit_power(row) == pytest.approx(0.02, abs=0.005)
    assert inconclusive(row) == "inconclusive: power 2% < 80% against 1.25x the claim"
    text = _audit_power(row["metrics"], row["guarantee"])
    assert text.startswith("inconclusive: power 2% < 80%") and "200,000 draws" in text


def test_a_gaussian_audit_with_enough_draws_is_not_labelled() -> None:
    row = _row(2.0, 1e-5, 3_000_000, 1.6)
    assert audit_power(row) >= POWER_LEVEL  # 0.89: what the audit itself plans with
    assert audit_power(row) == plan_at("gaussian", 2.0, 1e-5, 3_000_000).power
    assert inconclusive(row) is None
    assert _audit_power(row["metrics"], row["guarantee"]).startswith("could show")


def test_a_refuted_claim_is_conclusive() -> None:
    assert inconclusive(_row(2.0, 1e-5, 200_000, 2.5)) is None


def test_a_pure_claim_beyond_any_test_at_these_draws_has_no_power() -> None:
    """eps 13 with delta 0: no audit of 200,000 draws can show a bound near it (a perfect
    test's is about 11), though one of 10M draws a side could (about 14.8)."""
    row = _row(13.0, None, 200_000, 10.9, notion="ldp")
    assert audit_power(row) == 0.0
    assert inconclusive(row) is not None
    assert audit_verdict(row)["kind"] == "inconclusive"


@pytest.mark.parametrize("eps", [15.0, 1000.0])
def test_a_claim_beyond_any_planned_audit_is_untestable_not_inconclusive(eps: float) -> None:
    """eps above what a perfect test shows at 10M draws a side: more draws would not help."""
    row = _row(eps, None, 3_000_000, 10.9, notion="ldp")
    assert audit_power(row) == 0.0
    assert inconclusive(row) is None
    verdict = audit_verdict(row)
    assert verdict["kind"] == "untestable" and "14.8" in verdict["text"], verdict
    assert audit_verdict(_row(eps, None, 3_000_000, eps + 1, notion="ldp"))["kind"] == "refuted"


def test_an_approximate_claim_beyond_the_largest_planned_audit_is_untestable() -> None:
    """(8.8, 1e-5) at 10M draws a side, the ladder's top (track-fmnist's dp-encoder at
    1/dFIL = 0.01): power 0% against 1.25x the claim, and no planned audit is larger."""
    row = _row(8.81681, 1e-5, 10_000_000, 6.15, notion="ldp")
    assert audit_power(row) < 0.01
    verdict = audit_verdict(row)
    assert verdict["kind"] == "untestable" and "power 0% < 80%" in verdict["text"], verdict
    assert audit_verdict(_row(4.0, 1e-5, 10_000_000, 3.5, notion="ldp"))["kind"] == "consistent"
    assert audit_verdict(_row(4.0, 1e-5, 200_000, 3.0, notion="ldp"))["kind"] == "inconclusive"


def test_a_pure_claim_within_reach_is_left_unlabelled() -> None:
    """eps 2 with delta 0: the power depends on the noise's spread, not on the row."""
    assert audit_power(_row(2.0, 0.0, 50_000, 0.2)) is None
    assert inconclusive(_row(2.0, 0.0, 50_000, 0.2)) is None


@pytest.mark.parametrize("notion", ["reconstruction", "idp"])
def test_other_audits_are_not_judged(notion: str) -> None:
    assert inconclusive(_row(20.0, 0.025, 200_000, 8.6, notion=notion)) is None


def test_zero_draws_have_no_power() -> None:
    assert audit_power(_row(2.0, 1e-5, 0, 0.0)) == 0.0
