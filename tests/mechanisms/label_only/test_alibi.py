"""The alibi baseline: Laplace noise at 2 / eps per label coordinate, the Bayesian
posterior it trains on, its accuracy at the two ends of eps on a real table, its
guarantee, parameter errors and determinism."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS, TASKS
from mechanisms.label_only.alibi import (
    label_posterior,
    laplace_scale,
    noisy_frequencies,
    noisy_labels,
    train_soft,
)

pytestmark = pytest.mark.usefixtures("one_thread")

SPAM = {"subsample": 200, "n_test": 1000, "train_epochs": 300}


def _fit(tmp: Path, seed: int = 0, task_options: dict | None = None, **params):
    task = TASKS.get("spam")(**(task_options or SPAM))
    mech = MECHANISMS.get("alibi")(**params)
    mech.fit(task, task.splits(), FitContext(seed, ArtifactCache(tmp)))
    return task, mech


def _accuracy(task, mech) -> float:
    test = task.splits().test
    labels = mech.release(test.x, torch.Generator().manual_seed(0)).values.argmax(1)
    return float((labels == test.y).float().mean())


def test_laplace_noise_has_scale_two_over_eps() -> None:
    y = torch.randint(0, 3, (40_000,), generator=torch.Generator().manual_seed(1))
    for eps in (0.5, 4.0):
        noise = noisy_labels(y, 3, eps, torch.Generator().manual_seed(2)) - F.one_hot(y, 3)
        want = math.sqrt(2) * 2 / eps  # Laplace(b) has std sqrt(2) b
        assert laplace_scale(eps) == pytest.approx(2 / eps)
        assert float(noise.std()) == pytest.approx(want, rel=0.02)
        assert abs(float(noise.mean())) < 5 * want / math.sqrt(noise.numel())
        # Laplace, not Gaussian: E|X| = b, whereas a Gaussian of that std has 0.80 b.
        assert float(noise.abs().mean()) == pytest.approx(2 / eps, rel=0.02)


def test_posterior_matches_a_direct_computation() -> None:
    noisy = torch.tensor([[0.3, 1.7, -0.4], [2.5, -1.0, 0.2]], dtype=torch.float64)
    prior = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    eps = 1.3
    got = label_posterior(noisy, eps, prior)
    for i, row in enumerate(noisy.tolist()):
        weights = []
        for k in range(3):
            l1 = sum(abs(v - (1.0 if j == k else 0.0)) for j, v in enumerate(row))
            weights.append(prior[k].item() * math.exp(-eps / 2 * l1))
        want = [w / sum(weights) for w in weights]
        assert got[i].tolist() == pytest.approx(want, abs=1e-12)
    per_record = label_posterior(noisy, eps, prior.expand(2, 3))
    assert torch.allclose(per_record, got)


def test_posterior_is_uniform_at_tiny_eps_and_one_hot_at_large_eps() -> None:
    y = torch.randint(0, 2, (2000,), generator=torch.Generator().manual_seed(3))
    uniform = torch.full((2,), 0.5)
    tiny = label_posterior(
        noisy_labels(y, 2, 1e-6, torch.Generator().manual_seed(4)), 1e-6, uniform
    )
    # At tiny eps the noise is huge but the likelihood ratio is at most e^eps.
    assert torch.allclose(tiny, torch.full_like(tiny, 0.5), atol=1e-5)
    big = label_posterior(noisy_labels(y, 2, 50.0, torch.Generator().manual_seed(4)), 50.0, uniform)
    assert float(big[torch.arange(len(y)), y].min()) > 0.99


def test_frequency_prior_is_estimated_from_the_noisy_vectors() -> None:
    y = (torch.rand(20_000, generator=torch.Generator().manual_seed(5)) < 0.2).long()
    noisy = noisy_labels(y, 2, 1.0, torch.Generator().manual_seed(6))
    freq = noisy_frequencies(noisy, 1.0)
    assert float(freq.sum()) == pytest.approx(1.0)
    assert float(freq[1]) == pytest.approx(0.2, abs=0.03)


def test_soft_training_on_one_hot_targets_is_plain_cross_entropy() -> None:
    task = TASKS.get("spam")(subsample=64, arch="2x6")
    train = task.splits().train
    torch.manual_seed(0)
    model = task.model()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    weights = train_soft(model, train.x, F.one_hot(train.y, 2).double(), epochs=5, seed=0)
    model.load_state_dict(start)
    optimiser = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):  # 64 records < batch 1024: one full batch per epoch, order irrelevant
        optimiser.zero_grad()
        F.cross_entropy(model(train.x), train.y).backward()
        optimiser.step()
    for k, v in model.state_dict().items():
        assert torch.allclose(weights[k], v, atol=1e-6)


def test_accuracy_unprotected_at_large_eps_and_chance_at_tiny_eps(tmp_path: Path) -> None:
    task, clear = _fit(tmp_path, eps=1e4)  # noise scale 2e-4: the true labels, in effect
    assert _accuracy(task, clear) > 0.78  # spam, 200 records: unprotected reaches ~0.84
    _, noisy = _fit(tmp_path, eps=1e-3)
    targets = noisy.soft_targets
    assert float((targets - 0.5).abs().max()) < 1e-3  # nothing left of the labels
    test_y = task.splits().test.y
    majority = max(float(test_y.float().mean()), 1 - float(test_y.float().mean()))
    assert _accuracy(task, noisy) <= majority + 0.02
    assert _accuracy(task, noisy) < _accuracy(task, clear) - 0.15


def test_refinement_and_frequency_prior_run_and_stay_useful(tmp_path: Path) -> None:
    task, plain = _fit(tmp_path, eps=1.0)
    _, refined = _fit(tmp_path, eps=1.0, refine=2)
    # Refinement sharpens the targets towards the model's beliefs: further from uniform.
    assert (refined.soft_targets - 0.5).abs().mean() > (plain.soft_targets - 0.5).abs().mean()
    assert _accuracy(task, refined) > 0.75
    # The class-frequency prior shrinks targets towards the majority class: harmless when
    # the labels are clear (eps 10); at eps 1 on 200 records it tends to the majority label.
    _, frequency = _fit(tmp_path, eps=10.0, prior="frequency")
    assert _accuracy(task, frequency) > 0.8


def test_guarantee_is_label_dp_replace_one() -> None:
    g = MECHANISMS.get("alibi")(eps=2.0).guarantee()
    assert (g.notion, g.params, g.distance) == (
        "dp",
        {"eps": 2.0, "delta": 0.0},
        "training-labels/replace-one",
    )


@pytest.mark.parametrize("eps", [0, 0.0, -1.0, float("nan"), float("inf"), "1"])
def test_bad_eps_is_refused(eps) -> None:
    # Wrong types, NaN, inf and signs fail the typed declaration; 0 the mechanism's check.
    with pytest.raises(ConfigError, match=r"alibi: (eps must be a positive|parameter 'eps')"):
        MECHANISMS.get("alibi")(eps=eps)


def test_bad_prior_and_refine_are_refused() -> None:
    with pytest.raises(ConfigError, match="'prior' must be one of uniform, frequency"):
        MECHANISMS.get("alibi")(prior="data")
    typed = r"parameter 'refine' must be (an integer|in|a number)"
    for refine in (-1, 1.5, True):
        with pytest.raises(ConfigError, match=typed):
            MECHANISMS.get("alibi")(refine=refine)


def test_fit_is_deterministic_under_a_seed(tmp_path: Path) -> None:
    small = {"subsample": 64, "arch": "2x6", "train_epochs": 20, "n_test": 200}
    task, a = _fit(tmp_path / "a", task_options=small, eps=1.0)
    _, b = _fit(tmp_path / "b", task_options=small, eps=1.0)
    _, c = _fit(tmp_path / "c", seed=1, task_options=small, eps=1.0)
    assert torch.equal(a.soft_targets, b.soft_targets)
    for (name, wa), wb in zip(
        a.model.state_dict().items(), b.model.state_dict().values(), strict=True
    ):
        assert torch.equal(wa, wb), name
    assert not torch.equal(a.soft_targets, c.soft_targets)
    x = task.splits().test.x
    labels = a.release(x, torch.Generator().manual_seed(0)).values
    assert labels.sum(1).eq(1).all()  # one-hot labels, no query-time noise
    assert torch.equal(labels, a.release(x, torch.Generator().manual_seed(9)).values)
