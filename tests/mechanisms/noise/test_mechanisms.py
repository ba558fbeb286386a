"""The input-space mechanisms: calibrated noise (formula and empirical), seeded randomness,
declared guarantees, and refusal of bad parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from bench.core.errors import ConfigError
from bench.plugin.protocols import NoiseModel
from bench.tasks.images import FashionMNIST
from mechanisms.noise.identity import Identity
from mechanisms.noise.input_noise import GaussInput, LDPImage

TASK = FashionMNIST(n_train=10, n_aux=10, n_test=10)
TASK.splits()


def _noise_of(mech, n: int = 64, seed: int = 0) -> torch.Tensor:
    x = torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(1))
    return mech.release(x, torch.Generator().manual_seed(seed)).values - x


def _calibrated(cls, **params):
    mech = cls(**params)
    mech._noise = mech.calibrate(TASK)  # calibration only: no utility model needed
    return mech


def test_gauss_input_sigma_follows_the_classic_formula_below_eps_one() -> None:
    mech = _calibrated(GaussInput, eps=0.5, delta=1e-5, r=0.2)
    assert mech.noise().scale == pytest.approx(math.sqrt(2 * math.log(1.25e5)) * 0.2 / 0.5)
    assert mech.calibration_rule == "classic"


def test_gauss_input_noise_is_gaussian_with_the_calibrated_std() -> None:
    mech = _calibrated(GaussInput, eps=2.0, delta=1e-5, r=0.5)
    sigma = mech.noise().scale
    noise = _noise_of(mech).flatten().double().numpy()
    # 50,176 draws: the sample std is within 1.5% of sigma with overwhelming probability.
    assert noise.std() == pytest.approx(sigma, rel=0.015)
    assert abs(noise.mean()) < 4 * sigma / math.sqrt(noise.size)
    assert stats.kstest(noise / sigma, "norm").pvalue > 1e-3


def test_ldp_image_uses_whole_image_l1_sensitivity() -> None:
    mech = _calibrated(LDPImage, eps=10.0)
    assert mech.l1_sensitivity == 784.0
    assert mech.noise().kind == "laplace"
    assert mech.noise().scale == pytest.approx(78.4)


def test_ldp_image_noise_is_laplace_with_the_calibrated_scale() -> None:
    mech = _calibrated(LDPImage, eps=100.0)
    b = mech.noise().scale
    noise = _noise_of(mech).flatten().double().numpy()
    assert np.abs(noise).mean() == pytest.approx(b, rel=0.015)  # E|Lap(b)| = b
    assert stats.kstest(noise, "laplace", args=(0, b)).pvalue > 1e-3


def test_release_randomness_comes_only_from_the_generator() -> None:
    mech = _calibrated(GaussInput, eps=1.0)
    torch.manual_seed(123)
    a = _noise_of(mech, seed=5)
    torch.manual_seed(456)  # the global RNG must not matter
    b = _noise_of(mech, seed=5)
    c = _noise_of(mech, seed=6)
    assert torch.equal(a, b)
    assert not torch.allclose(a, c)


def test_identity_releases_the_input_exactly() -> None:
    mech = Identity()
    mech._noise = None
    assert torch.count_nonzero(_noise_of(mech)) == 0
    assert mech.guarantee().notion == "none"


def test_guarantees_declare_their_parameters() -> None:
    g = GaussInput(eps=1.0, delta=1e-6, r=0.3).guarantee()
    assert (g.notion, g.params, g.distance) == (
        "ip",
        {"eps": 1.0, "delta": 1e-6, "radius": 0.3},
        "l2/input",
    )
    assert LDPImage(eps=3.0).guarantee().to_dict()["eps"] == 3.0


@pytest.mark.parametrize("params", [{"eps": 0.0}, {"eps": -1.0}, {"delta": 2.0}, {"r": 0.0}])
def test_bad_parameters_refused(params: dict) -> None:
    with pytest.raises(ConfigError):
        GaussInput(**params)


def test_unknown_parameter_refused() -> None:
    with pytest.raises(ConfigError, match="no parameter 'sigma'"):
        GaussInput(sigma=1.0)


def test_noise_model_laplace_std() -> None:
    assert NoiseModel("laplace", 2.0).std == pytest.approx(2 * math.sqrt(2))
    with pytest.raises(ValueError):
        NoiseModel("gaussian", 0.0)
