"""Membership attacks are held against the claim they test: a DP claim over training
records against its ceiling, an iDP or label-DP claim against none (the board reports what
the attacks measure), an iDP claim against its own definition where bench checks it (the
certificate's probe). LUCID and naive-idp are judged by the same rule."""

from __future__ import annotations

import json

import pytest

from bench.metrics.membership import dp_membership_bound
from bench.metrics.stats import scalar
from bench.report.board.labels import membership_claim
from bench.report.board.overview import task_overview
from bench.report.board.rows import build_rows
from tests.conftest import ROOT

DP = {"notion": "dp", "eps": 0.5, "delta": 0.0, "distance": "training-set/add-remove"}
IDP = {"notion": "idp", "eps": 0.0, "distance": "training-set/leave-one-out"}
LABEL_DP = {"notion": "dp", "eps": 1.0, "delta": 0.0, "distance": "training-labels/replace-one"}


def _result(mechanism: str, attack: str | None, guarantee: dict, metrics: dict) -> dict:
    return {
        "task": "spam",
        "mechanism": mechanism,
        "params": {"eps": guarantee["eps"]},
        "attack": attack,
        "attack_params": {},
        "seed": 0,
        "guarantee": guarantee,
        "metrics": {k: scalar(v) for k, v in metrics.items()},
    }


# An attack whose AUC (0.7) is above what eps 0.5 allows (0.622) and than eps 0 allows (0.5),
# with the exact TPR test beaten on every seed.
LEAK = {"mia_auc": 0.7, "mia_tpr_at_1pct_fpr": 0.3, "mia_ceiling_beaten": 1.0}


def _flagged(guarantee: dict, utility: dict | None = None) -> bool:
    rows = build_rows(
        [
            _result("m", None, guarantee, utility or {"accuracy": 0.8}),
            _result("m", "mia-loo", guarantee, LEAK),
        ]
    )
    assert len({r["unreliable"] for r in rows}) == 1  # every row of the setting alike
    return rows[0]["unreliable"]


def test_only_dp_claims_over_training_records_are_held_to_the_ceiling() -> None:
    assert _flagged(DP)
    assert not _flagged(IDP)  # lucid, naive-idp and naive-noise claim iDP
    assert not _flagged(LABEL_DP)  # alibi
    assert not _flagged({"notion": "none", "eps": None})
    replace_one = {**DP, "distance": "training-set/replace-one"}
    assert dp_membership_bound(replace_one) == (0.5, 0.0) and _flagged(replace_one)
    assert dp_membership_bound(IDP) is None and dp_membership_bound(LABEL_DP) is None


def test_an_idp_claim_is_checked_against_its_own_definition() -> None:
    """A probed record answered without noise where a leave-one-out network disagrees
    refutes the claim; the certificate holding everywhere does not."""
    assert not _flagged(IDP, {"accuracy": 0.8, "bound_validity": 1.0})
    rows = build_rows(
        [
            _result("lucid", None, IDP, {"accuracy": 0.8, "bound_validity": 0.999}),
            _result("lucid", "mia-loo", IDP, {"mia_auc": 0.5, "mia_tpr_at_1pct_fpr": 0.01}),
        ]
    )
    assert all(r["unreliable"] for r in rows)
    assert "iDP definition check" in rows[0]["unreliable_reason"]


def test_the_board_says_what_each_attack_result_is_held_against() -> None:
    rows = build_rows(
        [
            _result("dp-sgd", None, DP, {"accuracy": 0.8}),
            _result("dp-sgd", "mia-loo", DP, {**LEAK, "mia_ceiling_1pct_fpr": 0.0165}),
            _result("lucid", None, IDP, {"accuracy": 0.8}),
            _result("lucid", "mia-loo", IDP, {**LEAK, "mia_ceiling_1pct_fpr": 0.01}),
        ]
    )
    lines = {line["mechanism"]: line for line in task_overview(rows, "accuracy")["lines"]}
    assert lines["dp-sgd"]["mia_claim"] == "held against the DP ceiling"
    assert lines["dp-sgd"]["mia_ceiling"]["text"] == "0.0165"
    assert lines["lucid"]["mia_claim"] == "measured, not a test of the iDP claim"
    assert lines["lucid"]["mia_ceiling"] is None  # no DP ceiling shown beside an iDP claim
    assert lines["dp-sgd"]["unreliable"] and not lines["lucid"]["unreliable"]
    assert membership_claim(LABEL_DP) == "measured, no ceiling: label DP"


def _committed(board: str) -> list[dict]:
    return json.loads((ROOT / "leaderboards" / board / "leaderboard.json").read_text())["rows"]


@pytest.mark.parametrize("board", ["lucid-adult", "lucid-tabular", "default"])
def test_no_committed_idp_row_is_refuted_by_a_membership_ceiling(board) -> None:
    """LUCID's eps = 0 rows (mia-loo AUC 0.525 [0.504, 0.545] on lucid-adult) and naive-idp's
    are measured by the attacks, not refuted by a DP ceiling they make no claim to."""
    for row in _committed(board):
        if (row.get("guarantee") or {}).get("notion") != "dp":
            assert "membership inference" not in row.get("unreliable_reason", ""), row
    lucid0 = next(
        r
        for r in _committed("lucid-adult")
        if r["mechanism"] == "lucid" and r["params"]["eps"] == 0.0 and r["attack"] == "mia-loo"
    )
    assert lucid0["metrics"]["mia_auc"]["ci"][0] > 0.5 and not lucid0["unreliable"]


@pytest.mark.parametrize("board", ["lucid-adult", "lucid-tabular"])
def test_the_label_only_pages_say_which_claim_each_attack_result_is_held_against(board) -> None:
    page = (ROOT / "leaderboards" / board / "index.html").read_text()
    assert "measured, not a test of the iDP claim" in page  # lucid, naive-idp, naive-noise
    assert "held against the DP ceiling" in page  # dp-sgd
    assert "measured, no ceiling: label DP" in page  # alibi
    assert "An iDP claim bounds the answers for this one training set" in page
