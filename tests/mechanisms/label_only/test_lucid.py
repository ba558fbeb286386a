"""LUCID: the exponential mechanism's calibration, remembered answers, the iDP decision
bound's soundness against brute force on small networks, and the probe that catches a
bound set too small."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from bench.certify.idp.bound import DecisionBound, decision_bound
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS, TASKS
from mechanisms.label_only.base import confidence, exponential_mechanism, keep_probability
from mechanisms.label_only.leave_one_out import stacked_logits
from tests import lucid_toy
from tests.lucid_toy import ToyNetworks


@pytest.mark.parametrize(("eps", "k"), [(0.0, 2), (1.0, 2), (2.0, 5)])
def test_exponential_mechanism_keeps_the_label_with_the_calibrated_probability(
    eps: float, k: int
) -> None:
    expected = math.exp(eps / 2) / (math.exp(eps / 2) + k - 1)
    assert keep_probability(eps, k) == pytest.approx(expected)
    n = 40_000
    predicted = torch.zeros(n, dtype=torch.long)
    drawn = exponential_mechanism(predicted, k, eps, torch.Generator().manual_seed(0))
    kept = (drawn == 0).double().mean().item()
    assert abs(kept - expected) < 4 * math.sqrt(expected * (1 - expected) / n)
    others = torch.bincount(drawn[drawn != 0], minlength=k)[1:].double()
    assert others.min() / others.max() > 0.9  # the other labels are equally likely


@pytest.fixture(scope="module")
def toy_networks() -> ToyNetworks:
    return lucid_toy.toy_networks()


@pytest.mark.parametrize("target", [0, 1])
def test_every_variant_bounds_the_brute_force_maximum_and_techniques_tighten(
    toy_networks, target: int
) -> None:
    arch, stacked, layers = toy_networks
    truth = lucid_toy.grid_max(arch, stacked, target)
    assert math.isfinite(truth)  # the toy is built so that leave-one-out networks disagree
    db = {
        v: decision_bound(layers[0], layers[1:], target, variant=v, time_limit=20).bound
        for v in ("naive", "H", "HM", "HMRiS", "HMB", "full")
    }
    for variant, bound in db.items():
        assert bound >= truth - 1e-6, (variant, bound, truth)
    # naive solves each network exactly: the grid comes within its resolution.
    assert db["naive"] - truth < 0.05
    # Matching dependencies are valid inequalities, branch and bound refines the hyper set.
    assert db["HM"] <= db["H"] + 1e-6
    assert db["HMB"] <= db["HM"] + 1e-6
    assert db["naive"] <= db["HMB"] + 1e-6
    assert db["full"] <= db["HMRiS"] + 1e-6


@pytest.mark.parametrize("target", [0, 1])
def test_work_budgets_are_sound_and_machine_independent(toy_networks, target: int) -> None:
    """node_limit / max_milps stop branch and bound by work, not time: the same bound on
    every run (no wall-clock in the result), never below the brute-force maximum, and no
    tighter than the unbudgeted search."""
    arch, stacked, layers = toy_networks
    truth = lucid_toy.grid_max(arch, stacked, target)

    def run(**budgets: int) -> DecisionBound:
        return decision_bound(layers[0], layers[1:], target, variant="HMB", **budgets)

    first, second = run(node_limit=1, max_milps=2), run(node_limit=1, max_milps=2)
    assert first.bound == second.bound and first.milps == second.milps
    assert not first.complete and first.milps <= 2 + 4  # no split starts past 2 (k <= 4)
    assert first.bound >= truth - 1e-6
    assert first.bound >= run().bound - 1e-6


def test_dense_layers_reproduce_the_network(toy_networks) -> None:
    arch, stacked, layers = toy_networks
    x = torch.rand(50, 2, generator=torch.Generator().manual_seed(1))
    out = x.double()
    for k, (w, b) in enumerate(layers[3]):
        out = out @ torch.from_numpy(w).T + torch.from_numpy(b)
        out = out.clamp_min(0) if k < len(layers[3]) - 1 else out
    expected = stacked_logits(arch, stacked, x)[3].double()
    torch.testing.assert_close(out, expected, rtol=1e-6, atol=1e-6)


@pytest.fixture(scope="module")
def fitted_lucid(tmp_path_factory: pytest.TempPathFactory):
    task = TASKS.get("credit")(subsample=40, arch="2x6", train_epochs=300, n_test=300)
    ctx = FitContext(0, ArtifactCache(Path(tmp_path_factory.mktemp("cache"))))
    # The default suite's work budgets and no clock: bounds that depend on the networks
    # alone (15 s here, against 31 s for the 20 s / 60 s clocks), still tight enough that
    # some test inputs (10 of 300) are answered without noise.
    lucid = MECHANISMS.get("lucid")(
        eps=0.0, variant="HMB", node_limit=1000, max_milps=16, time_limit=0.0, budget=0.0
    )
    lucid.fit(task, task.splits(), ctx)
    naive = MECHANISMS.get("naive-idp")(eps=0.0)
    naive.fit(task, task.splits(), ctx)
    return task, lucid, naive


@pytest.mark.slow
def test_lucid_bound_is_valid_on_probes_and_a_planted_small_bound_is_caught(fitted_lucid) -> None:
    task, lucid, _ = fitted_lucid
    assert lucid.claim_metrics(task, task.splits())["bound_validity"].value == 1.0
    sound = lucid.bounds
    lucid.bounds = torch.full_like(sound, -math.inf)  # never noise: leaks get through
    try:
        planted = lucid.claim_metrics(task, task.splits())["bound_validity"].value
    finally:
        lucid.bounds = sound
    assert planted < 1.0


def test_noise_only_below_the_bound_and_answers_are_remembered(fitted_lucid) -> None:
    task, lucid, naive = fitted_lucid
    x = task.splits().test.x
    g = torch.Generator().manual_seed(0)
    first = lucid.release(x, g)
    again = lucid.release(x, torch.Generator().manual_seed(99))
    assert torch.equal(first.values, again.values)  # repeated queries: same labels
    with torch.no_grad():
        logits = lucid.model(x)
    confident = confidence(logits).double() > lucid.bounds[logits.argmax(1)]
    assert confident.any() and not confident.all()  # both branches are exercised
    assert torch.equal(first.meta["noised"], ~confident)
    assert torch.equal(first.values[confident].argmax(1), logits.argmax(1)[confident])
    # naive-idp noises exactly where networks disagree, a subset of where lucid noises.
    noised_naive = naive.release(x, g).meta["noised"]
    assert not (noised_naive & confident).any()


def test_zero_seconds_means_no_clock_and_a_negative_one_is_refused() -> None:
    """0 s turns a wall-clock limit off (the suites' setting: bounds from work budgets
    alone); a negative or non-numeric limit is a one-line ConfigError."""
    from bench.core.errors import ConfigError

    MECHANISMS.get("lucid")(time_limit=0.0, budget=0.0, node_limit=1, max_milps=8)
    for bad in ({"time_limit": -1.0}, {"budget": -0.5}, {"budget": "600"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            MECHANISMS.get("lucid")(**bad)
