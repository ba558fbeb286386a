"""PTR on bench's exact search: the certified local Lipschitz bound of every method is at
least the true constant, and a spent work budget gives a sound bound or a refusal."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from bench.certify.lipschitz.local import local_lipschitz, upper_bound
from bench.certify.lipschitz.patterns import exact_by_patterns
from bench.certify.lipschitz.regions import exact_by_regions
from mechanisms.posthoc.ptr import Certifier, PTRConfig, abstain_threshold, ptr_test
from tests.bench.certify.lipschitz.test_local_lipschitz import brute_force, random_net

# [n, 8, 8, k]: two hidden layers as the posthoc obfuscators, small enough to enumerate
SHAPES = [([3, 6, 6, 2], 1), ([2, 8, 8, 3], 4), ([4, 6, 6, 4], 21)]


@functools.cache
def _truth(sizes: tuple[int, ...], seed: int) -> float:
    net = random_net(list(sizes), seed)
    return brute_force(net, np.random.default_rng(seed).uniform(-1, 1, sizes[0]), 0.5, "l1")


@pytest.mark.parametrize(("sizes", "seed"), SHAPES, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("method", ["auto", "patterns", "regions", "milp"])
def test_certified_bound_is_at_least_the_true_constant(
    sizes: list[int], seed: int, method: str
) -> None:
    """Every method's certified upper bound is >= the constant found by enumerating every
    activation pattern whose region meets the box, and the exact searches meet it."""
    net = random_net(sizes, seed)
    c = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
    truth = _truth(tuple(sizes), seed)
    res = local_lipschitz(net, c, 0.5, "l1", solver="highs", method=method)  # type: ignore[arg-type]
    assert res.method == ("patterns" if method == "auto" else method)
    assert res.upper >= truth * (1 - 1e-9)
    assert res.exact and res.upper == pytest.approx(truth, rel=1e-5)


def _hard_box() -> tuple:
    """A two-hidden-layer net and a box the searches need many steps on."""
    net = random_net([4, 8, 8, 4], 3)
    c = np.random.default_rng(3).uniform(-1, 1, 4)
    return net, c, 1.0


@pytest.mark.parametrize("search", ["patterns", "regions"])
def test_spent_work_budget_gives_a_sound_deterministic_bound(search: str) -> None:
    """Stopped by its work budget, a search returns an upper bound >= the exact constant,
    a lower bound <= it, `exact` False, and the same numbers on every run (work, not time)."""
    net, c, r = _hard_box()

    def run(limit: int | None):
        if search == "patterns":
            return exact_by_patterns(net, c, r, "l1", work_limit=limit)
        return exact_by_regions(net, c, r, work_limit=limit)

    full = run(None)
    assert full.exact
    stopped = 0
    for limit in (1, 10):
        first, again = run(limit), run(limit)
        assert (first.upper, first.lower, first.status) == (again.upper, again.lower, again.status)
        assert first.upper >= full.upper * (1 - 1e-9) and first.lower <= full.lower * (1 + 1e-9)
        if first.status == "work_limit":
            stopped += 1
            assert not first.exact
    assert stopped >= 2  # the small budgets do stop both searches here


def test_local_lipschitz_budget_applies_to_the_exact_searches() -> None:
    """`node_limit` is the work budget of the default ("auto") search too."""
    net, c, r = _hard_box()
    exact = local_lipschitz(net, c, r, "l1")
    cut = local_lipschitz(net, c, r, "l1", node_limit=1)
    assert exact.exact and exact.method == "patterns"
    assert not cut.exact and cut.status == "work_limit"
    assert cut.upper >= exact.upper * (1 - 1e-9)


def test_ptr_refuses_a_query_whose_decision_the_budget_leaves_open() -> None:
    """DeltaP just above L(f, N(z, R)): the full exact search certifies the box at R and the
    query is released; with a budget too small to settle it, the box counts as infeasible
    (its certified upper bound is above DeltaP), the query is refused and flagged inexact."""
    net, c, _ = _hard_box()
    radius = 0.5
    truth = local_lipschitz(net, c, radius, "l1").upper
    delta_p = truth * 1.001
    assert upper_bound(net, c, radius, "l1") > delta_p  # the cheap bound does not settle it

    def decide(limit: int):
        cfg = PTRConfig(
            1.0, 0.05, radius, delta_p, 4 * radius, node_limit=limit, split_boxes=0, samples=8
        )
        # Z such that the test asks about the first grid point, r_0 = R (2 t in [0, R))
        noise = abstain_threshold(cfg.eps, cfg.delta, cfg.radius) - radius / 4
        return ptr_test(Certifier(net, c, cfg), noise)

    assert PTRConfig(1.0, 0.05, radius, delta_p, 4 * radius).method == "auto"  # the default
    full, cut = decide(5000), decide(1)
    assert full.released and full.exact and full.radius == pytest.approx(radius)
    assert not cut.released and not cut.exact
