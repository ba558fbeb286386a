"""Reconstruction-MSE lower bounds from Fisher information (dFIL paper, Maeng et al. 2023) and
the checks that compare an attack's errors with them.

- Cramer-Rao (dFIL paper Eq. 3; Kay 1993, Thm 3.2): for an attack unbiased at x,
  E_noise ||x_hat - x||^2 / d >= d / Tr(I(x)) = 1 / dFIL(x).
- van Trees (dFIL paper Corollary 1, from Gill & Levit 1995, Thm 1): for ANY attack,
  E_pi E_noise ||x_hat - x||^2 / d >= 1 / (E_pi[dFIL(x)] + Tr(J(f_pi)) / d).
- RDP (dFIL paper App. A.5, Eq. 7, from Guo et al. 2022): a (2, eps)-RDP encoder gives an
  unbiased attack E||x_hat - x||^2 / d >= (sum_i diam_i^2 / (4d)) / (e^eps - 1).

Both Fisher bounds are expectations over the noise (and, for van Trees, over the data), so a
single release of each sample can only test them statistically:
- Cramer-Rao, per sample: sample i respects the bound unless its per-dimension squared error
  is significantly below it, one-sided at 2.5%: mse_i + 1.96 se_i >= bound_i with se_i the
  standard error of the mean of its d squared coordinate errors. An attack that attains the
  bound exactly (e.g. least squares on a linear encoder) then scores about 0.975; a plain
  mse_i >= bound_i would score about 0.5 for it. Coordinate errors are treated as independent,
  which shrinks se_i when they are correlated and makes the check stricter, not laxer.
- van Trees, population: respected unless the whole 95% bootstrap CI of the mean MSE lies
  below the bound; reported as 1.0 / 0.0, with (lo, hi) = the same statement for the CI's
  lower and upper ends.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from bench.metrics import MetricResult
from bench.metrics.stats import summarize

Z_ONE_SIDED = 1.959963984540054  # standard normal 97.5% quantile


def cramer_rao_bound(dfil: torch.Tensor) -> torch.Tensor:
    """Per-sample 1 / dFIL(x): the MSE floor of unbiased attacks (Eq. 3)."""
    return 1.0 / dfil.double()


def van_trees_bound(mean_dfil: float, prior_term: float) -> float:
    """1 / (E_pi[dFIL] + Tr(J(f_pi))/d): the MSE floor of every attack (Corollary 1)."""
    return 1.0 / (mean_dfil + prior_term)


def rdp_mse_bound(eps: float, diameters_sq_mean: float) -> float:
    """(mean_i diam_i^2 / 4) / (e^eps - 1) for a (2, eps)-RDP encoder (App. A.5, Eq. 7)."""
    return diameters_sq_mean / 4.0 / math.expm1(eps)


def rdp_eps_for_bound(bound: float, diameters_sq_mean: float) -> float:
    """The eps at which Eq. 7 equals `bound`: ln(1 + mean diam^2 / (4 bound))."""
    return math.log1p(diameters_sq_mean / (4.0 * bound))


def _squared_errors(x: torch.Tensor, x_hat: torch.Tensor) -> np.ndarray:
    diff = (x_hat.detach().double() - x.detach().double()).flatten(1)
    return diff.pow(2).numpy()


def cramer_rao_check(
    x: torch.Tensor, x_hat: torch.Tensor, bound: torch.Tensor
) -> dict[str, MetricResult]:
    """bound_mse (per-sample bounds, mean with bootstrap CI) and bound_validity (fraction of
    samples not significantly below their bound, with bootstrap CI)."""
    sq = _squared_errors(x, x_hat)
    mse = sq.mean(1)
    se = sq.std(1, ddof=1) / math.sqrt(sq.shape[1])
    b = bound.detach().double().numpy()
    respects = (mse + Z_ONE_SIDED * se >= b).astype(np.float64)
    return {"bound_mse": summarize(b), "bound_validity": summarize(respects)}


def van_trees_check(
    x: torch.Tensor, x_hat: torch.Tensor, bound: float, bound_ci: tuple[float, float]
) -> dict[str, MetricResult]:
    """bound_mse (the population bound, CI from the prior term's error) and bound_validity
    (1.0 unless the bootstrap CI of the mean MSE lies wholly below the bound)."""
    mse = summarize(_squared_errors(x, x_hat).mean(1))
    lo, hi = mse.ci
    validity = MetricResult(
        value=float(hi >= bound), ci=(float(lo >= bound), float(hi >= bound)), n=mse.n
    )
    bound_result = MetricResult(float(bound), (float(bound_ci[0]), float(bound_ci[1])), 1)
    return {"bound_mse": bound_result, "bound_validity": validity}
