"""Ranked views: the most useful settings at each privacy level, never a setting a reader
must not rely on, ties within CI marked; empirical bands anchored at the task's prior floor,
a utility floor above chance, claims ranked only among comparable claims, and the audit's
verdict beside each claim."""

from __future__ import annotations

from typing import Any

import pytest

from bench.plugin.families import load_families
from bench.report.board.audit_power import audit_verdict
from bench.report.board.labels import WORST_CASE
from bench.report.board.overview import task_overview
from bench.report.board.ranking import (
    MEMBERSHIP_BANDS,
    SIMILARITY_FRACTIONS,
    attack_bands,
    claim_bands,
    claim_view,
    ranked_views,
    standing,
    utility_floor,
)

load_families(["dfil", "lucid"])  # the dFIL bound and iDP notions their families register


def _line(mech: str, util: tuple[float, float, float], attack: float | None, **claim) -> dict:
    value, lo, hi = util
    return {
        "mechanism": mech,
        "setting": "",
        "all_params": "",
        "guarantee": "",
        "claim": claim or {"notion": "none"},
        "utility": {"value": repr(value), "lo": repr(lo), "hi": repr(hi), "text": "", "ci": ""},
        "attack": None if attack is None else {"value": repr(attack)},
        "at_chance": False,
        "constant": False,
        "alternative_scoring": False,
        "unreliable": False,
        "bound_broken": False,
    }


def _names(band: dict) -> list[tuple[int, str, bool]]:
    return [(e["rank"], e["line"]["mechanism"], e["tied"]) for e in band["entries"]]


def test_settings_are_ranked_by_utility_inside_each_attack_band() -> None:
    lines = [
        _line("a", (0.70, 0.68, 0.72), 0.38, notion="ip", eps=2.0),
        _line("b", (0.66, 0.64, 0.69), 0.37, notion="ip", eps=2.0),  # CI overlaps a's
        _line("c", (0.90, 0.89, 0.91), 0.55, notion="ip", eps=8.0),
        _line("d", (0.30, 0.25, 0.35), 0.15, notion="ip", eps=0.5),
    ]
    # The prior guess scores 0.18: bands at 5%, 25%, 50% and 75% of the way to exact.
    bands = ranked_views(lines, "ssim", 0.18, True, "SSIM")
    empirical = [b for b in bands if b["kind"] == "attack"]
    assert [b["label"] for b in empirical] == [
        "attack SSIM ≤ 0.221",
        "attack SSIM ≤ 0.385",
        "attack SSIM ≤ 0.59",
        "attack SSIM ≤ 0.795",
    ]
    assert empirical[0]["anchor"] == "at the prior guess"
    assert empirical[1]["anchor"] == "25% of the way to exact"
    assert _names(empirical[0]) == [(1, "d", False)]
    assert _names(empirical[1]) == [(1, "a", False), (2, "b", True)]
    assert _names(empirical[2]) == [(1, "c", False), (2, "a", False)]
    # Claimed bands: per comparable group, its levels strongest first, a level admits
    # stronger claims.
    by_label = {b["label"]: b for b in bands}
    assert _names(by_label["IP ε ≤ 0.5"]) == [(1, "d", False)]
    assert _names(by_label["IP ε ≤ 2"]) == [(1, "a", False), (2, "b", True)]


def test_a_settings_standing_is_its_rank_in_the_strictest_band_it_reaches() -> None:
    lines = [
        _line("a", (0.70, 0.68, 0.72), 0.38),
        _line("b", (0.66, 0.64, 0.69), 0.37),  # CI overlaps a's
        _line("c", (0.50, 0.48, 0.52), 0.36),  # below a's CI: ranked, not tied
        _line("d", (0.90, 0.89, 0.91), 0.55),
        _line("e", (0.95, 0.94, 0.96), 0.99),  # above every band
        {**_line("f", (0.99, 0.98, 1.0), 0.20), "at_chance": True},
    ]
    bands = attack_bands("ssim", 0.18, "SSIM")
    where = {line["mechanism"]: standing(line, bands, lines, None) for line in lines}
    # Three settings reach SSIM <= 0.385; d only the 0.59 band, where a, b and c rank too.
    assert where["a"] == "rank 1 of 3 at attack SSIM ≤ 0.385 (25% of the way to exact)"
    assert where["b"].startswith("rank 2 of 3 at attack SSIM ≤ 0.385") and "tied" in where["b"]
    assert where["c"].startswith("rank 3 of 3 at attack SSIM ≤ 0.385") and "tied" not in where["c"]
    assert where["d"] == "rank 1 of 4 at attack SSIM ≤ 0.59 (50% of the way to exact)"
    assert where["e"].startswith("ranked in no band")
    assert where["f"] == "not ranked: at chance"


@pytest.mark.parametrize("floor", [-0.05, 0.0, 0.02, 0.18, 0.5, 0.9, 0.999])
def test_a_similarity_band_never_lies_below_the_prior_floor(floor: float) -> None:
    bands = attack_bands("ssim", floor, "SSIM")
    limits = [b.limit for b in bands]
    assert len(limits) == len(SIMILARITY_FRACTIONS)
    assert all(limit >= floor for limit in limits) and limits == sorted(limits)
    # Fixed fractions of the way from the floor to an exact recovery.
    for fraction, limit in zip(SIMILARITY_FRACTIONS, limits, strict=True):
        assert limit == pytest.approx(floor + fraction * (1 - floor))
    # A setting at the floor is "at the prior guess"; one just above the first band is not.
    at_floor = _line("x", (0.5, 0.4, 0.6), floor)
    above = _line("y", (0.5, 0.4, 0.6), limits[0] + 1e-6)
    assert bands[0].admits(at_floor) and not bands[0].admits(above)
    assert attack_bands("ssim", 1.0, "SSIM") == []  # an exact guess leaves nothing to band


def test_membership_bands_lie_above_a_guess_and_without_a_prior_the_old_bands_hold() -> None:
    bands = attack_bands("mia_auc", 0.5, "membership AUC")
    assert [b.limit for b in bands] == list(MEMBERSHIP_BANDS)
    assert all(b.limit > 0.5 for b in bands)
    assert [b.label for b in bands] == [f"membership AUC ≤ {t:g}" for t in MEMBERSHIP_BANDS]
    # A board that recorded no prior guess: the absolute bands.
    assert [b.label for b in attack_bands("ssim", None, "SSIM")] == [
        "attack SSIM ≤ 0.2",
        "attack SSIM ≤ 0.4",
        "attack SSIM ≤ 0.6",
    ]


def test_settings_a_reader_must_not_rely_on_are_never_ranked() -> None:
    good = _line("good", (0.6, 0.55, 0.65), 0.3)
    flagged = []
    for flag in ("at_chance", "constant", "alternative_scoring", "unreliable", "bound_broken"):
        line = _line(flag, (0.9, 0.88, 0.92), 0.1)
        line[flag] = True
        flagged.append(line)
    not_private = _line("not_private", (0.95, 0.94, 0.96), 0.1)
    not_private["not_private"] = True
    bands = ranked_views([good, *flagged, not_private], "ssim", 0.18, has_attacks=True)
    assert all(_names(b) == [(1, "good", False)] for b in bands if b["entries"])


def test_mse_bands_are_shares_of_the_prior_guess_and_dfil_ranks_higher_as_stronger() -> None:
    assert [b.label for b in attack_bands("mse", 0.1)] == [
        "attack MSE ≥ 1 × prior guess",
        "attack MSE ≥ 0.75 × prior guess",
        "attack MSE ≥ 0.5 × prior guess",
    ]
    assert attack_bands("mse", None) == []
    lines = [_line(str(v), (0.5, 0.4, 0.6), None, notion="dfil", inv_dfil=v) for v in (1, 10, 100)]
    assert [b.label for b in claim_bands(lines)] == ["1/dFIL ≥ 100", "1/dFIL ≥ 10", "1/dFIL ≥ 1"]


def test_a_single_setting_has_nothing_to_rank() -> None:
    assert ranked_views([_line("only", (0.5, 0.4, 0.6), 0.3)], "ssim", 0.2, True) == []


def _metric(value: float, half: float = 0.01) -> dict[str, Any]:
    return {"value": value, "ci": [value - half, value + half], "n": 10}


def _setting(
    mechanism: str, params: dict, guarantee: dict, accuracy: float, ssim: float, **utility: Any
) -> list[dict[str, Any]]:
    common = {"task": "t", "mechanism": mechanism, "params": params, "seeds": 3}
    return [
        {
            **common,
            "guarantee": guarantee,
            "attack": None,
            "metrics": {
                "accuracy": _metric(accuracy),
                "chance": _metric(0.1, 0.0),
                **{k: _metric(v, 0.0) for k, v in utility.items()},
            },
        },
        {
            **common,
            "guarantee": guarantee,
            "attack": WORST_CASE,
            "metrics": {"ssim": _metric(ssim), "ssim_prior": _metric(0.1, 0.0)},
            "sources": {"ssim": "map"},
        },
    ]


NONE = {"notion": "none"}


def test_a_setting_only_a_few_points_above_chance_never_wins_a_band() -> None:
    """Chance 0.1 and the unprotected reference at 0.9: the floor is 0.1 + 0.1 x 0.8 = 0.18.
    A setting at chance + 0.05 of that span (0.14, CI [0.13, 0.15]) is above chance but below
    the floor: it does not rank, though it is the only one at the prior guess."""
    ip = {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": 0.1, "distance": "l2/input"}
    rows = [
        *_setting("identity", {}, NONE, 0.9, 0.99),
        *_setting("gauss-input", {"r": 0.5}, ip, 0.14, 0.11),
        *_setting("gauss-input", {"r": 0.1}, ip, 0.5, 0.3),
    ]
    assert utility_floor(0.1, 0.9) == pytest.approx(0.18)
    overview = task_overview(rows, "accuracy")
    assert overview["floor"] == pytest.approx(0.18)
    assert "identity's 0.9" in overview["floor_rule"] and "0.18" in overview["floor_rule"]
    weak = next(line for line in overview["lines"] if line["setting"] == "r=0.5")
    assert not weak["at_chance"]  # above chance: the floor, not the chance rule, keeps it out
    first, second = overview["empirical"][:2]  # SSIM at most 0.145, at most 0.325
    assert first["anchor"] == "at the prior guess" and first["entries"] == []
    assert [e["line"]["setting"] for e in second["entries"]] == ["r=0.1"]
    # In the claim view it is listed as not ranked, with the reason.
    (group,) = overview["claims"]
    assert [u["why"] for u in group["unranked"]] == ["below the utility floor (0.13 ≤ 0.18)"]


def test_settings_are_ranked_by_the_utility_scored_on_every_query_where_rows_carry_it() -> None:
    ip = {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": 0.1, "distance": "l2/input"}
    rows = [
        *_setting("identity", {}, NONE, 0.9, 0.99, accuracy_all=0.9),
        # Accurate on what it answers, but it refuses most queries: 0.3 over all of them.
        *_setting("ptr", {"eps": 1.0}, ip, 0.85, 0.3, accuracy_all=0.3),
        *_setting("gauss-input", {"r": 0.1}, ip, 0.5, 0.3, accuracy_all=0.5),
    ]
    overview = task_overview(rows, "accuracy")
    assert overview["utility_words"] == "accuracy (all queries)"
    band = overview["empirical"][1]  # SSIM at most 0.325
    assert [e["line"]["mechanism"] for e in band["entries"]] == ["gauss-input", "ptr"]


def test_claims_are_grouped_only_with_comparable_claims() -> None:
    """IP at r = 0.01 and at r = 0.1 are two groups; label DP is apart from add-remove DP;
    iDP is apart from DP; inside a group the levels run strongest first."""
    ip = {"notion": "ip", "delta": 1e-5, "distance": "l2/input"}
    dp = {"notion": "dp", "delta": 0.0}
    lines = [
        _line("gi-a", (0.8, 0.78, 0.82), 0.5, **ip, eps=1.0, radius=0.01),
        _line("gi-b", (0.6, 0.58, 0.62), 0.3, **ip, eps=1.0, radius=0.1),
        _line("gi-c", (0.5, 0.48, 0.52), 0.2, **ip, eps=0.5, radius=0.1),
        _line(
            "alibi", (0.7, 0.68, 0.72), None, **dp, eps=1.0, distance="training-labels/replace-one"
        ),
        _line("dp-sgd", (0.6, 0.58, 0.62), None, **dp, eps=1.0, distance="training-set/add-remove"),
        _line(
            "lucid",
            (0.65, 0.63, 0.67),
            None,
            notion="idp",
            eps=0.0,
            distance="training-set/leave-one-out",
        ),
        _line("identity", (0.9, 0.88, 0.92), 1.0),  # claims nothing: in no group
    ]
    groups = {g["group"]: g for g in claim_view(lines)}
    assert sorted(groups) == [
        "DP over training-labels/replace-one",
        "DP over training-set/add-remove",
        "IP (δ=1e-05, r=0.01) over l2/input",
        "IP (δ=1e-05, r=0.1) over l2/input",
        "iDP over training-set/leave-one-out",
    ]

    def members(group: str) -> set[str]:
        return {e["line"]["mechanism"] for b in groups[group]["bands"] for e in b["entries"]}

    assert members("IP (δ=1e-05, r=0.01) over l2/input") == {"gi-a"}
    assert members("IP (δ=1e-05, r=0.1) over l2/input") == {"gi-b", "gi-c"}
    assert members("DP over training-labels/replace-one") == {"alibi"}
    assert members("DP over training-set/add-remove") == {"dp-sgd"}
    assert members("iDP over training-set/leave-one-out") == {"lucid"}
    # Levels strongest first; a level admits every claim at least as strong.
    r01 = groups["IP (δ=1e-05, r=0.1) over l2/input"]["bands"]
    assert [b["short"] for b in r01] == ["ε ≤ 0.5", "ε ≤ 1"]
    assert [_names(b) for b in r01] == [
        [(1, "gi-c", False)],
        [(1, "gi-b", False), (2, "gi-c", False)],
    ]
    # A higher-is-stronger level (1/dFIL) runs from its highest.
    dfil = [_line(f"d{v}", (0.5, 0.4, 0.6), 0.3, notion="dfil", inv_dfil=v) for v in (1.0, 100.0)]
    (group,) = claim_view(dfil)
    assert [b["short"] for b in group["bands"]] == ["1/dFIL ≥ 100", "1/dFIL ≥ 1"]


def _row(guarantee: dict, **metrics: float) -> dict[str, Any]:
    return {"guarantee": guarantee, "metrics": {k: _metric(v, 0.0) for k, v in metrics.items()}}


IP = {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": 0.1, "distance": "l2/input"}


def test_the_audit_verdict_says_refuted_inconclusive_consistent_or_why_not_audited() -> None:
    refuted = audit_verdict(_row(IP, eps_audit_lb=1.6, audit_draws=200_000))
    assert refuted == {"kind": "refuted", "text": "refuted: lb 1.6 > claim 1"}
    weak = audit_verdict(_row(IP, eps_audit_lb=0.2, audit_draws=200))
    assert weak["kind"] == "inconclusive" and weak["text"].endswith("below 80%")
    strong = audit_verdict(_row(IP, eps_audit_lb=0.9, audit_draws=5_000_000))
    assert strong == {"kind": "consistent", "text": "consistent, power 98%"}
    empty = audit_verdict(_row(IP, eps_audit_lb=0.0, audit_draws=0))
    assert empty["kind"] == "inconclusive" and "0 draws" in empty["text"]
    dp = {"notion": "dp", "eps": 1.0, "delta": 0.0, "distance": "training-set/add-remove"}
    unaudited = audit_verdict(_row(dp, accuracy=0.8))
    assert unaudited["kind"] == "not audited"
    assert (
        unaudited["text"] == f"not audited: {unaudited['why']}"
        and "training sets" in unaudited["why"]
    )
    assert audit_verdict(_row(NONE))["text"] == "not audited: nothing claimed"


def test_each_ranked_setting_carries_its_audit_verdict() -> None:
    rows = [
        *_setting("identity", {}, NONE, 0.9, 0.99),
        *_setting("gauss-input", {"r": 0.1}, IP, 0.6, 0.3),
        *_setting("gauss-input", {"r": 0.2}, {**IP, "radius": 0.2}, 0.5, 0.25),
    ]
    rows[2]["metrics"].update(eps_audit_lb=_metric(0.9, 0.0), audit_draws=_metric(5e6, 0.0))
    overview = task_overview(rows, "accuracy")
    verdicts = {line["setting"]: line["audit_verdict"]["kind"] for line in overview["lines"]}
    assert verdicts == {"": "not audited", "r=0.1": "consistent", "r=0.2": "not audited"}
    entries = [e for b in overview["claims"] for band in b["bands"] for e in band["entries"]]
    assert {e["line"]["audit_verdict"]["kind"] for e in entries} == {"consistent", "not audited"}
