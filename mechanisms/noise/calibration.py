"""Noise calibration: the scale a mechanism needs for its declared guarantee.

Kept apart from the mechanisms (as Opacus keeps its accountant apart from its engine)
so the formulas are tested on their own against the theorems they come from.
"""

from __future__ import annotations

from bench.certify.accounting import (
    analytic_gaussian_delta,
    analytic_gaussian_eps,
    analytic_gaussian_sigma,
    check_privacy_params,
    classic_gaussian_sigma,
    laplace_scale,
)

__all__ = [
    "analytic_gaussian_delta",
    "analytic_gaussian_eps",
    "analytic_gaussian_sigma",
    "check_privacy_params",
    "classic_gaussian_sigma",
    "gaussian_sigma",
    "laplace_scale",
]


def gaussian_sigma(eps: float, delta: float, l2_sensitivity: float) -> tuple[float, str]:
    """The Gaussian noise scale for (eps, delta) at `l2_sensitivity` and the rule used:
    the classic constant for eps < 1 (as the IP paper), the analytic mechanism otherwise."""
    if eps < 1:
        return classic_gaussian_sigma(eps, delta, l2_sensitivity), "classic"
    return analytic_gaussian_sigma(eps, delta, l2_sensitivity), "analytic"
