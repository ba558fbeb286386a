"""LUCID's per-network differential bounds (variant `diff`): each level is an upper bound on
the exact per-network decision bound, levels only tighten, the ReLU-difference rows hold on
real ReLU pairs, and the result bounds brute force (box and record domains) and the paper's
full variant from above and below respectively."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.certify.idp import bound as idp_bound
from bench.certify.idp.bound import decision_bound
from bench.certify.idp.diff import (
    _lp_bound,
    _milp_bound,
    difference_rows,
    differential_bound,
    interval_bound,
    margin_layers,
    pair_model,
)
from bench.certify.milp import MILP, LinearRelaxation
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS, TASKS
from tests import lucid_toy
from tests.lucid_toy import ToyNetworks


@pytest.fixture(scope="module")
def toy_networks() -> ToyNetworks:
    return lucid_toy.toy_networks()


@pytest.mark.parametrize("target", [0, 1])
def test_levels_bound_each_network_from_above_and_only_tighten(toy_networks, target: int) -> None:
    arch, stacked, layers = toy_networks
    net = margin_layers(layers[0], target)
    checked = 0
    for i, member in enumerate(layers[1:]):
        truth = lucid_toy.grid_max(arch, stacked, target, member=i)
        margin_member = margin_layers(member, target)
        level0 = interval_bound(net, margin_member)
        model = pair_model(net, margin_member)
        level1 = _lp_bound(model)
        level2 = _milp_bound(model, time_limit=30.0, node_limit=None)
        assert level0 >= truth - 1e-6 and level1 >= truth - 1e-6 and level2 >= truth - 1e-6
        if math.isfinite(truth):
            checked += 1
            assert level2 <= level1 + 1e-6  # the MILP's dual bound is below its LP relaxation
            assert level2 - truth < 0.05  # solved exactly: the grid comes within its resolution
    assert checked >= 3  # the toy has networks that really disagree with N


@pytest.mark.parametrize("target", [0, 1])
def test_diff_bounds_brute_force_and_is_as_tight_as_the_exact_naive_variant(
    toy_networks, target: int
) -> None:
    arch, stacked, layers = toy_networks
    truth = lucid_toy.grid_max(arch, stacked, target)
    diff = differential_bound(layers[0], layers[1:], target)
    naive = decision_bound(layers[0], layers[1:], target, variant="naive").bound
    full = decision_bound(layers[0], layers[1:], target, variant="full").bound
    assert diff.complete and diff.bound >= truth - 1e-6
    assert abs(diff.bound - naive) < 1e-4  # both end in exact per-network MILPs
    assert diff.bound <= full + 1e-6
    # Best first: far fewer MILPs than the naive variant's one per network.
    assert diff.milps < len(layers) - 1


def test_work_budget_gives_a_sound_repeatable_anytime_bound(toy_networks) -> None:
    arch, stacked, layers = toy_networks
    truth = lucid_toy.grid_max(arch, stacked, 0)
    first = differential_bound(layers[0], layers[1:], 0, max_milps=1, node_limit=1)
    second = differential_bound(layers[0], layers[1:], 0, max_milps=1, node_limit=1)
    assert first.bound == second.bound and first.milps == second.milps == 1
    assert first.bound >= truth - 1e-6
    assert first.bound >= differential_bound(layers[0], layers[1:], 0).bound - 1e-6


def test_relu_difference_rows_hold_on_every_relu_pair() -> None:
    """For z and d = h - z in their intervals, (z, h, relu(z), relu(h)) satisfies the rows."""
    rng = np.random.default_rng(0)
    for d_lo, d_hi in ((-0.3, 0.5), (0.1, 0.4), (-0.6, -0.2), (0.0, 0.0)):
        m = MILP(sense="max")
        z, h, a_n, a_h = (m.add_vars(-5.0, 5.0, 1) for _ in range(4))
        difference_rows(m, z, h, a_n, a_h, np.array([d_lo]), np.array([d_hi]))
        a = m.matrix().toarray()
        lo, hi = np.asarray(m.row_lo), np.asarray(m.row_hi)
        for _ in range(500):
            zv = rng.uniform(-2, 2)
            hv = zv + rng.uniform(d_lo, d_hi)
            point = np.array([zv, hv, max(zv, 0.0), max(hv, 0.0)])
            values = a @ point
            assert np.all(values >= lo - 1e-12) and np.all(values <= hi + 1e-12)
    # ...and they cut: with d in [-0.3, 0.5], e = a_h - a_n can no longer reach 0.5 at d = 0.
    m = MILP(sense="max")
    z, h, a_n, a_h = (m.add_vars(-5.0, 5.0, 1) for _ in range(4))
    difference_rows(m, z, h, a_n, a_h, np.array([-0.3]), np.array([0.5]))
    m.add_row([int(h[0]), int(z[0])], [1.0, -1.0], 0.0, 0.0)
    top = LinearRelaxation(m).optimum([int(a_h[0]), int(a_n[0])], [1.0, -1.0], "max")
    assert top == pytest.approx(0.5 * 0.3 / 0.8, abs=1e-5)


def test_linear_relaxation_matches_a_cold_lp_solve_and_reports_infeasibility() -> None:
    rng = np.random.default_rng(1)
    m = MILP(sense="max")
    x = m.add_vars(0.0, 1.0, 6)
    for _ in range(8):
        m.add_row(x, rng.normal(size=6), hi=1.0)
    relaxation = LinearRelaxation(m)
    for _ in range(5):
        coef = rng.normal(size=6)
        for sense in ("max", "min"):
            cold = MILP(**{**m.__dict__, "sense": sense})
            cold.set_objective(x, coef)
            expected = cold.solve().bound
            warm = relaxation.optimum(x.tolist(), coef.tolist(), sense)
            assert warm == pytest.approx(expected, abs=1e-5)
            assert (warm >= expected) if sense == "max" else (warm <= expected)  # outward
    m.add_row(x, np.ones(6), lo=7.0)  # six variables in [0, 1] cannot sum to 7
    assert LinearRelaxation(m).optimum([0], [1.0], "max") == -math.inf


@pytest.mark.slow
def test_lucid_diff_is_valid_on_the_records_it_answers(tmp_path: Path) -> None:
    """On a one-hot table (credit) the mechanism with `diff` bounds lets no probed
    leave-one-out disagreement through unnoised, and a bound planted below it is caught."""
    task = TASKS.get("credit")(subsample=40, arch="2x6", train_epochs=300, n_test=300)
    lucid = MECHANISMS.get("lucid")(
        eps=0.0, variant="diff", node_limit=1, max_milps=8, time_limit=20.0, budget=60.0
    )
    lucid.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path)))
    assert lucid.claim_metrics(task, task.splits())["bound_validity"].value == 1.0
    lucid.bounds = torch.full_like(lucid.bounds, -math.inf)
    assert lucid.claim_metrics(task, task.splits())["bound_validity"].value < 1.0


def test_without_clocks_the_bound_ignores_a_loaded_machine(toy_networks, monkeypatch) -> None:
    """time_limit = budget = None (LUCID's 0 s): the bound depends on the work budgets alone.
    A clock that jumps an hour per reading, as on a machine too loaded to get anywhere, must
    not change a number; the default wall-clock budget stops at once under the same clock."""
    _, _, layers = toy_networks
    unclocked = {"time_limit": None, "budget": None, "max_milps": 2, "node_limit": 1}

    def both() -> list[tuple[float, int, bool]]:
        found = [
            differential_bound(layers[0], layers[1:], 0, **unclocked),
            decision_bound(layers[0], layers[1:], 0, variant="HMB", **unclocked),
        ]
        return [(b.bound, b.milps, b.complete) for b in found]

    quiet = both()
    now = iter(range(0, 10**9, 3600))
    monkeypatch.setattr(idp_bound.time, "perf_counter", lambda: float(next(now)))
    assert both() == quiet
    clocked = differential_bound(layers[0], layers[1:], 0, budget=600.0, max_milps=2, node_limit=1)
    assert clocked.milps == 0 and not clocked.complete  # the clock, not the work, stopped it
    assert clocked.bound >= quiet[0][0] - 1e-9  # and it is still sound (no tighter)
