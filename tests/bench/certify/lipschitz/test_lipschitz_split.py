"""The input-splitting decision "L(f, box) <= t?": always agrees with the exact constant
(brute force over activation patterns) when it decides, and says None when out of budget."""

from __future__ import annotations

import numpy as np
import pytest

from bench.certify.lipschitz.local import local_lipschitz, preactivation_bounds
from bench.certify.lipschitz.split import decide_by_splitting, pattern_bound
from tests.bench.certify.lipschitz.test_local_lipschitz import brute_force, random_net

CASES = [([4, 6, 6, 4], s, r) for s in (1, 2, 3) for r in (0.1, 0.4)]


@pytest.mark.parametrize(("sizes", "seed", "radius"), CASES)
@pytest.mark.parametrize("out_norm", ["l1", "linf"])
def test_decisions_agree_with_the_exact_constant(
    sizes: list[int], seed: int, radius: float, out_norm: str
) -> None:
    net = random_net(sizes, seed)
    c = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
    exact = brute_force(net, c, radius, out_norm)
    for factor, want in ((1.02, True), (0.98, False)):
        got = decide_by_splitting(net, c, radius, exact * factor, out_norm, max_boxes=4000)  # type: ignore[arg-type]
        assert got.below is want, (factor, got)
        assert got.witness <= exact * (1 + 1e-9)  # a witness is attained in the box
        if got.below:
            assert got.upper >= exact * (1 - 1e-9)


def test_pattern_bound_is_an_upper_bound_and_exact_when_all_stable() -> None:
    net = random_net([4, 6, 6, 4], 4)
    c = np.random.default_rng(4).uniform(-1, 1, 4)
    for radius in (1e-6, 0.05, 0.3):
        pre = preactivation_bounds(net, c, radius)
        bound = pattern_bound(net, pre, "l1", max_free=12)
        assert bound is not None and bound >= brute_force(net, c, radius, "l1") * (1 - 1e-9)
    tiny = preactivation_bounds(net, c, 1e-6)
    assert pattern_bound(net, tiny, "l1", 12) == pytest.approx(
        brute_force(net, c, 1e-6, "l1"), rel=1e-6
    )
    wide = preactivation_bounds(net, c, 5.0)
    assert pattern_bound(net, wide, "l1", max_free=2) is None  # too many unstable neurons


def test_budget_exhaustion_is_undecided_never_a_guess() -> None:
    net = random_net([6, 12, 12, 6], 3)
    c = np.random.default_rng(3).uniform(-1, 1, 6)
    exact = local_lipschitz(net, c, 0.5, "l1", solver="highs").upper  # 24 neurons: MILP
    got = decide_by_splitting(net, c, 0.5, exact * 1.0001, "l1", max_boxes=3)
    assert got.below is None and got.boxes <= 3 and got.upper > exact * 1.0001


def test_box_with_a_half_width_per_coordinate() -> None:
    net = random_net([3, 5, 4, 3], 7)
    c = np.random.default_rng(7).uniform(-1, 1, 3)
    radius = np.array([0.05, 0.4, 0.2])
    exact = brute_force(net, c, radius, "l1")  # type: ignore[arg-type]
    assert decide_by_splitting(net, c, radius, exact * 1.02, max_boxes=4000).below is True
    assert decide_by_splitting(net, c, radius, exact * 0.98, max_boxes=4000).below is False
