"""Exact local Lipschitz constants (l_inf -> l_1) on LipMIP's shapes, side by side in one
group per (net, R): a plain LipMIP-style MILP (interval big-M, both output signs; the
baseline), bench's MILP (DeepPoly bounds, c_0 = 1), bench's activation-pattern search and
bench's region search (`local_lipschitz`'s default picks one of the two searches). Nets as
in REFERENCE.md: W, b ~ U(+-1/sqrt(fan_in)), centre ~ U(-1, 1)^n; each round is the next
of 5 seeded nets. MILPs are solved by Gurobi, which bench installs (its pip licence admits
these models; HiGHS if it refuses), as the LipMIP baseline is; 60 s each. On the hard row
([8,32,32,8] at R = 0.5) only the baseline and the region search run: bench's MILP and the
pattern search time out there as the baseline does (studies/ptr-solvers/records/lipschitz-exact.md).

In the normal test run (benchmarks disabled) only the first group runs, once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from bench.certify.lipschitz.local import build_milp, local_lipschitz
from bench.certify.lipschitz.patterns import exact_by_patterns
from bench.certify.lipschitz.regions import exact_by_regions
from bench.certify.lipschitz.relu import operator_norms
from tests.bench.certify.lipschitz.test_local_lipschitz import random_net

TIME_LIMIT, SEEDS = 60.0, 5
HARD = ([8, 32, 32, 8], 0.5)
ROWS = [([8, 8, 8, 8], 0.1), ([8, 8, 8, 8], 0.5), ([8, 8, 8, 8], 1.0), ([8, 32, 32, 8], 0.1), HARD]


def _solve(method: str, net, center: np.ndarray, radius: float) -> tuple[float, bool]:
    """(certified upper bound, exact) by one method."""
    if method == "patterns":
        found = exact_by_patterns(net, center, radius, "l1", time_limit=TIME_LIMIT)
        return found.upper, found.exact
    if method == "regions":
        regions = exact_by_regions(net, center, radius, time_limit=TIME_LIMIT)
        return regions.upper, regions.exact
    milp = build_milp(
        net,
        center,
        radius,
        "l1",
        symmetric=method == "bench-milp",
        interval_only=method == "lipmip-style",
    )
    res = milp.solve(time_limit=TIME_LIMIT, solver="gurobi")
    return res.bound, res.status == "optimal"


@pytest.mark.parametrize(("sizes", "radius"), ROWS, ids=lambda v: str(v).replace(" ", ""))
@pytest.mark.parametrize("method", ["lipmip-style", "bench-milp", "patterns", "regions"])
def test_exact_local_lipschitz(benchmark, sizes: list[int], radius: float, method: str) -> None:
    if benchmark.disabled and (sizes, radius) != ROWS[0]:
        pytest.skip("timed only with benchmarks enabled (make bench-perf)")
    if (sizes, radius) == HARD and method in ("bench-milp", "patterns"):
        pytest.skip("times out on the hard row, as the baseline does (studies/ptr-solvers)")
    benchmark.group = f"lipschitz-{'-'.join(map(str, sizes))}-R{radius}"
    nets = itertools.cycle(range(SEEDS))
    values: list[tuple[int, float, bool]] = []

    def setup():
        seed = next(nets)
        center = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
        return (seed, random_net(sizes, seed), center), {}

    def run(seed: int, net, center: np.ndarray) -> None:
        values.append((seed, *_solve(method, net, center, radius)))

    benchmark.pedantic(run, setup=setup, rounds=SEEDS, iterations=1)
    benchmark.extra_info["values"] = values
    for seed, value, exact in values:
        if (sizes, radius) == HARD:  # no other method finishes: sound against samples
            center = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
            x = center + np.random.default_rng(1).uniform(-radius, radius, (20_000, sizes[0]))
            assert operator_norms(random_net(sizes, seed).jacobians(x), "l1").max() <= value
        elif exact:  # every method that finishes finds the same constant
            reference = exact_by_patterns(
                random_net(sizes, seed),
                np.random.default_rng(seed).uniform(-1, 1, sizes[0]),
                radius,
                "l1",
            )
            assert value == pytest.approx(reference.upper, rel=1e-5)


def test_local_lipschitz_default_is_the_pattern_search() -> None:
    """What a user calling local_lipschitz gets on these shapes: the pattern search."""
    net = random_net([8, 8, 8, 8], 0)
    center = np.random.default_rng(0).uniform(-1, 1, 8)
    assert local_lipschitz(net, center, 0.5, "l1").method == "patterns"
