"""The attack suite is strong and fair: each attack beats what it must beat, MAP is the
exact MAP, lookup recovers ids, ⊥ is scored both ways, repeated queries average noise."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from torch import nn

from attacks.inverter import InverterAttack
from attacks.lookup import LookupAttack
from attacks.optimization import MAPAttack, OptimizationAttack, TVAttack
from bench.core.errors import ConfigError
from bench.metrics.reconstruction import ssim
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Mechanism, NoiseModel, Release
from bench.run.kinds.reconstruction import attack_metrics, utility_metrics
from bench.run.queries import RepeatedQueries
from bench.tasks.images import FashionMNIST
from mechanisms.noise.identity import Identity
from mechanisms.noise.input_noise import GaussInput


@pytest.fixture(scope="module")
def task() -> FashionMNIST:
    t = FashionMNIST(n_train=200, n_aux=1000, n_test=48, train_epochs=1)
    t.splits()
    return t


def _ctx(tmp_path: Path, seed: int = 0) -> FitContext:
    return FitContext(seed=seed, cache=ArtifactCache(tmp_path))


def _calibrated(mech: Mechanism, task) -> Mechanism:
    mech._noise = mech.calibrate(task)  # calibration only: no utility model needed
    return mech


def _attack_mse(attack, mech, task, tmp_path, x=None) -> float:
    x = task.splits().test.x if x is None else x
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    release = mech.release(x, torch.Generator().manual_seed(7))
    return float((attack.reconstruct(release) - x).pow(2).mean())


def test_inverter_reaches_ssim_0_8_against_identity(task, tmp_path) -> None:
    mech = _calibrated(Identity(), task)
    attack = InverterAttack(epochs=15)
    attack.fit(mech, task, task.splits().aux.head(600), _ctx(tmp_path))
    x = task.splits().test.x
    x_hat = attack.reconstruct(mech.release(x, torch.Generator().manual_seed(0)))
    assert ssim(x, x_hat, 1.0).mean() >= 0.8


@pytest.mark.slow
def test_inverter_beats_the_best_data_independent_guess(task, tmp_path) -> None:
    mech = _calibrated(GaussInput(eps=2.0, r=0.25), task)
    aux = task.splits().aux
    inverter_mse = _attack_mse(InverterAttack(epochs=10), mech, task, tmp_path)
    x = task.splits().test.x
    prior_mse = float((aux.x.mean(0, keepdim=True) - x).pow(2).mean())
    assert inverter_mse < 0.8 * prior_mse
    assert inverter_mse < mech.noise().scale ** 2  # better than the raw release


def test_optimization_recovers_an_unprotected_input(task, tmp_path) -> None:
    assert _attack_mse(OptimizationAttack(), _calibrated(Identity(), task), task, tmp_path) < 1e-8


def test_white_box_attacks_refuse_a_mechanism_without_encoder(task, tmp_path) -> None:
    class LabelOnly(LinearEncoder):
        name = "test-label-only"

        def encoder(self):
            return None

    for attack in (OptimizationAttack(), TVAttack(), MAPAttack()):
        with pytest.raises(ConfigError, match="differentiable encoder"):
            attack.fit(LabelOnly(), task, task.splits().aux, _ctx(tmp_path))


class LinearEncoder(Mechanism):
    """A noiseless random linear map R^784 -> R^1000 (invertible: full column rank)."""

    name = "test-linear"

    def fit(self, task, splits, ctx) -> None:
        weight = torch.randn(1000, 784, generator=ctx.generator("w")) / 28
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(784, 1000, bias=False))
        with torch.no_grad():
            self.enc[1].weight.copy_(weight)

    def release(self, x, generator) -> Release:
        with torch.no_grad():
            return Release.all_released(self.enc(x))

    def predict(self, release):
        return torch.zeros(len(release), 10)

    def guarantee(self) -> Guarantee:
        return Guarantee("none")

    def encoder(self) -> nn.Module:
        return self.enc


def test_optimization_inverts_an_invertible_linear_encoder_to_1e_4(task, tmp_path) -> None:
    mech = LinearEncoder()
    mech.fit(task, task.splits(), _ctx(tmp_path))
    assert _attack_mse(OptimizationAttack(), mech, task, tmp_path) <= 1e-4


@pytest.mark.parametrize(
    "make_attack",
    [
        lambda: OptimizationAttack(max_steps=300),
        lambda: TVAttack(max_steps=300),
        lambda: MAPAttack(max_steps=300),
        lambda: InverterAttack(epochs=8),
    ],
    ids=["optimization", "tv", "map", "inverter"],
)
@pytest.mark.slow
def test_attack_error_rises_as_the_privacy_parameter_tightens(task, tmp_path, make_attack) -> None:
    errors = [
        _attack_mse(make_attack(), _calibrated(GaussInput(eps=eps, r=0.5), task), task, tmp_path)
        for eps in (8.0, 2.0, 0.5)  # from weak to strong privacy
    ]
    assert errors[0] < errors[1] < errors[2], errors


class GaussianTask(FashionMNIST):
    """Fashion-MNIST shapes with an exact Gaussian prior N(mu, tau^2 I) (MAP closed form)."""

    tau = 0.2

    def gaussian_prior(self) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.full((784,), 0.3), torch.full((784,), self.tau**2)


def test_map_equals_the_closed_form_posterior_mode(tmp_path) -> None:
    # Identity encoder, noise N(0, s^2), prior N(mu, tau^2): the MAP is the Wiener
    # filter (tau^2 o + s^2 mu) / (tau^2 + s^2). Getting it means lambda is right.
    task = GaussianTask(n_train=10, n_aux=10, n_test=16)
    mech = _calibrated(GaussInput(eps=4.0, r=0.3), task)
    s2, tau2 = mech.noise().scale ** 2, GaussianTask.tau**2
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(3))
    attack = MAPAttack()
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    expected = (tau2 * release.values + s2 * 0.3) / (tau2 + s2)
    assert torch.allclose(attack.reconstruct(release), expected, atol=1e-5)  # closed form
    descent = MAPAttack(solver="iterative")
    descent.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    assert torch.allclose(descent.reconstruct(release), expected, atol=2e-3)


def _loss(attack, x: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
    return attack.data_loss(x, observed) + attack.prior_loss(x)


@pytest.mark.slow
def test_closed_forms_equal_the_iterative_minimum_on_a_linear_encoder(task, tmp_path) -> None:
    # Identity encoder, Gaussian noise: least squares and the Gaussian-prior MAP have
    # closed forms; each must be the minimum the descent converges to.
    mech = _calibrated(GaussInput(eps=4.0, r=0.5), task)
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(7))
    fitted = {}
    for cls in (OptimizationAttack, MAPAttack):
        for solver in ("auto", "iterative"):
            attack = cls(solver=solver, max_steps=3000, rel_tol=0.0, decays=30)
            attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
            fitted[cls.name, solver] = (attack, attack.reconstruct(release))
    exact = fitted["optimization", "auto"][1]
    assert torch.equal(exact, release.values)  # the release is the least-squares solution
    assert torch.allclose(fitted["optimization", "iterative"][1], exact, atol=1e-5)
    attack, mode = fitted["map", "auto"]
    _, descended = fitted["map", "iterative"]
    # The descent stops where float32 no longer resolves the loss (the prior's flat
    # directions); the closed form is at least as low and equal to 1e-5 relative.
    at_mode, at_descent = (float(_loss(attack, z, release.values).sum()) for z in (mode, descended))
    assert at_mode <= at_descent * (1 + 1e-7)
    assert at_mode == pytest.approx(at_descent, rel=1e-5)
    # And the gradient of the loss vanishes at the mode (in float64: it is the minimum).
    attack.prior_scale_tril = attack.prior_scale_tril.double()
    attack.prior_mean = attack.prior_mean.double()
    z = mode.double().requires_grad_(True)
    _loss(attack, z, release.values.double()).sum().backward()
    start = attack.prior_mean.view(1, *mode.shape[1:]).expand_as(mode).double()
    start = start.clone().requires_grad_(True)
    _loss(attack, start, release.values.double()).sum().backward()
    assert float(z.grad.norm()) < 1e-4 * float(start.grad.norm())


def test_laplace_noise_has_no_closed_form_and_descends(task, tmp_path) -> None:
    from mechanisms.noise.input_noise import LDPImage

    mech = _calibrated(LDPImage(eps=1000.0), task)
    attack = MAPAttack()
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    assert attack.closed_form(torch.zeros(2, 1, 28, 28)) is None
    assert TVAttack().params["solver"] == "auto"
    with pytest.raises(ConfigError, match="solver"):
        MAPAttack(solver="newton")


def test_map_and_tv_beat_the_unbiased_attack_on_noisy_images(task, tmp_path) -> None:
    mech = _calibrated(GaussInput(eps=4.0, r=0.5), task)
    unbiased = _attack_mse(OptimizationAttack(), mech, task, tmp_path)
    assert _attack_mse(MAPAttack(), mech, task, tmp_path) < 0.5 * unbiased
    assert _attack_mse(TVAttack(), mech, task, tmp_path) < unbiased


def test_unknown_covariance_is_refused() -> None:
    with pytest.raises(ConfigError, match="covariance"):
        MAPAttack(covariance="banded")


class IdsTask:
    """A discrete-input task: pairs of ids (user, item) from a vocabulary of 300."""

    modality = "ids"
    data_range = (0.0, 299.0)

    def __init__(self) -> None:
        gen = torch.Generator().manual_seed(0)
        x = torch.randint(0, 300, (600, 2), generator=gen)
        y = torch.zeros(600, dtype=torch.long)
        self.aux, self.test = DataSplit(x[:400], y[:400]), DataSplit(x[400:], y[400:])


class EmbeddingMechanism(Mechanism):
    """Embeds each id (300 x 16 table), concatenates, and applies a random linear layer."""

    name = "test-embedding"
    modalities = frozenset({"ids"})

    def __init__(self, noise_std: float = 0.0) -> None:
        super().__init__()
        gen = torch.Generator().manual_seed(1)
        self.table = torch.randn(300, 16, generator=gen)
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(32, 48))
        with torch.no_grad():
            self.enc[1].weight.copy_(torch.randn(48, 32, generator=gen) / 6)
        self.noise_std = noise_std

    def fit(self, task, splits, ctx) -> None:
        pass

    def release(self, x, generator) -> Release:
        with torch.no_grad():
            clean = self.enc(self.table[x])
        return Release.all_released(
            clean + self.noise_std * torch.randn(clean.shape, generator=generator)
        )

    def predict(self, release):
        return torch.zeros(len(release), 2)

    def guarantee(self) -> Guarantee:
        return Guarantee("none")

    def encoder(self) -> nn.Module:
        return self.enc

    def noise(self) -> NoiseModel | None:
        return NoiseModel("gaussian", self.noise_std) if self.noise_std else None

    def embedding_table(self) -> torch.Tensor:
        return self.table


def _lookup_metrics(noise_std: float, tmp_path: Path):
    task, mech = IdsTask(), EmbeddingMechanism(noise_std)
    attack = LookupAttack()
    attack.fit(mech, task, task.aux, _ctx(tmp_path))
    release = mech.release(task.test.x, torch.Generator().manual_seed(2))
    metrics, _ = attack_metrics(task, attack, release, task.test.x, task.aux.x)
    return metrics


def test_lookup_recovers_ids_from_an_unprotected_embedding(tmp_path) -> None:
    metrics = _lookup_metrics(0.0, tmp_path)
    assert metrics["top1"].value >= 0.95
    assert metrics["top5"].value >= metrics["top1"].value


def test_lookup_recovery_falls_under_noise(tmp_path) -> None:
    assert _lookup_metrics(3.0, tmp_path)["top1"].value < 0.5


class HalfAbstaining(Identity):
    """Answers ⊥ for every second input (a stand-in for PTR's failed tests)."""

    name = "test-half-abstaining"
    may_abstain = True

    def release(self, x, generator) -> Release:
        released = torch.arange(len(x)) % 2 == 0
        return Release(x.clone(), released)


def test_abstentions_are_scored_over_released_and_over_all_samples(task, tmp_path) -> None:
    mech = _calibrated(HalfAbstaining(), task)
    attack = OptimizationAttack(max_steps=300)
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(0))
    metrics, _ = attack_metrics(task, attack, release, x, task.splits().aux.x)
    assert metrics["mse"].n == len(x) // 2 and metrics["mse"].value < 1e-6
    # Over all samples, ⊥ rows get the aux mean: their error is the prior-mean error.
    prior = task.splits().aux.x.mean(0)
    expected = float(((x[1::2] - prior) ** 2).flatten(1).mean(1).sum()) / len(x)
    assert metrics["mse_all"].n == len(x)
    assert metrics["mse_all"].value == pytest.approx(expected, rel=1e-3, abs=1e-7)
    # The no-information baseline is scored on the same (released) samples as the attack.
    blind = float(((x[0::2] - prior) ** 2).flatten(1).mean(1).mean())
    assert metrics["mse_prior"].n == len(x) // 2
    assert metrics["mse_prior"].value == pytest.approx(blind, rel=1e-3)
    assert metrics["ssim_prior"].value < metrics["ssim"].value


def test_repeated_queries_average_the_noise(task, tmp_path) -> None:
    mech = _calibrated(GaussInput(eps=2.0, r=0.5), task)
    x = task.splits().test.x
    single = mech.release(x, torch.Generator().manual_seed(0)).values - x
    averaged = RepeatedQueries(mech, 16).release(x, torch.Generator().manual_seed(0)).values - x
    ratio = float(averaged.std() / single.std())
    assert ratio == pytest.approx(1 / 4, rel=0.05)
    assert RepeatedQueries(mech, 16).noise().scale == pytest.approx(mech.noise().scale / 4)
    one = _attack_mse(MAPAttack(), mech, task, tmp_path)
    many = _attack_mse(MAPAttack(), RepeatedQueries(mech, 16), task, tmp_path)
    assert many < one


def test_queries_must_be_a_positive_integer() -> None:
    with pytest.raises(ConfigError, match="queries"):
        OptimizationAttack(queries=0)
    assert InverterAttack(queries=3).params["queries"] == 3
    assert math.isclose(OptimizationAttack().params["lr"], 0.1)
    assert MAPAttack().params["shrinkage"] == "oas"


class AlmostSilent(Identity):
    """Answers only the first 5 queries of a batch (PTR at a strict eps abstains so)."""

    name = "test-almost-silent"
    may_abstain = True

    def release(self, x, generator) -> Release:
        return Release(x.clone(), torch.arange(len(x)) < 5)


def test_inverter_with_too_few_released_pairs_answers_the_prior_guess(task, tmp_path) -> None:
    mech = _calibrated(AlmostSilent(), task)
    attack = InverterAttack()
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    assert attack.decoder is None  # nothing trained on 5 pairs
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(0))
    metrics, x_hat = attack_metrics(task, attack, release, x, task.splits().aux.x)
    assert torch.equal(x_hat[0], task.splits().aux.x.float().mean(0))
    # The row then shows exactly the no-information baseline it is read against.
    assert metrics["mse"].value == pytest.approx(metrics["mse_prior"].value)


def test_one_scoring_rule_every_row_carries_its_over_all_scores(task, tmp_path) -> None:
    """A mechanism that answers every query is scored by the same rule as one that refuses:
    its `<m>_all` is its `<m>`, so the tracks rank every mechanism on one metric name."""
    mech = _calibrated(Identity(), task)
    attack = OptimizationAttack(max_steps=20)
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(0))
    metrics, _ = attack_metrics(task, attack, release, x, task.splits().aux.x)
    for name in ("mse", "ssim", "psnr", "l1", "l2"):
        assert metrics[f"{name}_all"].value == pytest.approx(metrics[name].value, abs=1e-9)
        assert metrics[f"{name}_all"].n == metrics[name].n == len(x)


def test_a_refused_query_counts_as_the_servers_prior_label(task) -> None:
    """accuracy_all scores a ⊥ as the training split's majority class: a mechanism cannot
    look more useful by refusing the queries it would get wrong."""
    mech = _calibrated(HalfAbstaining(), task)
    x, y = task.splits().test.x, task.splits().test.y
    release = mech.release(x, torch.Generator().manual_seed(0))
    wrong = Identity()
    wrong.predict = lambda r: torch.nn.functional.one_hot((y + 1) % 10, 10).float()  # type: ignore[method-assign]
    metrics = utility_metrics(task, wrong, release, y, "test", prior_label=3)
    assert metrics["accuracy"].value == 0.0  # every answered query is wrong
    refused = ~release.released
    expected = float((y[refused] == 3).sum()) / len(y)
    assert metrics["accuracy_all"].value == pytest.approx(expected)
    assert metrics["accuracy_all"].n == len(y)
