"""Membership inference for label-only access: the metrics (AUC with DeLong-matched samples,
TPR at a low FPR, the exact ceiling test), the attacks through the label answers alone, the
jobs they add (old jobs keep their hashes), and the ceiling flag on a planted mechanism that
claims eps-DP but never noises."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from bench.api import run_suite
from bench.core.errors import ConfigError
from bench.core.hashing import canonical_json
from bench.metrics.membership import (
    auc_ceiling,
    auc_samples,
    ceiling,
    ceiling_test,
    placements,
    threshold_at_fpr,
)
from bench.metrics.stats import scalar
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.membership import LabelAccess
from bench.plugin.protocols import FitContext, Guarantee
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.report.board.load import load_leaderboard
from bench.report.board.rows import build_rows
from bench.report.board.summary import summary_lines
from bench.run.kinds.membership import attacked_records, claim_of, membership_metrics
from bench.run.plan import expand
from bench.suite.read import load_suite, make_task

MIA_ATTACKS = ("mia-boundary", "mia-gap", "mia-loo")


def _pairwise_auc(members: np.ndarray, nonmembers: np.ndarray) -> float:
    diff = members[:, None] - nonmembers[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def test_auc_samples_average_to_the_auc_and_carry_delongs_variance() -> None:
    rng = np.random.default_rng(0)
    members = rng.integers(0, 6, 150).astype(float)  # ties on purpose
    nonmembers = rng.integers(0, 5, 150).astype(float)
    auc = _pairwise_auc(members, nonmembers)
    samples = auc_samples(members, nonmembers)
    assert samples.mean() == pytest.approx(auc, abs=1e-12)
    member_place, nonmember_place = placements(members, nonmembers)
    assert member_place.mean() == pytest.approx(auc, abs=1e-12)
    assert nonmember_place.mean() == pytest.approx(auc, abs=1e-12)
    delong = (member_place.var() + nonmember_place.var()) / len(members)
    # The bootstrap variance of the mean over all 2m samples is var(samples) / (2m).
    assert samples.var() / len(samples) == pytest.approx(delong, rel=1e-12)


def test_threshold_at_fpr_takes_the_best_tpr_within_the_fpr() -> None:
    nonmembers = np.arange(100, dtype=float)  # 99 is the largest
    members = np.array([99.0, 98.5, 98.0, 50.0])
    c, tpr, fpr = threshold_at_fpr(members, nonmembers, 0.01)
    assert (c, tpr, fpr) == (98.5, 0.5, 0.01)  # only the non-member 99 reaches 98.5
    c, tpr, fpr = threshold_at_fpr(members, nonmembers, 0.02)
    assert (c, tpr, fpr) == (98.0, 0.75, 0.02)
    c, tpr, _ = threshold_at_fpr(np.zeros(3), np.ones(3), 0.01)
    assert c == np.inf and tpr == 0.0


def test_ceiling_test_holds_its_level_under_the_claim_and_rejects_a_leak() -> None:
    rng = np.random.default_rng(1)
    rejections = 0
    for _ in range(300):  # members and non-members alike: an eps = 0 claim holds
        low, limit = ceiling_test(rng.normal(size=200), rng.normal(size=200), 0.0, 0.0, 0.01, rng)
        rejections += low > limit
    assert rejections <= 30  # 5% level: about 15 expected at most
    leak = np.concatenate([np.full(60, 1.0), np.zeros(140)])  # 30% of members stand out
    low, limit = ceiling_test(leak, np.zeros(200), 0.5, 0.0, 0.01, rng)
    assert low > limit
    assert ceiling(0.5, 1e-5, 0.01) == pytest.approx(np.exp(0.5) * 0.01 + 1e-5)
    assert ceiling(20.0, 0.0, 0.5) == 1.0


def test_membership_metrics_report_the_prior_line_and_low_fprs_where_records_allow() -> None:
    rng = np.random.default_rng(2)
    scores = rng.normal(size=400)
    member = np.arange(400) < 200
    out = membership_metrics(scores, member, (1.0, 0.0), seed=0)
    assert out["mia_auc_prior"].value == 0.5 and out["mia_tpr_at_1pct_fpr_prior"].value == 0.01
    assert "mia_tpr_at_1pct_fpr" in out and "mia_tpr_at_0_1pct_fpr" not in out  # 200 < 1,000
    assert out["mia_ceiling_1pct_fpr"].value == pytest.approx(np.e * 0.01)
    big = membership_metrics(rng.normal(size=2000), np.arange(2000) < 1000, None, seed=0)
    assert "mia_tpr_at_0_1pct_fpr" in big and "mia_ceiling_1pct_fpr" not in big
    few = membership_metrics(rng.normal(size=120), np.arange(120) < 60, None, seed=0)
    assert "mia_tpr_at_1pct_fpr" not in few  # 60 non-members: no threshold at 1% FPR


def test_claims_that_bound_the_game() -> None:
    # The game replaces one record: an add-remove claim bounds it by group privacy (k = 2).
    add_remove = Guarantee("dp", {"eps": 1.0, "delta": 1e-5}, "training-set/add-remove")
    assert claim_of(add_remove) == pytest.approx((2.0, (1 + np.e) * 1e-5))
    replace = Guarantee("dp", {"eps": 1.0, "delta": 1e-5}, "training-set/replace-one")
    assert claim_of(replace) == (1.0, 1e-5)
    # iDP is a property of one training set: it bounds no population membership game.
    import mechanisms.label_only  # noqa: F401  (registers the iDP notion)

    assert claim_of(Guarantee("idp", {"eps": 0.0}, "training-set/leave-one-out")) is None
    # Label DP protects labels, not a record's presence; no claim, no ceiling.
    assert claim_of(Guarantee("dp", {"eps": 1.0}, "training-labels/replace-one")) is None
    assert claim_of(Guarantee("none")) is None


def _rows_in(rows: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Whether each row of `rows` equals some row of `table`."""
    return (rows[:, None, :] == table[None, :, :]).all(-1).any(-1)


def test_the_game_draws_members_per_seed_and_label_matched_non_members_outside_the_splits() -> None:
    task = make_task("german", {"subsample": 200}, "<test>")
    splits = task.splits()
    drawn = []
    for seed in (0, 1):
        x, y, member, index = attacked_records(task, 100, seed=seed)
        assert int(member.sum()) == 100 and len(x) == 200
        # Each member is the training record its index names; non-members have none.
        assert torch.equal(x[member], splits.train.x[index[member]])
        assert torch.equal(y[member], splits.train.y[index[member]])
        assert (index[~member] == -1).all()
        # The same count of each label on both sides.
        assert torch.equal(y[member].bincount(minlength=2), y[~member].bincount(minlength=2))
        # Non-members come from the unused training records: in no split.
        outside = x[~member]
        for held in (splits.train.x, splits.aux.x, splits.test.x):
            assert not _rows_in(outside, held).any()
        assert _rows_in(outside, task.population().x).all()
        drawn.append(set(index[member].tolist()))
    assert drawn[0] != drawn[1]  # members are drawn per seed, not the first 100 every time
    _, _, member, index = attacked_records(task, 0, seed=0)
    assert torch.equal(index[member].sort().values, torch.arange(200))


def test_a_membership_blind_score_sits_exactly_on_the_prior_line() -> None:
    # A constant predictor's gap attack scores 1 on one label and 0 on the other: with the
    # label counts matched, its AUC is exactly 0.5 whatever the labels' shares.
    task = make_task("german", {"subsample": 200}, "<test>")
    for seed in (0, 1, 2):
        _, y, member, _ = attacked_records(task, 0, seed=seed)
        scores = (y == 0).double().numpy()
        member_mask = member.numpy()
        assert _pairwise_auc(scores[member_mask], scores[~member_mask]) == 0.5
        metrics = membership_metrics(scores, member_mask, None, seed)
        assert metrics["mia_auc"].value == pytest.approx(0.5, abs=1e-12)


def test_a_pool_too_short_for_the_members_labels_is_refused() -> None:
    task = make_task("german", {}, "<test>")  # no subsample: non-members from the 200 test records
    with pytest.raises(ConfigError, match="lower the attack's `records`"):
        attacked_records(task, 0, seed=0)


def test_the_three_attacks_are_registered() -> None:
    assert set(MIA_ATTACKS) <= set(ATTACKS.names())


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One artifact cache for the module: the leave-one-out networks train once."""
    return tmp_path_factory.mktemp("mia-cache")


def _spam_access(mechanism: str, params: dict, cache_dir: Path):
    """Spam with 40 training records and 2x10 networks, `mechanism` fitted on it."""
    task = make_task("spam", {"subsample": 40, "arch": "2x10", "train_epochs": 50}, "<test>")
    ctx = FitContext(0, ArtifactCache(cache_dir))
    mech = MECHANISMS.get(mechanism)(**params)
    mech.fit(task, task.splits(), ctx)
    return task, mech, ctx


@pytest.mark.slow
def test_label_access_gets_the_remembered_answer_for_a_repeated_record(cache_dir: Path) -> None:
    task, mech, _ = _spam_access("naive-noise", {"eps": 0.0}, cache_dir)
    x = task.splits().test.x[:50]
    access = LabelAccess(mech, torch.Generator().manual_seed(0))
    first = access.labels(x)
    again = access.labels(torch.cat([x, x]))
    assert torch.equal(again, torch.cat([first, first]))
    assert access.queries == 150


@pytest.mark.slow
def test_attacks_score_members_and_held_out_records(cache_dir: Path) -> None:
    task, mech, ctx = _spam_access("label-only", {}, cache_dir)
    x, y, member, index = attacked_records(task, 0, seed=0)
    assert int(member.sum()) == 40 and len(x) == 80
    assert torch.equal(index[member].sort().values, torch.arange(40))
    assert (index[~member] == -1).all()
    for name in MIA_ATTACKS:
        attack = ATTACKS.get(name)()
        attack.fit(mech, task, task.splits().aux, ctx)
        access = LabelAccess(mech, torch.Generator().manual_seed(0))
        scores = attack.score(access, x, y, index)
        assert scores.shape == (80,) and torch.isfinite(scores).all()
        if name == "mia-loo":
            # Unprotected: a held-out record's served labels are N's, its own OUT network's.
            assert (scores[~member] == 0).all()
            assert (scores[member] >= 0).all() and (scores[member] > 0).any()


def test_membership_jobs_only_on_label_only_mechanisms_and_old_hashes_stay(tmp_path: Path) -> None:
    with_mia = load_suite("lucid-tabular")
    text = Path(with_mia.source).read_text()
    without = tmp_path / "no-mia.toml"
    without.write_text(text[: text.index("# Membership inference through")])
    old = {j.hash for j in expand(load_suite(str(without)), task="spam")}
    new = expand(with_mia, task="spam")
    assert old == {j.hash for j in new if j.attack is None}
    assert {j.attack for j in new if j.attack} == set(MIA_ATTACKS)
    image = expand(load_suite("default"), task="mnist")
    assert not any(j.attack and j.attack.startswith("mia-") for j in image)


def _result(mechanism: str, attack: str | None, metrics: dict) -> dict:
    return {
        "task": "spam",
        "mechanism": mechanism,
        "params": {"eps": 0.5},
        "attack": attack,
        "attack_params": {},
        "seed": 0,
        "guarantee": {
            "notion": "dp",
            "eps": 0.5,
            "delta": 0.0,
            "distance": "training-set/add-remove",
        },
        "metrics": {k: scalar(v) for k, v in metrics.items()},
    }


def test_rows_flag_a_setting_whose_attack_beats_the_ceiling() -> None:
    beaten = {"mia_auc": 0.7, "mia_tpr_at_1pct_fpr": 0.3, "mia_ceiling_beaten": 1.0}
    held = {"mia_auc": 0.5, "mia_tpr_at_1pct_fpr": 0.01, "mia_ceiling_beaten": 0.0}
    rows = build_rows(
        [
            _result("broken", None, {"accuracy": 0.8}),
            _result("broken", "mia-loo", beaten),
            _result("fine", None, {"accuracy": 0.8}),
            _result("fine", "mia-loo", held),
        ]
    )
    flagged = {r["mechanism"] for r in rows if r["unreliable"]}
    assert flagged == {"broken"}
    reason = next(r["unreliable_reason"] for r in rows if r["mechanism"] == "broken")
    assert "membership inference (mia-loo)" in reason
    worst = next(r for r in rows if r["attack"] == "worst case" and r["mechanism"] == "broken")
    assert worst["sources"]["mia_auc"] == "mia-loo"


PLANTED_SUITE = """
name = "mia-planted"
version = "1"
description = "a planted mechanism claiming eps-DP without noise"
seeds = 1

[[task]]
name = "spam"
subsample = 120
arch = "2x10"
train_epochs = 200

[[mechanism]]
name = "tests.mia_planted:UnnoisedClaim"

[[mechanism]]
name = "naive-noise"
params = { eps = 0.5 }

[[attack]]
name = "mia-loo"
"""


@pytest.mark.slow
def test_a_planted_mechanism_that_claims_eps_but_never_noises_is_flagged(tmp_path: Path) -> None:
    suite = tmp_path / "planted.toml"
    suite.write_text(PLANTED_SUITE)
    run_suite(str(suite), store_path=tmp_path / "s.sqlite", out_dir=tmp_path / "board")
    rows = load_leaderboard(tmp_path / "board" / "leaderboard.json")["rows"]
    by = {(r["mechanism"], r["attack"]): r for r in rows}
    planted = by[("tests.mia_planted:UnnoisedClaim", "mia-loo")]
    assert planted["unreliable"] and "ceiling" in planted["unreliable_reason"]
    assert planted["metrics"]["mia_auc"]["ci"][0] > 0.5
    # The same attack on a mechanism that noises every answer at the same eps: not flagged.
    honest = by[("naive-noise", "mia-loo")]
    assert not honest["unreliable"]
    assert canonical_json(honest["guarantee"]) != canonical_json(planted["guarantee"])


def test_summary_lines_show_the_worst_attack_beside_the_audit_and_the_certificate() -> None:
    utility = {"accuracy": 0.8, "eps_audit_lb": 0.25, "bound_validity": 1.0}
    rows = build_rows(
        [
            _result("lucid", None, utility),
            _result("lucid", "mia-gap", {"mia_auc": 0.52, "mia_tpr_at_1pct_fpr": 0.0}),
            _result("lucid", "mia-loo", {"mia_auc": 0.55, "mia_tpr_at_1pct_fpr": 0.02}),
        ]
    )
    lines = summary_lines(rows, {}, {})
    assert lines[0] == "spam: accuracy; strongest attack by mia_auc"
    assert "attack 0.55 (mia-loo)" in lines[1]
    assert lines[1].endswith("audit eps >= 0.25, validity 1")


def test_the_auc_ceiling_flags_an_auc_no_claim_of_that_eps_allows() -> None:
    assert auc_ceiling(0.0, 0.0) == 0.5
    assert auc_ceiling(1.0, 0.0) == pytest.approx(np.e / (1 + np.e))
    leaky = {"mia_auc": 0.6, "mia_tpr_at_1pct_fpr": 0.02, "mia_ceiling_beaten": 0.0}

    def rows_of(attack_metrics: dict, distance: str) -> list[dict]:
        results = [
            _result("leaky", None, {"accuracy": 0.8}),
            _result("leaky", "mia-loo", attack_metrics),
        ]
        for result in results:
            result["guarantee"]["distance"] = distance
        return build_rows(results)

    # A replace-one eps = 0.5 claim allows AUC up to 0.622: 0.6 (CI [0.6, 0.6]) stays inside.
    assert not any(r["unreliable"] for r in rows_of(leaky, "training-set/replace-one"))
    over = {**leaky, "mia_auc": 0.65}
    rows = rows_of(over, "training-set/replace-one")
    assert all(r["unreliable"] for r in rows)
    # The same claim over add-remove neighbours bounds the game at 2 eps: AUC up to 0.731.
    assert not any(r["unreliable"] for r in rows_of(over, "training-set/add-remove"))
    assert "AUC 0.65" in rows[0]["unreliable_reason"]
