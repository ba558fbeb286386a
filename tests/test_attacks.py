"""Attacks are strong where they must be: they recover unprotected inputs, invert a known
encoder, and a learned inverter beats the attacker's best data-independent guess."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from attacks.inverter import InverterAttack
from attacks.optimization import OptimizationAttack
from bench.cache import ArtifactCache
from bench.errors import ConfigError
from bench.protocols import FitContext, Guarantee, Mechanism, NoiseModel, Release
from bench.tasks.images import FashionMNIST
from mechanisms.identity import Identity
from mechanisms.input_noise import GaussInput


@pytest.fixture(scope="module")
def task() -> FashionMNIST:
    t = FashionMNIST(n_train=200, n_aux=1000, n_test=64, train_epochs=1)
    t.splits()
    return t


def _ctx(tmp_path: Path) -> FitContext:
    return FitContext(seed=0, cache=ArtifactCache(tmp_path))


class LinearProjection(Mechanism):
    """A random linear encoder R^784 -> R^1000 with no noise (invertible: full column rank)."""

    name = "test-linear"

    def fit(self, task, splits, ctx) -> None:
        self.enc = nn.Sequential(nn.Flatten(), nn.Linear(784, 1000, bias=False))
        with torch.no_grad():
            self.enc[1].weight.copy_(torch.randn(1000, 784, generator=ctx.generator("w")) / 28)

    def release(self, x, generator) -> Release:
        with torch.no_grad():
            return Release.all_released(self.enc(x))

    def predict(self, release):
        return torch.zeros(len(release), 10)

    def guarantee(self) -> Guarantee:
        return Guarantee("none")

    def encoder(self) -> nn.Module:
        return self.enc


def _mse(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).pow(2).mean())


def _released(mech: Mechanism, x: torch.Tensor) -> Release:
    return mech.release(x, torch.Generator().manual_seed(0))


def test_optimization_recovers_an_unprotected_input(task, tmp_path) -> None:
    mech = Identity()
    mech._noise = None
    x = task.splits().test.x
    attack = OptimizationAttack(max_steps=300)
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    assert _mse(attack.reconstruct(_released(mech, x)), x) < 1e-6


def test_optimization_inverts_a_linear_encoder(task, tmp_path) -> None:
    mech = LinearProjection()
    mech.fit(task, task.splits(), _ctx(tmp_path))
    x = task.splits().test.x
    attack = OptimizationAttack(max_steps=500)
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    assert _mse(attack.reconstruct(_released(mech, x)), x) < 1e-3


def test_optimization_refuses_a_mechanism_without_encoder(task, tmp_path) -> None:
    class LabelOnly(LinearProjection):
        name = "test-label-only"

        def encoder(self):
            return None

    with pytest.raises(ConfigError, match="differentiable encoder"):
        OptimizationAttack().fit(LabelOnly(), task, task.splits().aux, _ctx(tmp_path))


def test_inverter_beats_the_best_data_independent_guess(task, tmp_path) -> None:
    mech = GaussInput(eps=2.0, r=0.25)
    mech._noise = mech.calibrate(task)
    assert isinstance(mech.noise(), NoiseModel)
    splits = task.splits()
    attack = InverterAttack()
    attack.fit(mech, task, splits.aux, _ctx(tmp_path))
    x = splits.test.x
    inverter_mse = _mse(attack.reconstruct(_released(mech, x)), x)
    prior_mse = _mse(splits.aux.x.mean(0, keepdim=True).expand_as(x), x)
    raw_mse = mech.noise().scale ** 2  # returning the noisy release itself
    assert inverter_mse < 0.8 * prior_mse
    assert inverter_mse < raw_mse


def test_inverter_nearly_recovers_an_unprotected_input(task, tmp_path) -> None:
    mech = Identity()
    mech._noise = None
    attack = InverterAttack()
    attack.fit(mech, task, task.splits().aux, _ctx(tmp_path))
    x = task.splits().test.x
    assert _mse(attack.reconstruct(_released(mech, x)), x) < 0.01
