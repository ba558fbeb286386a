"""The privacy audit: Clopper-Pearson bounds, input pairs, and the audit itself refuting a
miscalibrated mechanism while every correct one passes."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from scipy.stats import binomtest
from torch import nn

from bench.certify.audit.bounds import clopper_pearson_upper, eps_detectable, eps_lower_bound
from bench.certify.audit.core import audit_mechanism
from bench.certify.audit.pairs import domain_pairs, parse_norm, radius_pairs
from bench.plugin.input_space import InputSpaceMechanism
from bench.plugin.protocols import DataSplit, Guarantee, NoiseModel, Splits, Task
from bench.tasks.images import FashionMNIST
from mechanisms.noise.identity import Identity
from mechanisms.noise.input_noise import GaussInput, LDPImage
from tests.plugins.bench_test_plugins import HalfNoiseGauss

TASK = FashionMNIST(n_train=10, n_aux=10, n_test=10)
TASK.splits()
BOX = (0.0, 1.0)
MEDIUM = {"n_select": 2000, "n_draws": 10000}  # audit size for the slower Fashion-MNIST case
GAUSS_IMAGES = {"n_draws": 200_000}


class VectorTask(Task):
    """64 uniform inputs in [0, 1]^64: the audit's statistics do not depend on the input
    size, and small inputs make 20 seeded audits at the default size cheap."""

    name = "test-vector"
    version = "1"
    modality = "vector"
    input_shape = (64,)
    data_range = (0.0, 1.0)
    num_classes = 2

    def splits(self) -> Splits:
        x = torch.rand(32, 64, generator=torch.Generator().manual_seed(0))
        part = DataSplit(x, torch.zeros(32, dtype=torch.long))
        return Splits(part, part, part)

    def model(self, arch: str = "default") -> nn.Module:
        return nn.Linear(64, 2)


VECTOR = VectorTask()


pytestmark = pytest.mark.usefixtures("one_thread")


def _calibrated(cls: type, task: Task = VECTOR, **params: Any):
    """A mechanism with its noise calibrated on `task`; the audit needs no utility model."""
    mech = cls(**params)
    mech._noise = mech.calibrate(task)
    return mech


class LaplaceIP(InputSpaceMechanism):
    """Laplace noise b = factor * r / eps on the input: (eps, 0, r)-IP over l1 when factor is 1
    (Laplace mechanism with l1 sensitivity r, Dwork & Roth Thm 3.6)."""

    name = "test-laplace-ip"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0, "r": 0.5, "factor": 1.0}

    def calibrate(self, task: Task) -> NoiseModel:
        p = self.params
        return NoiseModel("laplace", p["factor"] * p["r"] / p["eps"])

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": self.params["eps"], "radius": self.params["r"]}, "l1/input")


class ClaimingIdentity(Identity):
    """Releases the input unchanged yet claims (1, 1e-5, 0.1)-IP: deterministic, so false."""

    name = "test-claiming-identity"

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": 1.0, "delta": 1e-5, "radius": 0.1}, "l2/input")


class EmbeddingClaim(GaussInput):
    """A claim over a distance the audit cannot construct pairs for."""

    name = "test-embedding-claim"

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": 1.0, "delta": 1e-5, "radius": 0.1}, "l2/embedding")


class TrainingSetClaim(GaussInput):
    """A DP claim: over neighbouring training sets, which an input-space audit cannot test."""

    name = "test-training-set-claim"

    def guarantee(self) -> Guarantee:
        return Guarantee("dp", {"eps": 1.0, "delta": 1e-5}, "training-set/add-remove")


# ------------------------------------------------------------------------ bounds


@pytest.mark.parametrize("k", [0, 1, 7, 50, 99])
def test_clopper_pearson_upper_matches_the_exact_binomial_interval(k: int) -> None:
    # A one-sided (1 - a) bound is the upper end of the two-sided (1 - 2a) exact interval.
    expected = binomtest(k, 100).proportion_ci(confidence_level=0.95, method="exact").high
    assert clopper_pearson_upper(k, 100, 0.025) == pytest.approx(expected, rel=1e-9)
    assert clopper_pearson_upper(100, 100, 0.025) == 1.0


def test_eps_lower_bound_is_the_hypothesis_testing_formula() -> None:
    fpr_u = clopper_pearson_upper(10, 1000, 0.025)
    fnr_u = clopper_pearson_upper(500, 1000, 0.025)
    direct = math.log((1 - 1e-5 - fnr_u) / fpr_u)
    assert eps_lower_bound(10, 1000, 500, 1000, 1e-5) == pytest.approx(direct)
    # The swapped inequality bounds the test with the roles of x0 and x1 exchanged.
    assert eps_lower_bound(500, 1000, 10, 1000, 1e-5) == pytest.approx(direct)
    assert eps_lower_bound(500, 1000, 500, 1000, 0.0) == 0.0  # a coin flip proves nothing
    # A perfect test on n draws per side: about log(n / ln(1 / 0.025)).
    assert eps_detectable(50_000, 50_000, 0.0) == pytest.approx(math.log(50_000 / 3.69), abs=0.01)


def test_bound_holds_with_95_percent_confidence_on_a_tight_mechanism() -> None:
    # Randomized response with P(1 | x0) = 1/4, P(1 | x1) = 3/4 is exactly (log 3, 0)-DP;
    # the test "output 1" meets the bound with equality, so point estimates would exceed
    # log 3 about half the time. The Clopper-Pearson bound may exceed it at most 5%.
    rng = np.random.default_rng(0)
    false_pos = rng.binomial(1000, 0.25, size=2000)
    false_neg = rng.binomial(1000, 0.25, size=2000)
    bounds = eps_lower_bound(false_pos, 1000, false_neg, 1000, 0.0)
    assert np.mean(bounds > math.log(3)) <= 0.05
    assert bounds.mean() > 0.9  # and it is not vacuous


# ------------------------------------------------------------------------- pairs


@pytest.mark.parametrize("norm", ["l1", "l2", "linf"])
def test_radius_pairs_stay_in_the_ball_and_the_data_range(norm: str) -> None:
    anchors = TASK.splits().test.x[:6]
    gen = torch.Generator().manual_seed(0)
    pairs = radius_pairs(anchors, 0.3, norm, BOX, nn.Identity(), 2.0, 3, 3, gen)
    order = {"l1": 1, "l2": 2, "linf": math.inf}[norm]
    assert [p.kind for p in pairs] == ["random"] * 3 + ["worst-case"] * 3
    for p in pairs:
        dist = float(torch.linalg.vector_norm((p.x1 - p.x0).flatten(), ord=order))
        assert dist <= 0.3 + 1e-5 and dist == pytest.approx(p.distance, rel=1e-5)
        assert dist >= 0.25  # moves point into the box, so little of the radius is lost
        assert p.x1.min() >= 0 and p.x1.max() <= 1


def test_worst_case_pairs_find_the_encoder_s_most_sensitive_direction() -> None:
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(784, generator=gen)
    weight = 0.01 * torch.randn(10, 784, generator=gen)
    weight[0] += 5 * u / u.norm()  # one direction is amplified 5x
    encoder = nn.Sequential(nn.Flatten(), nn.Linear(784, 10, bias=False))
    encoder[1].weight.data = weight
    anchors = torch.full((4, 1, 28, 28), 0.5)  # interior points: the box does not bind
    pairs = radius_pairs(anchors, 0.1, "l2", BOX, encoder, 2.0, 2, 2, gen)
    with torch.no_grad():
        gaps = [float((encoder(p.x1[None]) - encoder(p.x0[None])).norm()) for p in pairs]
    top = float(torch.linalg.matrix_norm(weight, ord=2)) * 0.1
    assert min(gaps[2:]) > 0.95 * top  # worst-case pairs reach the spectral norm
    assert max(gaps[:2]) < 0.5 * top  # random directions do not


def test_l1_worst_case_pairs_move_to_a_vertex() -> None:
    encoder = nn.Sequential(nn.Flatten(), nn.Linear(784, 1, bias=False))
    encoder[1].weight.data = torch.ones(1, 784)
    encoder[1].weight.data[0, 300] = 50.0  # pixel 300 dominates the output
    anchors = torch.full((2, 1, 28, 28), 0.5)
    gen = torch.Generator().manual_seed(0)
    (pair,) = radius_pairs(anchors, 0.2, "l1", BOX, encoder, 1.0, 0, 1, gen)
    move = (pair.x1 - pair.x0).flatten()
    assert move.abs().argmax() == 300 and move.abs()[300] == pytest.approx(0.2)


def test_domain_pairs_start_with_the_extremes() -> None:
    anchors = TASK.splits().test.x[:6]
    pairs = domain_pairs(anchors, BOX, nn.Identity(), 1.0, 2, 1)
    assert pairs[0].kind == "extremes" and pairs[0].distance == pytest.approx(28.0)
    assert bool((pairs[0].x0 == 0).all() and (pairs[0].x1 == 1).all())
    assert [p.kind for p in pairs[1:]] == ["random", "random", "worst-case"]
    # Sign-gradient ascent on ||x1 - x0|| drives a real pair to opposite corners.
    assert pairs[3].distance == pytest.approx(28.0)


def test_parse_norm() -> None:
    assert parse_norm("l2/input") == "l2" and parse_norm("linf") == "linf"
    assert parse_norm("l2/embedding") is None and parse_norm("any pair of inputs") is None


# ------------------------------------------------------------------------- audit


@pytest.mark.slow
def test_miscalibrated_mechanism_is_caught_in_95_percent_of_seeds() -> None:
    mech = _calibrated(HalfNoiseGauss, eps=2.0, r=0.5)
    results = [audit_mechanism(mech, VECTOR, seed, n_draws=100_000) for seed in range(20)]
    caught = sum(not r.passed for r in results)
    assert caught >= 19, [round(r.eps_lb, 3) for r in results]
    assert all(r.audited and r.eps_lb is not None for r in results)


def test_miscalibrated_mechanism_is_caught_on_images() -> None:
    mech = _calibrated(HalfNoiseGauss, TASK, eps=2.0, r=0.5)
    result = audit_mechanism(mech, TASK, 0, n_draws=100_000)
    assert not result.passed and result.eps_lb > 2.0, result.summary()


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (GaussInput, {"eps": 0.5, "r": 0.5}),
        (GaussInput, {"eps": 1.0, "r": 0.1}),
        (GaussInput, {"eps": 2.0, "r": 0.5}),
        (GaussInput, {"eps": 4.0, "delta": 1e-6, "r": 1.0}),
        (LDPImage, {"eps": 1.0}),
        (LDPImage, {"eps": 8.0}),
        (LaplaceIP, {"eps": 1.0, "r": 0.5}),
        (LaplaceIP, {"eps": 2.0, "r": 0.2}),
    ],
    ids=lambda v: getattr(v, "name", None) or ",".join(f"{k}={x}" for k, x in v.items()),
)
def test_correct_mechanisms_pass(cls: type, params: dict) -> None:
    result = audit_mechanism(_calibrated(cls, **params), VECTOR, 0, n_draws=200_000)
    assert result.audited and result.passed, result.summary()
    assert 0 <= result.eps_lb <= params["eps"]


@pytest.mark.parametrize(
    ("cls", "params", "options"),
    [(GaussInput, {"eps": 1.0, "r": 0.1}, GAUSS_IMAGES), (LDPImage, {"eps": 1.0}, MEDIUM)],
    ids=["gauss-input", "ldp-image"],
)
def test_correct_mechanisms_pass_on_images(cls: type, params: dict, options: dict) -> None:
    result = audit_mechanism(_calibrated(cls, TASK, **params), TASK, 0, **options)
    assert result.audited and result.passed, result.summary()


def test_laplace_claim_halved_is_caught_through_the_likelihood_ratio() -> None:
    # Pure eps-IP over l1: the worst pair puts the whole radius on one pixel (a vertex).
    # Twice the claimed eps is caught at 20,000 draws a side (eps_lb 3.77 > 2); the planned
    # size here is 10M draws a side (about 26 s), and the power of planned-size audits is
    # tests/bench/certify/audit/test_audit_power.py's subject.
    mech = _calibrated(LaplaceIP, eps=2.0, r=0.2, factor=0.5)
    result = audit_mechanism(mech, VECTOR, 0, n_draws=20_000)
    assert not result.passed, result.summary()
    assert result.pair.startswith("worst-case")


def test_deterministic_mechanism_with_a_claim_fails() -> None:
    result = audit_mechanism(_calibrated(ClaimingIdentity), VECTOR, 0, n_draws=20_000)
    assert not result.passed and result.fpr == 0 and result.fnr == 0
    assert result.eps_lb == pytest.approx(result.eps_detectable)


@pytest.mark.parametrize(
    ("cls", "reason"),
    [
        (Identity, "notion 'none'"),
        (EmbeddingClaim, "distance 'l2/embedding'"),
        (TrainingSetClaim, "claim over neighbouring training sets"),
    ],
)
def test_claims_the_audit_cannot_test_pass_with_a_reason(cls: type, reason: str) -> None:
    result = audit_mechanism(_calibrated(cls), VECTOR, 0)
    assert result.passed and not result.audited and result.eps_lb is None
    assert reason in result.reason and reason in result.summary()


def test_audit_is_deterministic_under_its_seed() -> None:
    mech = _calibrated(GaussInput, eps=2.0, r=0.5)
    a, b = (audit_mechanism(mech, VECTOR, 3, n_draws=50_000) for _ in range(2))
    c = audit_mechanism(mech, VECTOR, 4, n_draws=50_000)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "seconds"}  # noqa: E731
    assert strip(a) == strip(b)
    assert strip(a) != strip(c)


def test_progress_counts_every_planned_release_and_changes_no_number() -> None:
    """The `progress` callback hears of every release drawn, in order, up to the planned
    total (three pairs' selection and the evaluation), and the result is the same."""
    mech = _calibrated(GaussInput, eps=2.0, r=0.5)
    calls: list[tuple[int, int]] = []
    told = audit_mechanism(mech, VECTOR, 3, n_draws=50_000, progress=lambda *c: calls.append(c))
    quiet = audit_mechanism(mech, VECTOR, 3, n_draws=50_000)
    strip = lambda r: {k: v for k, v in r.to_dict().items() if k != "seconds"}  # noqa: E731
    assert strip(told) == strip(quiet)
    total = 2 * told.n_select * told.n_pairs + 2 * told.n_draws
    assert {t for _, t in calls} == {total}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == total and len(done) > 2
