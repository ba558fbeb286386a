"""The Fisher-information bounds and their checks (bench.certify.fisher.bounds), and the van
Trees prior term: exact for Gaussians, and sliced score matching recovering it."""

from __future__ import annotations

import math

import pytest
import torch

from bench.certify.fisher.bounds import (
    cramer_rao_bound,
    cramer_rao_check,
    rdp_eps_for_bound,
    rdp_mse_bound,
    van_trees_bound,
    van_trees_check,
)
from bench.certify.fisher.score_matching import estimate_prior_term, gaussian_prior_term

pytestmark = pytest.mark.usefixtures("one_thread")


def _efficient(bound: torch.Tensor, d: int = 784, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """x and an estimate whose coordinate errors are N(0, bound_i): MSE = bound in mean."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(len(bound), d, generator=gen)
    noise = torch.randn(len(bound), d, generator=gen, dtype=torch.float64)
    return x, x + noise * bound.sqrt().unsqueeze(1)


def test_cramer_rao_is_the_reciprocal_of_dfil() -> None:
    got = cramer_rao_bound(torch.tensor([4.0, 0.5]))
    assert torch.allclose(got, torch.tensor([0.25, 2.0], dtype=torch.float64))


def test_an_attack_attaining_cramer_rao_respects_it_at_the_test_level() -> None:
    bound = torch.full((400,), 0.01, dtype=torch.float64)
    x, x_hat = _efficient(bound)
    out = cramer_rao_check(x, x_hat, bound)
    assert out["bound_mse"].value == pytest.approx(0.01)
    # One-sided test at 2.5%: about 97.5% of samples pass; a plain mse >= bound gives ~50%.
    assert 0.95 <= out["bound_validity"].value <= 0.995
    lo, hi = out["bound_validity"].ci
    assert lo <= out["bound_validity"].value <= hi


def test_an_attack_beating_cramer_rao_by_20_percent_is_flagged() -> None:
    bound = torch.full((200,), 0.01, dtype=torch.float64)
    x, x_hat = _efficient(0.8 * bound)
    assert cramer_rao_check(x, x_hat, bound)["bound_validity"].value < 0.1


def test_van_trees_validity_reads_the_bootstrap_ci_of_the_mean_mse() -> None:
    # Mean MSE 0.021 with a CI about +-0.00012 wide: 5% above a bound of 0.02 holds, 5%
    # below a bound of 0.022 does not.
    x, x_hat = _efficient(torch.full((300,), 0.021, dtype=torch.float64))
    held = van_trees_check(x, x_hat, 0.02, (0.019, 0.021))
    assert held["bound_validity"].value == 1.0 and held["bound_validity"].ci == (1.0, 1.0)
    assert held["bound_mse"].value == 0.02 and held["bound_mse"].ci == (0.019, 0.021)
    broken = van_trees_check(x, x_hat, 0.022, (0.022, 0.022))
    assert broken["bound_validity"].value == 0.0 and broken["bound_validity"].ci == (0.0, 0.0)


def test_van_trees_is_one_over_the_sum_of_informations() -> None:
    # Gaussian data, tau = 0.05: the prior alone caps the bound at tau^2.
    prior = gaussian_prior_term(torch.full((784,), 0.05**2)).value
    assert prior == pytest.approx(400.0)
    assert van_trees_bound(0.0, prior) == pytest.approx(0.0025)
    assert van_trees_bound(100.0, prior) == pytest.approx(1 / 500)


def test_gaussian_prior_term_of_a_full_covariance_is_the_trace_of_its_inverse() -> None:
    a = torch.randn(5, 5, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    cov = a @ a.T + torch.eye(5, dtype=torch.float64)
    expected = float(torch.linalg.inv(cov).trace() / 5)
    assert gaussian_prior_term(cov).value == pytest.approx(expected)


def test_rdp_bound_and_its_inverse_agree() -> None:
    eps = rdp_eps_for_bound(0.01, 1.0)
    assert eps == pytest.approx(math.log(26.0))
    assert rdp_mse_bound(eps, 1.0) == pytest.approx(0.01)


def test_sliced_score_matching_recovers_the_fisher_information_of_smoothed_gaussian_data() -> None:
    # x ~ N(0, diag(v)); smoothed by N(0, s^2): Tr(J)/d = mean 1 / (v_i + s^2) exactly.
    gen = torch.Generator().manual_seed(0)
    var = torch.linspace(0.005, 0.2, 32)
    x = torch.randn(2000, 32, generator=gen) * var.sqrt()
    held = torch.randn(500, 32, generator=gen) * var.sqrt()
    est = estimate_prior_term(x, held, gen, smoothing=0.25, steps=200)
    exact = float((1 / (var + 0.0625)).mean())
    # Within 3 standard errors of the estimate (se ~1.5% of the value here: across data
    # seeds the error spreads over about +-2.5%), and the se itself small.
    assert abs(est.value - exact) <= 3 * est.se
    assert est.se < 0.02 * exact and est.gap < 0.05 * exact
    assert est.method == "sliced-score-matching" and est.smoothing == 0.25


def test_the_score_model_is_a_function_of_its_generator_alone() -> None:
    """fit_score's network starts from `generator`, not from torch's global RNG, so the van
    Trees prior term does not depend on what ran before it (it once did: job order moved
    dfil's bound_mse in the 4th digit)."""
    from bench.certify.fisher.score_matching import fit_score

    x = torch.randn(64, 5, generator=torch.Generator().manual_seed(1))
    fitted = []
    for before in (0, 9):
        torch.rand(before)
        score = fit_score(x, torch.Generator().manual_seed(3), steps=3, hidden=8)
        fitted.append(torch.cat([p.detach().flatten() for p in score.parameters()]))
    assert torch.equal(fitted[0], fitted[1])
