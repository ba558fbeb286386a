"""Membership-inference metrics: ROC AUC and TPR at a low FPR from per-record attack scores,
their per-record samples for the seed-level bootstrap, and the ceiling a DP claim puts on TPR
(held against DP claims over training records only: `dp_membership_bound`).

Attack scores are higher for records the attacker believes are members. The prior line (an
attacker that ignores the answers) has AUC 0.5 and TPR = FPR at every threshold.

Why the samples look the way they do: bench aggregates a metric over seeds by a two-level
bootstrap of per-record samples (bench.metrics.stats.aggregate_seeds), resampling seeds and
then records. AUC is a two-sample statistic, not a mean, so its samples are DeLong's
placement values (DeLong et al. 1988): a member's share of non-members it outscores, a
non-member's share of members that outscore it. Both halves average exactly to the AUC, and
DeLong's variance of the AUC is Var(member placements) / m + Var(non-member placements) / m;
the placements are spread about the AUC by a factor 2 so that the bootstrap variance of the
mean over all 2m samples equals it. TPR at FPR alpha is a mean over the members at a
threshold fixed on the non-members; its samples are the members' 0/1 outcomes there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from bench.certify.audit.bounds import clopper_pearson_upper
from bench.metrics import MetricSpec, register_metric
from bench.plugin.notions import Claim, known_notion

# The low false-positive rates reported (Carlini et al. 2022, "Membership Inference Attacks
# From First Principles"), by metric-name suffix; 0.1% only when there are >= 1,000
# non-members, so that the threshold is not just the largest non-member score.
FPR_LEVELS = (("1pct", 0.01), ("0_1pct", 0.001))
MIN_NONMEMBERS = {"1pct": 100, "0_1pct": 1000}  # alpha * m >= 1
# One-sided confidence of the ceiling test (below).
CEILING_CONFIDENCE = 0.95

SPECS = (
    MetricSpec("mia_auc", "lower", "privacy", "membership inference ROC AUC, members vs held-out"),
    MetricSpec(
        "mia_tpr_at_1pct_fpr",
        "lower",
        "privacy",
        "membership inference true-positive rate at a 1% false-positive rate",
    ),
    MetricSpec(
        "mia_tpr_at_0_1pct_fpr",
        "lower",
        "privacy",
        "membership inference true-positive rate at a 0.1% false-positive rate "
        "(reported with >= 1,000 non-members)",
    ),
    MetricSpec("mia_auc_prior", "lower", "reference", "membership AUC of a blind guess (0.5)"),
    MetricSpec(
        "mia_tpr_at_1pct_fpr_prior",
        "lower",
        "reference",
        "TPR at 1% FPR of a blind guess (TPR = FPR)",
    ),
    MetricSpec(
        "mia_ceiling_1pct_fpr",
        "higher",
        "bound",
        "the ceiling a DP claim of the row's (eps, delta) puts on TPR at 1% FPR: "
        "e^eps * 0.01 + delta (held against DP claims over training records only)",
    ),
    MetricSpec(
        "mia_ceiling_beaten",
        "lower",
        "bound",
        "share of seeds whose exact test (threshold on half the records, Clopper-Pearson "
        "bounds on the other half) puts the TPR at 1% FPR above e^eps * FPR + delta",
    ),
    MetricSpec(
        "mia_records", "higher", "reference", "members attacked per seed (as many non-members)"
    ),
    MetricSpec("mia_queries", "lower", "cost", "label queries per attacked record"),
)
for _spec in SPECS:
    register_metric(_spec)

MIA_SCORE = "mia_auc"
MIA_TPR = "mia_tpr_at_1pct_fpr"
MIA_CEILING = "mia_ceiling_1pct_fpr"
MIA_CEILING_BEATEN = "mia_ceiling_beaten"


def _check(members: np.ndarray, nonmembers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    m = np.asarray(members, dtype=np.float64).reshape(-1)
    u = np.asarray(nonmembers, dtype=np.float64).reshape(-1)
    if m.size == 0 or u.size == 0:
        raise ValueError("membership metrics need at least one member and one non-member")
    if not (np.isfinite(m).all() and np.isfinite(u).all()):
        raise ValueError("membership scores must be finite")
    return m, u


def placements(members: np.ndarray, nonmembers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """DeLong's placement values: per member, the share of non-members it outscores (ties
    count half); per non-member, the share of members that outscore it (ties half)."""
    m, u = _check(members, nonmembers)
    u_sorted, m_sorted = np.sort(u), np.sort(m)
    below_u = np.searchsorted(u_sorted, m, side="left")
    tied_u = np.searchsorted(u_sorted, m, side="right") - below_u
    member_place = (below_u + 0.5 * tied_u) / len(u)
    above_m = len(m) - np.searchsorted(m_sorted, u, side="right")
    tied_m = np.searchsorted(m_sorted, u, side="right") - np.searchsorted(m_sorted, u, "left")
    nonmember_place = (above_m + 0.5 * tied_m) / len(m)
    return member_place, nonmember_place


def auc_samples(members: np.ndarray, nonmembers: np.ndarray) -> np.ndarray:
    """Per-record samples whose mean is the ROC AUC and whose bootstrap variance of the mean
    is DeLong's variance of the AUC (module docstring)."""
    member_place, nonmember_place = placements(members, nonmembers)
    auc = float(member_place.mean())
    pooled = np.concatenate([member_place, nonmember_place])
    return auc + 2.0 * (pooled - auc)


def threshold_at_fpr(
    members: np.ndarray, nonmembers: np.ndarray, alpha: float
) -> tuple[float, float, float]:
    """(threshold c, TPR, FPR) of the rule "member iff score >= c" with the highest TPR among
    thresholds whose FPR on these non-members is at most `alpha` (c = inf: nobody)."""
    m, u = _check(members, nonmembers)
    best = (math.inf, 0.0, 0.0)
    for c in np.unique(np.concatenate([m, u]))[::-1]:
        fpr = float((u >= c).mean())
        if fpr > alpha:
            break
        tpr = float((m >= c).mean())
        if tpr >= best[1]:
            best = (float(c), tpr, fpr)
    return best


def ceiling(eps: float, delta: float, fpr: float) -> float:
    """The largest TPR an (eps, delta)-DP claim allows at FPR `fpr`: e^eps * fpr + delta
    (Kairouz, Oh and Viswanath 2015, Theorem 2.1: the hypothesis-testing region of DP),
    capped at 1."""
    return min(1.0, math.exp(eps) * fpr + delta)


def auc_ceiling(eps: float, delta: float) -> float:
    """The largest ROC AUC an (eps, delta)-DP claim allows: the area under the boundary of
    its hypothesis-testing region, TPR <= min(e^eps FPR, 1 - e^-eps (1 - FPR)) + delta, is
    e^eps / (1 + e^eps) for delta = 0 (0.5 at eps = 0: no test beats a coin), and delta
    raises it by at most delta."""
    return min(1.0, 1.0 / (1.0 + math.exp(-eps)) + delta)


# The membership game keeps the training set's size fixed: a member is a record of D, a
# non-member one that D does not hold, so the two worlds differ by replacing one record.
# A claim over replace-one neighbours bounds that directly (TPR <= e^eps FPR + delta); an
# add-remove claim bounds a replacement as a removal then an addition, by group privacy
# (Dwork and Roth 2014, Theorem 2.2 with k = 2): (2 eps, (1 + e^eps) delta).
REPLACE_ONE = "training-set/replace-one"
ADD_REMOVE = "training-set/add-remove"


def dp_membership_bound(guarantee: Mapping[str, Any] | Claim) -> tuple[float, float] | None:
    """(eps, delta) that a DP claim over training records puts on this membership game (the
    ceiling `ceiling` and `auc_ceiling` are held against), None for every other claim.

    Only notions whose spec says so (`membership_ceiling`: DP over training records) bound
    the game. An iDP claim (LUCID's notion) is a property of the one training set D, the
    answers for D against D minus one record, and bounds no game over a population of
    members and non-members; a label-DP claim (ALIBI's, over training labels) protects
    labels, not a record's presence; "none" claims nothing."""
    claim = guarantee if isinstance(guarantee, Claim) else _claim_of_row(guarantee)
    if claim is None or claim.eps is None or not claim.spec.membership_ceiling:
        return None
    if claim.distance == REPLACE_ONE:
        return claim.eps, claim.delta
    if claim.distance == ADD_REMOVE:
        return 2 * claim.eps, (1 + math.exp(claim.eps)) * claim.delta
    return None


def _claim_of_row(guarantee: Mapping[str, Any]) -> Claim | None:
    """The claim of a guarantee dict, None for a notion no installed family registers."""
    notion = guarantee.get("notion")
    return Claim.from_row(guarantee) if known_notion(notion) else None


def ceiling_test(
    members: np.ndarray,
    nonmembers: np.ndarray,
    eps: float,
    delta: float,
    alpha: float,
    generator: np.random.Generator,
) -> tuple[float, float]:
    """(TPR lower bound, ceiling at the FPR upper bound) of one exact test of the claim.

    The ceiling holds at every threshold, so a threshold chosen on one half of the records
    (the best TPR at FPR <= `alpha` there) is tested on the other half: a one-sided
    Clopper-Pearson lower bound on its TPR against e^eps times the Clopper-Pearson upper
    bound on its FPR, plus delta, each at 97.5% (Bonferroni), so the claim is called beaten
    (TPR bound above the ceiling) with probability at most 5% when it holds."""
    m, u = np.asarray(members, dtype=np.float64), np.asarray(nonmembers, dtype=np.float64)
    m, u = m[generator.permutation(len(m))], u[generator.permutation(len(u))]
    m_pick, m_test = m[: len(m) // 2], m[len(m) // 2 :]
    u_pick, u_test = u[: len(u) // 2], u[len(u) // 2 :]
    c, _, _ = threshold_at_fpr(m_pick, u_pick, alpha)
    hits, false = int((m_test >= c).sum()), int((u_test >= c).sum())
    level = (1.0 - CEILING_CONFIDENCE) / 2.0
    tpr_low = 1.0 - float(clopper_pearson_upper(len(m_test) - hits, len(m_test), level))
    fpr_high = float(clopper_pearson_upper(false, len(u_test), level))
    return tpr_low, ceiling(eps, delta, fpr_high)


def ceiling_beaten_everywhere(share: float) -> bool:
    """Whether a row's claim is refuted: the exact test beat the ceiling on every seed (each
    test errs with probability at most 5% when the claim holds, so all of them at once
    erring is rarer still)."""
    return share >= 1.0


__all__ = [
    "FPR_LEVELS",
    "MIA_CEILING",
    "MIA_CEILING_BEATEN",
    "MIA_SCORE",
    "MIA_TPR",
    "MIN_NONMEMBERS",
    "SPECS",
    "auc_ceiling",
    "auc_samples",
    "ceiling",
    "ceiling_beaten_everywhere",
    "ceiling_test",
    "dp_membership_bound",
    "placements",
    "threshold_at_fpr",
]
