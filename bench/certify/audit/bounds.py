"""From a distinguisher's error counts to an empirical lower bound on eps (DP auditing).

Hypothesis-testing view of (eps, delta)-DP (Kairouz, Oh & Viswanath 2015, Thm 2.1): a
mechanism is (eps, delta)-indistinguishable on a pair (x0, x1) iff every test between "the
input was x0" and "the input was x1" has FPR + e^eps FNR >= 1 - delta and
FNR + e^eps FPR >= 1 - delta. Upper confidence bounds on the two rates therefore give

    eps >= max( log((1 - delta - FNR_u) / FPR_u),  log((1 - delta - FPR_u) / FNR_u) ),

the construction of Jagielski et al. (2020) and Nasr et al. (2021). The rates are bounded
with exact one-sided Clopper-Pearson intervals, each at level alpha / 2 (Bonferroni), so the
pair of bounds, hence the eps bound, holds with probability at least 1 - alpha.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import beta


def clopper_pearson_upper(k: ArrayLike, n: int, alpha: float) -> np.ndarray:
    """Exact one-sided (1 - alpha) upper confidence bound on a binomial rate from `k`
    successes in `n` trials: the (1 - alpha) quantile of Beta(k + 1, n - k), 1 when k = n.
    `k` may be fractional (vectorised over arrays)."""
    k = np.asarray(k, dtype=np.float64)
    if n < 1:
        raise ValueError(f"need at least one trial, got n={n}")
    inside = k < n
    b = beta.ppf(1.0 - alpha, k + 1.0, np.where(inside, n - k, 1.0))
    return np.where(inside, b, 1.0)


def eps_lower_bound(
    false_pos: ArrayLike,
    n0: int,
    false_neg: ArrayLike,
    n1: int,
    delta: float,
    alpha: float = 0.05,
) -> np.ndarray:
    """The eps every (eps, delta)-indistinguishable mechanism must exceed, at confidence
    1 - alpha, given a test's false positives on `n0` draws under x0 and false negatives on
    `n1` draws under x1 (module docstring). 0 where the rates prove nothing (vectorised)."""
    fpr_u = clopper_pearson_upper(false_pos, n0, alpha / 2)
    fnr_u = clopper_pearson_upper(false_neg, n1, alpha / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = np.log((1.0 - delta - fnr_u) / fpr_u)
        swapped = np.log((1.0 - delta - fpr_u) / fnr_u)
    bound = np.fmax(np.nan_to_num(direct, nan=0.0), np.nan_to_num(swapped, nan=0.0))
    return np.maximum(bound, 0.0)


def eps_detectable(n0: int, n1: int, delta: float, alpha: float = 0.05) -> float:
    """The largest eps lower bound `n0` + `n1` draws can ever show (a perfect test): claims
    above it cannot fail the audit, so the audit is uninformative for them."""
    return float(eps_lower_bound(0, n0, 0, n1, delta, alpha))
