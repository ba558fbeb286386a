"""Privacy accounting formulas of the additive-noise mechanisms: the Laplace scale, the
classic and analytic Gaussian calibrations and their inverse (the exact eps of a Gaussian
mechanism). Kept in bench so that both the mechanisms (their noise calibration) and the
audit (its power model) use the same theorems.
"""

from __future__ import annotations

import math

from scipy.special import log_ndtr, ndtr

from bench.core.errors import ConfigError


def check_privacy_params(
    eps: float, delta: float | None = None, radius: float | None = None
) -> None:
    """Refuse parameters for which the calibrations below are undefined."""
    if not (eps > 0 and math.isfinite(eps)):
        raise ConfigError(f"eps must be a positive finite number, got {eps}")
    if delta is not None and not 0 < delta < 1:
        raise ConfigError(f"delta must lie in (0, 1), got {delta}")
    if radius is not None and not (radius > 0 and math.isfinite(radius)):
        raise ConfigError(f"radius r must be a positive finite number, got {radius}")


def laplace_scale(eps: float, l1_sensitivity: float) -> float:
    """Laplace mechanism: b = Delta_1 / eps gives eps-DP (Dwork et al. 2006, Thm 3.6 of
    Dwork & Roth)."""
    check_privacy_params(eps)
    return l1_sensitivity / eps


def classic_gaussian_sigma(eps: float, delta: float, l2_sensitivity: float) -> float:
    """sigma = sqrt(2 ln(1.25/delta)) Delta_2 / eps; (eps, delta)-DP only for eps < 1
    (Dwork & Roth, Thm A.1)."""
    check_privacy_params(eps, delta)
    if eps >= 1:
        raise ConfigError("the classic Gaussian constant is proven only for eps < 1")
    return math.sqrt(2 * math.log(1.25 / delta)) * l2_sensitivity / eps


def analytic_gaussian_delta(sigma: float, eps: float, l2_sensitivity: float) -> float:
    """The exact delta of the Gaussian mechanism at (sigma, eps) (Balle & Wang 2018, Thm 8):
    Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D)."""
    a = l2_sensitivity / (2 * sigma)
    b = eps * sigma / l2_sensitivity
    return float(ndtr(a - b) - math.exp(eps + log_ndtr(-a - b)))


def analytic_gaussian_sigma(eps: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest sigma with analytic_gaussian_delta <= delta, by bisection (delta decreases in
    sigma). Returns the upper end of the final bracket, so the guarantee holds exactly."""
    check_privacy_params(eps, delta)
    lo, hi = 0.0, l2_sensitivity
    while analytic_gaussian_delta(hi, eps, l2_sensitivity) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if mid > 0 and analytic_gaussian_delta(mid, eps, l2_sensitivity) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def analytic_gaussian_eps(sigma: float, delta: float, l2_sensitivity: float) -> float:
    """Smallest eps with analytic_gaussian_delta(sigma, eps) <= delta: the exact (eps, delta)-DP
    of a Gaussian mechanism with noise `sigma` (Balle & Wang 2018, Thm 8; delta decreases in
    eps). Bisection; returns the upper end of the final bracket, so the claim holds exactly."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ConfigError(f"sigma must be a positive finite number, got {sigma}")
    if not 0 < delta < 1:
        raise ConfigError(f"delta must lie in (0, 1), got {delta}")
    lo, hi = 0.0, 1.0
    if analytic_gaussian_delta(sigma, 0.0, l2_sensitivity) <= delta:
        return 0.0
    while analytic_gaussian_delta(sigma, hi, l2_sensitivity) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        if analytic_gaussian_delta(sigma, mid, l2_sensitivity) <= delta:
            hi = mid
        else:
            lo = mid
    return hi


def gaussian_sigma(eps: float, delta: float, l2_sensitivity: float) -> tuple[float, str]:
    """The Gaussian noise scale for (eps, delta) at `l2_sensitivity` and the rule used:
    the classic constant for eps < 1 (as the IP paper), the analytic mechanism otherwise."""
    if eps < 1:
        return classic_gaussian_sigma(eps, delta, l2_sensitivity), "classic"
    return analytic_gaussian_sigma(eps, delta, l2_sensitivity), "analytic"
