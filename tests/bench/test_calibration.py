"""Noise calibration against the theorems it comes from."""

from __future__ import annotations

import math

import pytest

from bench.core.errors import ConfigError
from bench.plugin.accounting import (
    analytic_gaussian_delta,
    analytic_gaussian_eps,
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


@pytest.mark.parametrize("sigma", [0.3, 1.0, 4.0, 20.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-5])
def test_analytic_eps_meets_delta_tightly_and_inverts_the_sigma_calibration(
    sigma: float, delta: float
) -> None:
    eps = analytic_gaussian_eps(sigma, delta, 2.0)
    assert analytic_gaussian_delta(sigma, eps, 2.0) <= delta
    if eps > 0:  # 0.1% smaller eps must break the claim: the bisection found the boundary
        assert analytic_gaussian_delta(sigma, eps * 0.999, 2.0) > delta
        assert analytic_gaussian_sigma(eps, delta, 2.0) == pytest.approx(sigma, rel=1e-6)
    # Never looser than converting the (2, 4/sigma^2)-RDP of the same mechanism with
    # Mironov 2017, Prop. 3: eps_rdp + ln(1/delta) / (alpha - 1).
    assert eps <= (2.0 / sigma) ** 2 + math.log(1 / delta)


def test_analytic_eps_refuses_bad_inputs() -> None:
    with pytest.raises(ConfigError):
        analytic_gaussian_eps(0.0, 1e-5, 1.0)
    with pytest.raises(ConfigError):
        analytic_gaussian_eps(1.0, 0.0, 1.0)
