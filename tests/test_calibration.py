"""Noise calibration against the theorems it comes from."""

from __future__ import annotations

import math

import pytest

from bench.errors import ConfigError
from mechanisms.calibration import (
    analytic_gaussian_delta,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_sigma,
    laplace_scale,
)


def test_laplace_scale_is_sensitivity_over_eps() -> None:
    assert laplace_scale(2.0, 784.0) == pytest.approx(392.0)


def test_classic_gaussian_constant() -> None:
    expected = math.sqrt(2 * math.log(1.25 / 1e-5)) * 0.1 / 0.5
    assert classic_gaussian_sigma(0.5, 1e-5, 0.1) == pytest.approx(expected, rel=1e-12)


def test_classic_constant_refused_for_eps_at_least_one() -> None:
    with pytest.raises(ConfigError):
        classic_gaussian_sigma(1.0, 1e-5, 1.0)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, 2.0, 8.0, 30.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5, 1e-9])
def test_analytic_sigma_meets_delta_and_is_tight(eps: float, delta: float) -> None:
    sigma = analytic_gaussian_sigma(eps, delta, 0.3)
    assert analytic_gaussian_delta(sigma, eps, 0.3) <= delta
    # 0.1% less noise must break the guarantee: the bisection found the boundary.
    assert analytic_gaussian_delta(sigma * 0.999, eps, 0.3) > delta


@pytest.mark.parametrize("eps", [0.1, 0.5, 0.9])
def test_analytic_needs_less_noise_than_classic(eps: float) -> None:
    # Balle & Wang (2018): the classic constant is loose; the exact calibration is smaller.
    assert analytic_gaussian_sigma(eps, 1e-5, 1.0) < classic_gaussian_sigma(eps, 1e-5, 1.0)


def test_analytic_delta_matches_closed_form() -> None:
    # Phi(D/2s - eps s/D) - e^eps Phi(-D/2s - eps s/D) at D=1, s=1, eps=1.
    phi = lambda t: 0.5 * math.erfc(-t / math.sqrt(2))  # noqa: E731
    expected = phi(0.5 - 1.0) - math.e * phi(-0.5 - 1.0)
    assert analytic_gaussian_delta(1.0, 1.0, 1.0) == pytest.approx(expected, rel=1e-10)


def test_rule_switches_at_eps_one() -> None:
    assert gaussian_sigma(0.99, 1e-5, 1.0)[1] == "classic"
    assert gaussian_sigma(1.0, 1e-5, 1.0)[1] == "analytic"


@pytest.mark.parametrize(
    ("eps", "delta"), [(0.0, 1e-5), (-1.0, 1e-5), (math.inf, 1e-5), (1.0, 0.0), (1.0, 1.0)]
)
def test_bad_privacy_parameters_refused(eps: float, delta: float) -> None:
    with pytest.raises(ConfigError):
        gaussian_sigma(eps, delta, 1.0)
