"""Where the audit's releases come from (bench.certify.audit.releases): a release that is its
encoder's output plus its declared noise is drawn as that sum with one encoder pass per
input, which gives the same releases as `release()` on the same generator; any other
release (noise smaller than declared, no noise, randomness drawn in another order) fails the
check and is audited through `release()` itself, so a miscalibration is still refuted."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from bench.certify.audit.core import Projection, _cost_per_draw, _scored, audit_mechanism
from bench.certify.audit.power import planned_draws
from bench.certify.audit.releases import PATH_DESCRIBED, PATH_RELEASE, Releases
from bench.plugin.accounting import gaussian_sigma
from bench.plugin.protocols import Guarantee, Mechanism, NoiseModel, Release
from tests.bench.certify.audit.test_audit import VECTOR

pytestmark = pytest.mark.usefixtures("one_thread")

EPS, DELTA, RADIUS = 2.0, 1e-5, 0.5


def _encoder() -> nn.Module:
    """A fixed 64 -> 8 linear map with operator norm exactly 1 (orthonormal rows): an input
    pair at l2 distance r moves its output by at most r, so sigma(eps, delta, r) suffices."""
    q, _ = torch.linalg.qr(torch.randn(64, 8, generator=torch.Generator().manual_seed(3)))
    layer = nn.Linear(64, 8, bias=False)
    with torch.no_grad():
        layer.weight.copy_(q.T)
    return layer.eval()


class LinearGauss(Mechanism):
    """Enc(x) + N(0, sigma^2) per output, sigma for (eps, delta, r)-IP over l2 (the Gaussian
    mechanism, Dwork & Roth Thm A.1, with Enc 1-Lipschitz). `mode` makes its release depart
    from what encoder() and noise() describe: "small" adds a fifth of the declared noise,
    "none" none at all, "extra-draw" draws a coin before its (correct) noise."""

    name = "test-linear-gauss"
    defaults: ClassVar[dict[str, Any]] = {"mode": "additive"}

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.enc = _encoder()
        self._noise = NoiseModel("gaussian", gaussian_sigma(EPS, DELTA, RADIUS)[0])

    def fit(self, task, splits, ctx) -> None:  # the tests use it unfitted
        raise NotImplementedError

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        mode = self.params["mode"]
        with torch.no_grad():
            e = self.enc(x)
        if mode == "extra-draw":
            torch.rand(1, generator=generator)
        noise = self._noise.sample(e.shape, generator)
        factor = {"small": 0.2, "none": 0.0}.get(mode, 1.0)
        return Release.all_released(e + factor * noise)

    def predict(self, release: Release) -> torch.Tensor:
        return release.values

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": EPS, "delta": DELTA, "radius": RADIUS}, "l2/input")

    def encoder(self) -> nn.Module:
        return self.enc

    def noise(self) -> NoiseModel:
        return self._noise


X = VECTOR.splits().test.x[0]


def test_described_releases_are_what_release_gives_on_the_same_generator() -> None:
    mech = LinearGauss()
    releases = Releases(mech, 500, seed=0, described=True)
    draw = releases.source(X)
    assert releases.paths == [PATH_DESCRIBED]
    values, kept = draw(500, torch.Generator().manual_seed(7))
    direct = mech.release(X.expand(500, -1), torch.Generator().manual_seed(7)).values
    assert kept.all() and values.shape == (500, 8)
    assert torch.allclose(values, direct, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", ["small", "none", "extra-draw"])
def test_a_release_that_departs_from_its_description_goes_through_release(mode: str) -> None:
    mech = LinearGauss(mode=mode)
    releases = Releases(mech, 500, seed=0, described=True)
    assert not releases.describes(X)
    draw = releases.source(X)
    assert releases.paths == [PATH_RELEASE]
    values, _ = draw(50, torch.Generator().manual_seed(7))
    direct = mech.release(X.expand(50, -1), torch.Generator().manual_seed(7)).values
    assert torch.equal(values, direct)


def test_a_gaussian_projection_is_drawn_from_the_law_of_the_projected_releases() -> None:
    # Enc(x).v + sigma ||v|| z against the projections of whole releases: the same mean and
    # spread (200,000 each; the standard error of the mean is sigma ||v|| / 447).
    mech, v = LinearGauss(), torch.linspace(-1.0, 1.0, 8)
    draw = Releases(mech, 500, seed=0, described=True).source(X)
    law = _scored(draw, {"p": Projection(v)}, 200_000, torch.Generator().manual_seed(1))["p"]
    y, _ = draw(200_000, torch.Generator().manual_seed(2))
    whole = (y.double() @ v.double()).numpy()
    spread = mech.noise().scale * float(v.norm())
    assert abs(law.mean() - whole.mean()) < 6 * spread / 447
    assert abs(law.std() / whole.std() - 1) < 0.01
    assert abs(law.std() / spread - 1) < 0.01


def test_the_described_path_skips_only_the_encoder_in_the_cost_budget() -> None:
    mech = LinearGauss()
    assert _cost_per_draw(mech, X, 8) == 64 + 8 + 64 * 8
    assert _cost_per_draw(mech, X, 8, described=True) == 64 + 8


def test_a_network_encoder_is_audited_at_its_planned_size_and_passes() -> None:
    result = audit_mechanism(LinearGauss(), VECTOR, 0, workers=2)
    plan = planned_draws("gaussian", EPS, DELTA)
    assert result.release_path == PATH_DESCRIBED
    assert result.n_draws == plan.n_draws and result.power == plan.power >= 0.95
    assert result.passed and result.eps_lb > 1.5, result.summary()
    assert "drawn as encoder output + declared noise" in result.summary()


def test_noise_smaller_than_declared_is_refuted_through_release() -> None:
    result = audit_mechanism(LinearGauss(mode="small"), VECTOR, 0, n_draws=20_000)
    assert result.release_path == PATH_RELEASE
    assert not result.passed and result.eps_lb > EPS, result.summary()


def test_the_described_audit_gives_the_same_numbers_for_any_worker_count() -> None:
    one = audit_mechanism(LinearGauss(), VECTOR, 1, n_draws=40_000, workers=1)
    two = audit_mechanism(LinearGauss(), VECTOR, 1, n_draws=40_000, workers=2, chunk=3000)
    fields = ("eps_lb", "fpr", "fnr", "threshold", "pair", "statistic")
    assert [getattr(one, f) for f in fields] == [getattr(two, f) for f in fields]


class Overflowing(nn.Module):
    """The linear encoder with a 1e40 gain: every output overflows float32 to +-inf."""

    def __init__(self, inner: nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) * 1e20 * 1e20


class Saturating(LinearGauss):
    """An encoder whose output overflows to inf, and a release that clips it to +-1 before
    its noise: the description (inf + noise) is not the release, and an infinite Enc(x) must
    not make the check's tolerance infinite (which would pass any release)."""

    name = "test-saturating"

    def __init__(self, **params: Any) -> None:
        super().__init__(**params)
        self.enc = Overflowing(self.enc)

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        with torch.no_grad():
            e = self.enc(x).clamp(-1.0, 1.0)
        return Release.all_released(e + self._noise.sample(e.shape, generator))


def test_an_encoder_output_that_is_not_finite_goes_through_release() -> None:
    mech = Saturating()
    with torch.no_grad():
        assert torch.isinf(mech.enc(X.unsqueeze(0))).all()
    releases = Releases(mech, 500, seed=0, described=True)
    assert not releases.describes(X)
    values, _ = releases.source(X)(50, torch.Generator().manual_seed(7))
    assert releases.paths == [PATH_RELEASE] and torch.isfinite(values).all()


class Counting(LinearGauss):
    """LinearGauss counting the rows its release() is asked for."""

    name = "test-counting"
    rows = 0

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        self.rows += len(x)
        return super().release(x, generator)


def test_each_input_is_checked_once_however_often_its_releases_are_asked_for() -> None:
    mech, other = Counting(), X.clone() + 0.1
    releases = Releases(mech, 500, seed=0, described=True)
    assert releases.describes(X) and releases.describes(X)
    for _ in range(3):
        releases.source(X)
    assert mech.rows == 256  # one check of X, never repeated
    releases.source(other)
    assert mech.rows == 512 and releases.paths == [PATH_DESCRIBED] * 4
