"""Performance of the privacy audit's hot paths (pytest-benchmark; `make perf` compares them
with the saved baseline): scoring many releases of one input, the threshold search with a
Clopper-Pearson bound per candidate, and a small whole audit."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.certify.audit.bounds import eps_lower_bound
from bench.certify.audit.core import audit_mechanism, release_scores
from bench.certify.audit.thresholds import best_threshold
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput

TASK = FashionMNIST(n_train=10, n_aux=10, n_test=10)
TASK.splits()


def _gauss_input() -> GaussInput:
    mech = GaussInput(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(TASK)
    return mech


@pytest.mark.benchmark(group="audit")
def test_release_scores_10k(benchmark) -> None:
    """10,000 releases of one Fashion-MNIST image, each projected to one score as drawn."""
    mech, x = _gauss_input(), TASK.splits().test.x[0]
    v = torch.ones(x.numel())
    scores = benchmark(lambda: release_scores(mech, x, 10_000, 0, {"p": lambda y: y @ v}))
    assert scores["p"].shape == (10_000,) and np.isfinite(scores["p"]).all()


@pytest.mark.benchmark(group="audit")
def test_threshold_search_2x10k(benchmark) -> None:
    """The best of 20,000 candidate thresholds, a Clopper-Pearson bound for each."""
    rng = np.random.default_rng(0)
    s0, s1 = rng.normal(size=10_000), rng.normal(1.0, size=10_000)
    threshold, bound = benchmark(best_threshold, s0, s1, 1e-5, 0.05)
    assert 0 < bound < 5 and np.isfinite(threshold)


@pytest.mark.benchmark(group="audit")
def test_small_audit(benchmark) -> None:
    """A whole audit of gauss-input at a small fixed size (3 pairs, 2 x 5,000)."""
    mech = _gauss_input()
    result = benchmark.pedantic(
        audit_mechanism,
        args=(mech, TASK, 0),
        kwargs={"n_select": 1000, "n_draws": 5000},
        rounds=3,
        iterations=1,
    )
    assert result.passed


def _every_candidate(s0: np.ndarray, s1: np.ndarray, n_eval: int) -> float:
    """The search before this stop: a Clopper-Pearson bound for every observed score."""
    s0, s1 = np.sort(s0), np.sort(s1)
    candidates = np.unique(np.concatenate([s0, s1]))
    fp = (len(s0) - np.searchsorted(s0, candidates, side="right") + 0.5) / (len(s0) + 1)
    fn = (np.searchsorted(s1, candidates, side="right") + 0.5) / (len(s1) + 1)
    return float(eps_lower_bound(fp * n_eval, n_eval, fn * n_eval, n_eval, 1e-5).max())


SEARCH_SCORES = np.random.default_rng(0).normal(size=(2, 300_000)) + np.array([[0.0], [0.6]])


@pytest.mark.benchmark(group="audit-threshold-search")
@pytest.mark.parametrize("path", ["every-candidate", "tails-and-geometric"])
def test_threshold_search_300k_side_by_side(benchmark, path: str) -> None:
    """Choosing the threshold on 2 x 300,000 selection scores for a 5M-draw evaluation: a
    bound per observed score (old) against the tails plus geometric order statistics."""
    s0, s1 = SEARCH_SCORES
    if path == "every-candidate":
        bound = benchmark.pedantic(_every_candidate, args=(s0, s1, 5_000_000), rounds=1)
    else:
        _, bound = benchmark(best_threshold, s0, s1, 1e-5, 0.05, 5_000_000)
    assert 1.0 < bound < 3.0
