"""Performance of the privacy audit's hot paths (pytest-benchmark; `make perf` compares them
with the saved baseline): scoring many releases of one input, the threshold search with a
Clopper-Pearson bound per candidate, a small whole audit, and the planned audit of
gauss-input on Fashion-MNIST at the size and power its planner asks for (releases/s and
seconds in the benchmark's extra info)."""

from __future__ import annotations

import os
import resource
import time

import numpy as np
import pytest
import torch

from bench.certify.audit.bounds import eps_lower_bound
from bench.certify.audit.core import audit_mechanism, release_scores
from bench.certify.audit.power import planned_draws
from bench.certify.audit.thresholds import best_threshold
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput

TASK = FashionMNIST(n_train=10, n_aux=10, n_test=10)
TASK.splits()
PLANNED_SECONDS = 20.0  # the planned gauss-input audit on 2 cores the audit has to itself
CORES = 2


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


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.slow
@pytest.mark.benchmark(group="audit-planned")
def test_planned_gauss_input_fmnist_audit(benchmark) -> None:
    """gauss-input (eps 2, delta 1e-5, r 0.5) on Fashion-MNIST at the size its planner asks
    for (95% power against 1.25x the claim), on two worker threads: under PLANNED_SECONDS
    when the audit had the two cores to itself (its process used >= 90% of them; on a
    shared host the time is recorded, not judged)."""
    mech = _gauss_input()
    plan = planned_draws("gaussian", 2.0, 1e-5)
    assert plan.n_draws == 5_000_000 and plan.power >= 0.95
    timing: dict[str, float] = {}

    def audit():
        cpu, wall = _cpu_seconds(), time.perf_counter()
        result = audit_mechanism(mech, TASK, 0, workers=CORES)
        timing["wall"], timing["cpu"] = time.perf_counter() - wall, _cpu_seconds() - cpu
        return result

    result = benchmark.pedantic(audit, rounds=1, iterations=1)
    assert result.n_draws == plan.n_draws and result.power == plan.power
    assert result.passed and result.eps_lb > 1.6  # at the claim's worst case: near 1.75
    benchmark.extra_info.update(
        releases=result.releases,
        seconds=round(timing["wall"], 2),
        releases_per_s=round(result.releases / timing["wall"]),
        cpu_share=round(timing["cpu"] / (CORES * timing["wall"]), 3),
    )
    had_the_cores = (os.cpu_count() or 1) >= CORES and timing["cpu"] >= 0.9 * CORES * timing["wall"]
    if had_the_cores:
        assert timing["wall"] < PLANNED_SECONDS, benchmark.extra_info


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
