"""The activation-pattern search for exact local Lipschitz constants
(bench.certify.lipschitz.patterns) against brute force and the MILP, its fast sound norm
bounds, its decisions and budgets, and how local_lipschitz chooses it."""

from __future__ import annotations

import numpy as np
import pytest

from bench.certify.lipschitz.local import (
    PATTERN_MAX_FREE,
    build_milp,
    local_lipschitz,
    operator_norms,
    preactivation_bounds,
)
from bench.certify.lipschitz.patterns import _norm_bounds, _Part, _ReachLP, exact_by_patterns
from bench.core.errors import ConfigError
from tests.bench.certify.lipschitz.test_local_lipschitz import CASES, brute_force, random_net

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("out_norm", ["l1", "linf"])
@pytest.mark.parametrize(("sizes", "seed"), CASES)
def test_pattern_search_equals_brute_force(sizes: list[int], seed: int, out_norm: str) -> None:
    net = random_net(sizes, seed)
    rng = np.random.default_rng(100 + seed)
    for radius in (0.3, 1.0):
        center = rng.uniform(-1, 1, sizes[0])
        exact = brute_force(net, center, radius, out_norm)
        found = exact_by_patterns(net, center, radius, out_norm)  # type: ignore[arg-type]
        assert found.exact and found.status == "optimal"
        assert found.lower <= exact * (1 + 1e-9) and found.upper >= exact
        assert found.upper == pytest.approx(exact, rel=1e-5)


@pytest.mark.parametrize(("sizes", "radius"), [([8, 8, 8, 8], 0.3), ([8, 16, 16, 8], 0.1)])
def test_pattern_search_equals_the_milp_on_lipmip_shapes(sizes: list[int], radius: float) -> None:
    """The issue's shapes (W, b ~ U(+-1/sqrt(fan_in)), centre ~ U(-1, 1)^n): the same value
    as LipMIP's MILP solved to a 1e-9 gap, and never below a sampled Jacobian norm."""
    for seed in range(3):
        net = random_net(sizes, seed)
        center = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
        milp = build_milp(net, center, radius, "l1").solve(solver="highs", rel_gap=1e-9)
        found = exact_by_patterns(net, center, radius, "l1")
        assert milp.status == "optimal" and found.exact
        assert found.upper == pytest.approx(milp.bound, rel=1e-5)
        points = center + np.random.default_rng(1).uniform(-radius, radius, (2000, sizes[0]))
        assert operator_norms(net.jacobians(points), "l1").max() <= found.upper


def test_unreachable_patterns_are_refuted() -> None:
    """The largest pattern norm of the box is not the answer when its piece misses the box:
    the search must refute it by LP, not report it (here the top score is unreachable)."""
    net = random_net([8, 8, 8, 8], 2)
    center = np.random.default_rng(2).uniform(-1, 1, 8)
    part = _Part(net, center - 0.5, center + 0.5)
    ceiling = part.bound(net, "l1", PATTERN_MAX_FREE)
    found = exact_by_patterns(net, center, 0.5, "l1")
    assert found.lps > 0
    assert found.upper < 0.9 * ceiling
    points = center + np.random.default_rng(1).uniform(-0.5, 0.5, (2000, 8))
    assert operator_norms(net.jacobians(points), "l1").max() <= found.upper


def test_a_reachability_lp_without_an_answer_refutes_nothing() -> None:
    """Only an infeasible LP misses the part: a status without an answer (here an iteration
    limit) keeps the block open and claims no interior point."""
    net = random_net([8, 8, 8, 8], 2)
    center = np.random.default_rng(2).uniform(-1, 1, 8)
    part = _Part(net, center - 0.5, center + 0.5)
    reach = _ReachLP(net, part)
    fixed = {key: True for key in part.free}
    margin, point = reach.margin(fixed)
    assert point is not None or margin == -1.0  # the solver answers: a point or a refutation
    stopped = _ReachLP(net, part)
    stopped.h.setOptionValue("presolve", "off")
    stopped.h.setOptionValue("simplex_iteration_limit", 0)
    assert stopped.margin(fixed) == (0.0, None)  # in [-MARGIN_TOL, MARGIN_TOL]: kept, not interior


def test_fast_norm_bounds_are_sound_and_tight() -> None:
    """The float32 scores, widened by the rounding-error bound, never fall below the exact
    float64 norm, including under heavy cancellation and at large magnitudes."""
    rng = np.random.default_rng(0)
    plain = rng.normal(size=(3000, 8, 8))
    cancel = np.repeat(rng.normal(size=(3000, 1, 8)), 8, 1) * np.array([1, -1] * 4)[None, :, None]
    cancel += rng.normal(scale=1e-7, size=cancel.shape)
    large = plain * 1e6
    for jac in (plain, cancel, large):
        exact = operator_norms(jac, "l1")
        fast = _norm_bounds(jac, "l1")
        assert np.all(fast >= exact)
        assert np.all(fast <= exact * (1 + 1e-5) + 1e-5 * np.abs(jac).sum((1, 2)))


def test_threshold_decisions_agree_with_the_value() -> None:
    net = random_net([8, 8, 8, 8], 3)
    center = np.random.default_rng(3).uniform(-1, 1, 8)
    exact = exact_by_patterns(net, center, 0.5, "l1").upper
    below = exact_by_patterns(net, center, 0.5, "l1", threshold=1.05 * exact)
    above = exact_by_patterns(net, center, 0.5, "l1", threshold=0.95 * exact)
    assert below.upper <= 1.05 * exact
    assert above.lower > 0.95 * exact


def test_a_spent_budget_keeps_sound_bounds() -> None:
    """[8, 32, 32, 8] at R = 0.5 leaves about 45 neurons unstable: a short budget stops
    early, says so, and its bounds still bracket the sampled norms."""
    net = random_net([8, 32, 32, 8], 0)
    center = np.random.default_rng(0).uniform(-1, 1, 8)
    found = exact_by_patterns(net, center, 0.5, "l1", time_limit=0.5)
    assert found.status == "time_limit" and not found.exact
    points = center + np.random.default_rng(1).uniform(-0.5, 0.5, (2000, 8))
    sampled = operator_norms(net.jacobians(points), "l1").max()
    assert found.lower <= sampled * (1 + 1e-9) <= found.upper


def test_local_lipschitz_picks_the_pattern_search_on_small_boxes() -> None:
    """Few unstable neurons: patterns; more, two hidden layers: regions; deeper: MILP."""
    net = random_net([8, 8, 8, 8], 1)
    center = np.random.default_rng(1).uniform(-1, 1, 8)
    auto = local_lipschitz(net, center, 0.5, "l1")
    milp = local_lipschitz(net, center, 0.5, "l1", method="milp", solver="highs")
    assert auto.method == "patterns" and milp.method == "milp"
    assert auto.exact and milp.exact
    assert auto.upper == pytest.approx(milp.upper, rel=1e-5)
    wider = random_net([8, 16, 16, 8], 1)
    pre = preactivation_bounds(wider, center, 1.0)
    assert sum(int(((lo < 0) & (hi > 0)).sum()) for lo, hi in pre) > PATTERN_MAX_FREE
    wide = local_lipschitz(wider, center, 1.0, "l1", time_limit=2, solver="highs")
    assert wide.method == "regions" and wide.upper >= wide.lower  # two hidden layers
    deeper = random_net([8, 16, 16, 16, 8], 1)
    deep = local_lipschitz(deeper, center, 1.0, "l1", time_limit=2, solver="highs")
    assert deep.method == "milp" and deep.upper >= deep.lower
    with pytest.raises(ConfigError, match="method"):
        local_lipschitz(net, center, 0.5, "l1", method="lipmip")  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", range(3))
def test_the_output_sign_symmetry_keeps_the_milp_optimum(seed: int) -> None:
    """Fixing c_0 = 1 (c and -c give the same norm) changes the MILP, not its optimum."""
    net = random_net([5, 6, 6, 4], seed)
    center = np.random.default_rng(seed).uniform(-1, 1, 5)
    plain = build_milp(net, center, 0.4, "l1").solve(solver="highs", rel_gap=1e-9)
    halved = build_milp(net, center, 0.4, "l1", symmetric=True).solve(solver="highs", rel_gap=1e-9)
    baseline = build_milp(net, center, 0.4, "l1", interval_only=True).solve(
        solver="highs", rel_gap=1e-9
    )
    assert plain.bound == pytest.approx(halved.bound, rel=1e-6)
    assert plain.bound == pytest.approx(baseline.bound, rel=1e-6)
