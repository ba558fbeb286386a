"""Choosing a test's threshold on selection draws: the threshold whose error rates promise
the largest eps bound at the evaluation's size (used by every audit; the bound itself is
always computed on fresh evaluation draws, so this search costs no confidence)."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from bench.certify.audit.bounds import clopper_pearson_upper, eps_lower_bound


def _candidate_thresholds(s0: np.ndarray, s1: np.ndarray, per_tail: int = 600) -> np.ndarray:
    """Observed scores to try as thresholds: every one of the `per_tail` most extreme at each
    end of both sorted samples (where the bound is decided), and geometrically spaced order
    statistics further in, so the search costs O(per_tail) bounds however many draws."""
    picks = []
    for s in (s0, s1):
        n = len(s)
        steps = np.unique(np.geomspace(1, max(n, 1), per_tail).astype(np.int64)) - 1
        index = np.unique(np.concatenate([np.arange(min(per_tail, n)), steps]))
        picks += [s[index], s[n - 1 - index]]
    return np.unique(np.concatenate(picks))


def _gaussian_threshold(
    s0: np.ndarray, s1: np.ndarray, delta: float, alpha: float, n_eval: int
) -> tuple[float, float]:
    """For a projection of additive Gaussian noise (a Gaussian score on each side): the
    threshold best for normals fitted to the selection scores. The bound is decided far in
    a tail the selection draws barely reach, where a fitted normal is steadier than counts;
    the threshold is still a function of the selection draws only, so the bound stays valid
    whatever the noise really is."""
    m0, sd0, m1, sd1 = s0.mean(), s0.std(), s1.mean(), s1.std()
    if not (sd0 > 0 and sd1 > 0):
        return best_threshold(s0, s1, delta, alpha, n_eval)
    lo, hi = min(m0, m1), max(m0, m1)
    spread = max(sd0, sd1)
    t = np.linspace(lo - 9 * spread, hi + 9 * spread, 4001)
    fpr, fnr = norm.sf((t - m0) / sd0), norm.cdf((t - m1) / sd1)
    bounds = eps_lower_bound(fpr * n_eval, n_eval, fnr * n_eval, n_eval, delta, alpha)
    i = int(np.argmax(bounds))
    return float(t[i]), float(bounds[i])


def best_threshold(
    s0: np.ndarray,
    s1: np.ndarray,
    delta: float,
    alpha: float,
    n_eval: int | None = None,
    gaussian: bool = False,
) -> tuple[float, float]:
    """The threshold t of the test "score > t means x1" whose error rates on these draws
    promise the largest eps bound from `n_eval` evaluation draws per side (candidates: the
    observed scores of `_candidate_thresholds`), and that bound. Rates are one-sigma upper
    bounds, so a tail the selection draws barely reached is not taken for a perfect test.
    `gaussian`: the score is Gaussian on each side (`_gaussian_threshold`)."""
    if gaussian and n_eval is not None and np.isfinite(s0).all() and np.isfinite(s1).all():
        return _gaussian_threshold(s0, s1, delta, alpha, n_eval)
    s0, s1 = np.sort(s0), np.sort(s1)
    candidates = _candidate_thresholds(s0, s1)
    false_pos = len(s0) - np.searchsorted(s0, candidates, side="right")
    false_neg = np.searchsorted(s1, candidates, side="right")
    if n_eval is None:
        bounds = eps_lower_bound(false_pos, len(s0), false_neg, len(s1), delta, alpha)
    else:
        # One-sigma upper bounds on the selection rates: a thin tail promises little.
        fpr = clopper_pearson_upper(false_pos, len(s0), 0.16)
        fnr = clopper_pearson_upper(false_neg, len(s1), 0.16)
        bounds = eps_lower_bound(fpr * n_eval, n_eval, fnr * n_eval, n_eval, delta, alpha)
    i = int(np.argmax(bounds))
    return float(candidates[i]), float(bounds[i])
