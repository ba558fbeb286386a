"""The region search for exact local Lipschitz constants (bench.certify.lipschitz.regions)
against brute force and the pattern search, its sound time-outs and refusals, and the two
pieces it rests on: the coupled bound (coupled.py) and the reusable dual certificates of
the layer-1 range tests (ranges.py)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bench.certify.lipschitz.coupled import CoupledBound, sign_vectors
from bench.certify.lipschitz.local import local_lipschitz
from bench.certify.lipschitz.patterns import _ReachLP, exact_by_patterns
from bench.certify.lipschitz.ranges import LayerOneRanges
from bench.certify.lipschitz.regions import exact_by_regions
from bench.certify.lipschitz.relu import operator_norms
from bench.core.errors import ConfigError
from tests.bench.certify.lipschitz.test_local_lipschitz import brute_force, random_net

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize(
    ("sizes", "seed"), [([2, 4, 4, 2], 0), ([3, 5, 4, 3], 1), ([2, 3, 3, 3], 2)]
)
def test_region_search_equals_brute_force(sizes: list[int], seed: int) -> None:
    net = random_net(sizes, seed)
    rng = np.random.default_rng(100 + seed)
    for radius in (0.3, 1.0):
        center = rng.uniform(-1, 1, sizes[0])
        exact = brute_force(net, center, radius, "l1")
        found = exact_by_regions(net, center, radius)
        assert found.status == "optimal"
        assert found.lower <= exact * (1 + 1e-9) and found.upper >= exact
        assert found.upper == pytest.approx(exact, rel=1e-5)


@pytest.mark.parametrize(
    ("sizes", "radius", "seed"),
    [
        ([8, 8, 8, 8], 0.5, 0),
        ([8, 8, 8, 8], 0.5, 1),
        ([8, 8, 8, 8], 1.0, 1),
        ([4, 12, 10, 3], 0.7, 2),
        ([6, 16, 16, 5], 0.4, 0),
    ],
)
def test_region_search_equals_the_pattern_search(
    sizes: list[int], radius: float, seed: int
) -> None:
    """LipMIP's small shapes and two others (W, b ~ U(+-1/sqrt(fan_in))): the same constant."""
    net = random_net(sizes, seed)
    center = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
    mine = exact_by_regions(net, center, radius)
    reference = exact_by_patterns(net, center, radius, "l1")
    assert mine.exact and reference.exact
    assert mine.upper == pytest.approx(reference.upper, rel=1e-5)


def test_a_time_out_keeps_sound_bounds() -> None:
    """Cut off at once, the search still brackets the constant the finished search finds."""
    net = random_net([6, 16, 16, 5], 0)
    center = np.random.default_rng(0).uniform(-1, 1, 6)
    exact = exact_by_regions(net, center, 0.4).upper
    cut = exact_by_regions(net, center, 0.4, time_limit=0.0)
    assert cut.status == "time_limit" and not cut.exact
    assert cut.lower <= exact <= cut.upper
    assert cut.upper > exact * 1.01  # the test is not vacuous: the cut run had a gap


def test_a_per_coordinate_box_is_searched() -> None:
    net = random_net([4, 12, 10, 3], 3)
    center = np.random.default_rng(3).uniform(-1, 1, 4)
    radius = np.array([0.2, 0.9, 0.5, 0.05])
    found = exact_by_regions(net, center, radius)
    assert found.upper == pytest.approx(
        exact_by_patterns(net, center, radius, "l1").upper, rel=1e-5
    )


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        ([4, 8, 3], "two hidden layers, got 1"),
        ([4, 8, 8, 8, 3], "two hidden layers, got 3"),
        ([12, 8, 8, 8], "exceed"),
    ],
)
def test_nets_outside_its_scope_are_refused(sizes: list[int], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        exact_by_regions(random_net(sizes, 0), np.zeros(sizes[0]), 0.3)


def test_the_coupled_bound_is_sound_and_its_sparse_path_equal() -> None:
    """Every pair's bound is at least v^T J u of each completion of the fixed gates, falls
    when a gate is fixed, and the gathered path gives the dense path's values."""
    net = random_net([4, 6, 5, 3], 7)
    bound = CoupledBound(net)
    rng = np.random.default_rng(0)
    on = [(rng.uniform(size=6) < 0.3).astype(float), (rng.uniform(size=5) < 0.3).astype(float)]
    free = [(1 - on[0]) * (rng.uniform(size=6) < 0.6), (1 - on[1]) * (rng.uniform(size=5) < 0.6)]
    u, v = sign_vectors(4, False), sign_vectors(3, True)
    parent = bound.dense(on, free)
    w1, w2, w3 = net.weights
    free_idx = [np.flatnonzero(f) for f in free]
    for bits in itertools.product((0.0, 1.0), repeat=sum(len(i) for i in free_idx)):
        d = [o.copy() for o in on]
        d[0][free_idx[0]] = bits[: len(free_idx[0])]
        d[1][free_idx[1]] = bits[len(free_idx[0]) :]
        values = (v.T @ (w3 @ (d[1][:, None] * w2) @ (d[0][:, None] * w1)) @ u).ravel()
        assert (parent >= values).all()
    child_on, child_free = [o.copy() for o in on], [f.copy() for f in free]
    j = free_idx[0][0]
    child_on[0][j], child_free[0][j] = 1.0, 0.0
    child = bound.dense(child_on, child_free)
    assert (child <= parent).all() and (child < parent).any()
    active = np.flatnonzero(rng.uniform(size=parent.size) < 0.3)
    assert np.allclose(bound.sparse(child_on, child_free, active), child[active], rtol=1e-12)
    value, kept = bound(child_on, child_free, active, floor=float(np.median(child[active])))
    assert value == child[active].max() and set(kept) == set(
        active[child[active] > np.median(child[active])]
    )


def test_a_reused_certificate_answers_as_a_fresh_lp() -> None:
    """Over many random regions, the range test with its certificate cache gives the answer
    of an LP solved afresh, and does reuse certificates (else this tests nothing)."""
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(12, 5)), rng.normal(size=12) * 0.3
    lo, hi = -np.ones(5), np.ones(5)
    cached = LayerOneRanges(w, b, lo, hi)
    for _ in range(300):
        signs = rng.choice([-1.0, 0.0, 1.0], 12, p=[0.3, 0.4, 0.3])
        a, a0 = rng.normal(size=5) * 0.1 + w[0], b[0] - 0.5
        fresh = LayerOneRanges(w, b, lo, hi)
        got, point = cached.never_positive("gate", a, a0, signs)
        assert got == fresh.never_positive("gate", a, a0, signs)[0]
        if not got:
            assert a @ point + a0 >= -1e-7 and (signs * (w @ point + b) >= -1e-7).all()
    assert cached.reused > 20


def test_local_lipschitz_solves_a_hard_row_net_by_the_region_search() -> None:
    """One net of LipMIP's [8,32,32,8] at R = 0.5 (where every MILP times out at 60 s):
    `local_lipschitz`'s default picks the region search, which solves it exactly, its
    constant attained and at least every sampled Jacobian norm."""
    net = random_net([8, 32, 32, 8], 4)
    center = np.random.default_rng(4).uniform(-1, 1, 8)
    found = local_lipschitz(net, center, 0.5, "l1", time_limit=120)
    assert found.method == "regions" and found.exact
    x = center + np.random.default_rng(9).uniform(-0.5, 0.5, (20_000, 8))
    assert operator_norms(net.jacobians(x), "l1").max() <= found.upper


def test_a_threshold_stops_the_search_once_decided() -> None:
    net = random_net([8, 8, 8, 8], 0)
    center = np.random.default_rng(0).uniform(-1, 1, 8)
    exact = exact_by_regions(net, center, 0.5).upper
    for threshold in (exact * 0.9, exact * 1.1):
        found = exact_by_regions(net, center, 0.5, threshold=threshold)
        assert found.lower <= exact <= found.upper
        assert (found.upper <= threshold) or (found.lower > threshold)


def test_a_solver_without_an_answer_proves_nothing() -> None:
    """An LP stopped by a limit leaves the gate open: "never positive" only on the solver's
    optimum or infeasibility, never on a status without an answer."""
    rng = np.random.default_rng(1)
    w, b = rng.normal(size=(12, 5)), rng.normal(size=12) * 0.3
    ranges = LayerOneRanges(w, b, -np.ones(5), np.ones(5))
    signs = np.zeros(12)
    assert ranges.never_positive("gate", w[0], -100.0, signs) == (True, None)  # truly never
    stopped = LayerOneRanges(w, b, -np.ones(5), np.ones(5))
    stopped.h.setOptionValue("presolve", "off")
    stopped.h.setOptionValue("simplex_iteration_limit", 0)
    assert stopped.never_positive("gate", w[0], -100.0, signs) == (False, None)


def test_local_lipschitz_refuses_the_region_search_for_linf() -> None:
    """The region search computes ||J||_{inf -> 1} only: asked for l_inf -> l_inf it would
    report a wrong `lower` and `exact`, so it is refused before any work."""
    net = random_net([8, 8, 8, 8], 0)
    with pytest.raises(ConfigError, match="l_inf -> l_1 constants only"):
        local_lipschitz(net, np.zeros(8), 0.5, "linf", method="regions")


@pytest.mark.parametrize("seed", range(3))
def test_reachability_lps_without_an_answer_refute_no_region(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reachability LP that ends without an answer proves nothing: with every one of them
    answerless, the region search must still bound the true constant from above."""
    net = random_net([6, 16, 16, 5], seed)
    center = np.random.default_rng(seed).uniform(-1, 1, 6)
    truth = exact_by_patterns(net, center, 0.4, "l1").upper
    monkeypatch.setattr(_ReachLP, "margin", lambda self, fixed: (0.0, None))
    found = exact_by_regions(net, center, 0.4, time_limit=60)
    assert found.upper >= truth * (1 - 1e-9)
