"""Noise calibration of the in-tree mechanisms: the public formulas of bench.accounting,
kept apart from the mechanisms (as Opacus keeps its accountant apart from its engine) so
they are tested on their own against the theorems they come from."""

from __future__ import annotations

from bench.accounting import (
    analytic_gaussian_delta,
    analytic_gaussian_eps,
    analytic_gaussian_sigma,
    check_privacy_params,
    classic_gaussian_sigma,
    gaussian_sigma,
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
