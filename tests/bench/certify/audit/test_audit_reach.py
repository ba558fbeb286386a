"""How close the audit comes to the claim: its pairs reach the claim's worst case where
theory says they can (any direction at the radius for input noise, the block-constant
move for pooling, the top singular direction for a linear map), and the bound it can show
on the pair it found (`eps_ideal_pair`) follows the pair's separation up to the plan's
ideal bound."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from bench.certify.audit.core import audit_mechanism
from bench.certify.audit.pairs import worst_case_radius_pairs
from bench.certify.audit.power import claim_separation, pair_ideal, plan_at
from bench.plugin.accounting import gaussian_sigma
from bench.plugin.protocols import (
    FitContext,
    Guarantee,
    Mechanism,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.tasks.images import FashionMNIST
from mechanisms.noise.output_noise import GaussOutput
from tests.bench.certify.audit.test_audit_draws import DIM, SMALL, _gauss_input

IMAGES = FashionMNIST(n_train=10, n_aux=10, n_test=10)
IMAGES.splits()

pytestmark = pytest.mark.usefixtures("one_thread")


class Pooled(Mechanism):
    """2x2 average pooling plus Gaussian noise calibrated to l2 sensitivity r / 2: pooling
    maps a block-constant move of norm r to one of norm r / 2 and shrinks every other move
    more (Cauchy-Schwarz on each block), so a block-constant move is the worst case the
    audit has to find."""

    name = "test-pooled"

    def __init__(self) -> None:
        self.pool = nn.AvgPool2d(2)
        self.sigma = gaussian_sigma(2.0, 1e-5, 0.25)[0]

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        """Nothing to fit."""

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        with torch.no_grad():
            pooled = self.pool(x)
        return Release.all_released(
            pooled + torch.randn(pooled.shape, generator=generator) * self.sigma
        )

    def predict(self, release: Release) -> torch.Tensor:
        return release.values.flatten(1)[:, :10]

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": 2.0, "delta": 1e-5, "radius": 0.5}, "l2/input")

    def encoder(self) -> nn.Module:
        return self.pool

    def noise(self) -> NoiseModel:
        return NoiseModel("gaussian", self.sigma)


def test_input_noise_pairs_reach_the_claim_and_its_ideal() -> None:
    result = audit_mechanism(_gauss_input(IMAGES), IMAGES, 0, n_draws=200_000)
    assert result.pair_reach == pytest.approx(1.0, abs=1e-3)
    assert result.eps_ideal_pair == pytest.approx(result.eps_ideal, abs=2e-3)
    assert "reaches 100% of the claim's worst case" in result.summary()


def test_pooling_s_worst_pair_is_the_block_constant_move() -> None:
    # Random moves lose about half of their distance to the pooling; the worst pair is a
    # block-constant move, which keeps exactly half: the distance the noise is paid for.
    result = audit_mechanism(Pooled(), IMAGES, 0, n_draws=200_000)
    assert result.pair.startswith("worst-case") and result.pair_reach > 0.99, result.summary()


def test_output_noise_on_a_linear_map_reaches_its_certified_constant() -> None:
    # One linear layer: the certified constant is its spectral norm, which the search's
    # start (the top singular direction) attains; a random direction would reach about a
    # third of it.
    mech = GaussOutput(eps=2.0, delta=1e-3, r=0.5)
    weight = torch.tensor([[3.0, -1.0, 0.5, 2.0], [1.0, 2.0, -2.0, 0.0], [0.0, 1.5, 1.0, -1.0]])
    mech.model = nn.Linear(DIM, 3, bias=False).requires_grad_(False)
    mech.model.weight.copy_(weight)
    mech._noise = mech.certify(mech.model, SMALL.input_shape)
    result = audit_mechanism(mech, SMALL, 0, n_draws=200_000)
    assert result.pair_reach == pytest.approx(1.0, abs=2e-3), result.summary()


def test_pair_ideal_follows_the_separation_up_to_the_plan() -> None:
    mu = claim_separation("gaussian", 2.0, 1e-5)
    plan = plan_at("gaussian", 2.0, 1e-5, 5_000_000)
    at_claim = pair_ideal("gaussian", 2.0, 1e-5, 5_000_000, mu)
    assert at_claim == pytest.approx(plan.ideal, abs=1e-9)
    ideals = [pair_ideal("gaussian", 2.0, 1e-5, 5_000_000, f * mu) for f in (0.5, 0.8, 0.9)]
    assert ideals == sorted(ideals) and ideals[-1] < at_claim
    # Laplace, pure: the separation is the pair's own eps, which the ideal never exceeds.
    assert pair_ideal("laplace", 2.0, 0.0, 10_000_000, 1.0) <= 1.0
    assert pair_ideal("laplace", 2.0, 1e-5, 10_000_000, 1.0) is None


def test_worst_case_search_on_a_network_reaches_its_largest_local_stretch() -> None:
    # A smooth network: at a small radius the largest gap over the anchors is r times the
    # largest spectral norm of its Jacobian there (the search may climb past it: the
    # anchor moves too), far above what random directions get.
    gen = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 5)).requires_grad_(False)
    for p in net.parameters():
        p.copy_(torch.randn(p.shape, generator=gen))
    anchors = 0.3 * torch.randn(6, 12, generator=gen)
    radius, box = 0.02, (-10.0, 10.0)
    x0, x1, gap = worst_case_radius_pairs(anchors, radius, "l2", box, net, 2.0, gen)
    with torch.no_grad():
        assert torch.allclose(gap, (net(x1) - net(x0)).norm(dim=1), rtol=1e-5)
    assert torch.allclose((x1 - x0).norm(dim=1), torch.full((6,), radius), rtol=1e-4)
    stretch = [
        float(torch.linalg.matrix_norm(torch.autograd.functional.jacobian(net, a), ord=2))
        for a in anchors
    ]
    assert float(gap.max()) >= 0.98 * radius * max(stretch)
    moves = torch.randn(6, 12, generator=gen)
    random = anchors + radius * moves / moves.norm(dim=1, keepdim=True)
    with torch.no_grad():
        random_gaps = (net(random) - net(anchors)).norm(dim=1)
    assert float(random_gaps.max()) < float(gap.max())
