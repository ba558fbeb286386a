"""The dp-sgd baseline: its noise multiplier is what the RDP accountant certifies for the
target eps, tighter privacy means more noise, and eps = 0 is refused."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS, TASKS


def _fit(eps: float, cache: Path):
    task = TASKS.get("credit")(subsample=64, arch="2x6", train_epochs=5, n_test=200)
    mech = MECHANISMS.get("dp-sgd")(eps=eps)
    mech.fit(task, task.splits(), FitContext(0, ArtifactCache(cache)))
    return task, mech


def test_noise_multiplier_is_the_accountants_for_the_target(tmp_path: Path) -> None:
    from opacus.accountants import RDPAccountant

    _, loose = _fit(4.0, tmp_path)
    task, tight = _fit(0.5, tmp_path)
    assert tight.noise_multiplier > loose.noise_multiplier > 0
    # Full-batch sampling (64 records < batch 1024): 5 steps at sample rate 1.
    for eps, mech in ((4.0, loose), (0.5, tight)):
        accountant = RDPAccountant()
        accountant.history = [(mech.noise_multiplier, 1.0, 5)]
        spent = accountant.get_epsilon(delta=1e-5)
        assert spent <= eps * 1.01  # certified at the target (binary-search tolerance)
        assert spent >= eps * 0.8  # and not wastefully over-noised
    labels = tight.release(task.splits().test.x, torch.Generator().manual_seed(0)).values
    assert labels.sum(1).eq(1).all()  # one label per query, no query-time noise


def test_dp_sgd_refuses_eps_zero() -> None:
    with pytest.raises(ConfigError, match="eps must be a positive number"):
        MECHANISMS.get("dp-sgd")(eps=0.0)


def test_an_unreachable_eps_is_a_one_line_error(tmp_path: Path) -> None:
    task = TASKS.get("credit")(subsample=64, arch="2x6", train_epochs=300, n_test=50)
    mech = MECHANISMS.get("dp-sgd")(eps=0.01)
    with pytest.raises(ConfigError, match="out of reach for 300 epochs"):
        mech.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path)))
