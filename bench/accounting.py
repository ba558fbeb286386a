"""Noise calibration for mechanisms, in-tree and plug-in alike (a public module): the scale
an additive-noise mechanism needs for its claim, and the exact eps of a Gaussian one. The
formulas and the theorems they come from are in bench.certify.accounting, where the
privacy audit's power model uses the same ones."""

from __future__ import annotations

from bench.certify.accounting import (
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
