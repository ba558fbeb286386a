"""Exactness of the local Lipschitz MILP against brute force, and the MILP solver layer."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.optimize import linprog
from torch import nn

from bench.certify import milp as milp_mod
from bench.certify.lipschitz.local import (
    ReluMLP,
    build_milp,
    local_lipschitz,
    lower_bound,
    module_local_lipschitz,
    operator_norms,
    preactivation_bounds,
    upper_bound,
)
from bench.certify.milp import MILP, gurobi_available
from bench.core.errors import ConfigError


def random_net(sizes: list[int], seed: int) -> ReluMLP:
    """W, b ~ U(+-1/sqrt(fan_in)), as in REFERENCE.md's timing nets."""
    rng = np.random.default_rng(seed)
    ws, bs = [], []
    for fan_in, fan_out in itertools.pairwise(sizes):
        s = 1 / math.sqrt(fan_in)
        ws.append(rng.uniform(-s, s, (fan_out, fan_in)))
        bs.append(rng.uniform(-s, s, fan_out))
    return ReluMLP(tuple(ws), tuple(bs))


def brute_force(net: ReluMLP, center: np.ndarray, radius: float, out_norm: str) -> float:
    """max ||J_sigma||_{inf->out} over every activation pattern sigma of the unstable neurons
    whose (closed) region meets the box, found by an LP feasibility check per pattern."""
    pre = preactivation_bounds(net, center, radius)
    unstable = [
        (li, j) for li, (lo, hi) in enumerate(pre) for j in range(len(lo)) if lo[j] < 0 < hi[j]
    ]
    n = net.in_dim
    best = -math.inf
    for bits in itertools.product((0.0, 1.0), repeat=len(unstable)):
        masks = [(lo >= 0).astype(float) for lo, _ in pre]
        for (li, j), bit in zip(unstable, bits, strict=True):
            masks[li][j] = bit
        # affine maps z_l = A_l x + c_l under this pattern; rows: on -> -z <= 0, off -> z <= 0
        a_mat, c_vec = np.eye(n), np.zeros(n)
        a_ub, b_ub = [], []
        for li, mask in enumerate(masks):
            w, b = net.weights[li], net.biases[li]
            za, zc = w @ a_mat, w @ c_vec + b
            lo, hi = pre[li]
            for j in range(len(mask)):
                if lo[j] < 0 < hi[j]:
                    sign = -1.0 if mask[j] else 1.0
                    a_ub.append(sign * za[j])
                    b_ub.append(-sign * zc[j])
            a_mat, c_vec = za * mask[:, None], zc * mask
        if a_ub:
            res = linprog(
                np.zeros(n),
                A_ub=np.array(a_ub),
                b_ub=np.array(b_ub),
                bounds=list(zip(center - radius, center + radius, strict=True)),
                method="highs",
            )
            if res.status != 0:
                continue
        jac = net.weights[-1] @ a_mat
        best = max(best, float(operator_norms(jac[None], out_norm)[0]))  # type: ignore[arg-type]
    return best


CASES = [([2, 4, 4, 2], 0), ([3, 5, 3], 1), ([2, 3, 3, 3], 2), ([4, 6, 3], 3), ([3, 4, 4, 3], 4)]


@pytest.mark.parametrize("out_norm", ["l1", "linf"])
@pytest.mark.parametrize(("sizes", "seed"), CASES)
def test_milp_equals_brute_force(sizes: list[int], seed: int, out_norm: str) -> None:
    net = random_net(sizes, seed)
    rng = np.random.default_rng(100 + seed)
    for radius in (0.3, 1.0):
        center = rng.uniform(-1, 1, sizes[0])
        exact = brute_force(net, center, radius, out_norm)
        res = build_milp(net, center, radius, out_norm).solve(solver="highs", rel_gap=1e-9)
        assert res.status == "optimal"
        assert res.bound == pytest.approx(exact, rel=1e-6)
        ll = local_lipschitz(net, center, radius, out_norm, solver="highs")
        assert ll.lower <= exact * (1 + 1e-6) and ll.upper >= exact * (1 - 1e-9)
        assert ll.upper == pytest.approx(exact, rel=1e-5)
        assert lower_bound(net, center, radius, out_norm) <= exact * (1 + 1e-9)
        assert upper_bound(net, center, radius, out_norm) >= exact * (1 - 1e-9)


def test_l1_output_norm_is_larger_than_linf() -> None:
    """The Posthoc reference used the l_inf output constant; the Laplace release needs l_1,
    which is up to k times larger, and never smaller."""
    net = random_net([3, 6, 6, 4], 7)
    c = np.zeros(3)
    l1 = local_lipschitz(net, c, 0.5, "l1", solver="highs").upper
    linf = local_lipschitz(net, c, 0.5, "linf", solver="highs").upper
    assert linf <= l1 <= 4 * linf * (1 + 1e-6)
    assert l1 > 1.2 * linf


def test_lipschitz_bounds_a_real_difference_quotient() -> None:
    """||f(x') - f(x'')||_1 <= L ||x' - x''||_inf for random pairs in the box."""
    net = random_net([4, 8, 8, 3], 11)
    c = np.full(4, 0.2)
    lip = local_lipschitz(net, c, 0.4, "l1", solver="highs").upper
    rng = np.random.default_rng(0)
    a, b = c + rng.uniform(-0.4, 0.4, (500, 4)), c + rng.uniform(-0.4, 0.4, (500, 4))
    ratio = np.abs(net.forward(a) - net.forward(b)).sum(1) / np.abs(a - b).max(1)
    assert ratio.max() <= lip


def test_threshold_decides_early_and_soundly() -> None:
    net = random_net([8, 8, 8, 8], 3)
    c = np.random.default_rng(3).uniform(-1, 1, 8)
    full = local_lipschitz(net, c, 0.5, "l1", solver="highs")
    above = local_lipschitz(net, c, 0.5, "l1", solver="highs", threshold=full.upper * 1.5)
    below = local_lipschitz(net, c, 0.5, "l1", solver="highs", threshold=full.lower * 0.7)
    assert above.upper <= full.upper * 1.5  # certified <= threshold
    assert below.lower > full.lower * 0.7  # certified > threshold


def test_module_and_bad_input() -> None:
    torch.manual_seed(0)
    mod = nn.Sequential(nn.Linear(3, 5), nn.ReLU(), nn.Linear(5, 2))
    res = module_local_lipschitz(mod, torch.zeros(3), 0.2)
    assert res.upper >= res.lower > 0
    with pytest.raises(ConfigError):
        ReluMLP.from_module(nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)))
    with pytest.raises(ConfigError):
        local_lipschitz(ReluMLP.from_module(mod), np.zeros(4), 0.2)
    with pytest.raises(ConfigError):
        local_lipschitz(ReluMLP.from_module(mod), np.zeros(3), -1.0)


def test_milp_layer_reports_bound_incumbent_and_status() -> None:
    """A knapsack: optimum 11 (items 1 and 2); the bound is certified, time limits hold."""
    m = MILP("max")
    x = m.add_vars(0, 1, n=3, binary=True)
    m.add_row(x, [3.0, 4.0, 5.0], hi=9.0)
    m.set_objective(x, [4.0, 5.0, 6.0])
    res = m.solve(solver="highs")
    assert res.status == "optimal" and res.solver == "highs"
    assert res.bound == pytest.approx(11.0) and res.incumbent == pytest.approx(11.0)
    assert res.gap == pytest.approx(0.0, abs=1e-9)
    dec = m.solve(solver="highs", threshold=20.0)
    assert dec.bound <= 20.0
    mn = MILP("min")
    y = mn.add_vars(0, 1, n=2, binary=True)
    mn.add_row(y, [1.0, 1.0], lo=1.5)
    mn.set_objective(y, [2.0, 3.0])
    assert mn.solve(solver="highs").bound == pytest.approx(5.0)
    with pytest.raises(ConfigError):
        m.solve(solver="cplex")
    with pytest.raises(ConfigError):
        m.solve(time_limit=0)


def test_time_limit_gives_a_sound_bound() -> None:
    """A hard instance under a tiny time limit: the reported bound stays above the optimum."""
    net = random_net([8, 32, 32, 8], 5)
    c = np.random.default_rng(5).uniform(-1, 1, 8)
    res = build_milp(net, c, 0.5, "l1").solve(solver="highs", time_limit=0.3)
    lb = lower_bound(net, c, 0.5, "l1", n=256)
    assert res.status in ("time_limit", "optimal")
    assert res.bound >= lb


@pytest.mark.skipif(not gurobi_available(), reason="gurobipy not installed")
@pytest.mark.parametrize("out_norm", ["l1", "linf"])
def test_highs_and_gurobi_agree(out_norm: str) -> None:
    for sizes, seed in CASES[:3]:
        net = random_net(sizes, seed)
        c = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
        m = build_milp(net, c, 0.7, out_norm)  # type: ignore[arg-type]
        h = m.solve(solver="highs", rel_gap=1e-9)
        g = m.solve(solver="gurobi", rel_gap=1e-9)
        assert g.solver in ("gurobi", "highs")
        assert g.bound == pytest.approx(h.bound, rel=1e-6)


def test_gurobi_requested_without_gurobipy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(milp_mod, "gurobi_available", lambda: False)
    m = MILP("max")
    x = m.add_vars(0, 1, n=1, binary=True)
    m.set_objective(x, [1.0])
    with pytest.raises(ConfigError, match="gurobipy"):
        m.solve(solver="gurobi")
    assert m.solve().solver == "highs"


def test_an_installed_gurobi_is_used_only_when_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same job, same numbers on every machine: a solve that does not name Gurobi never
    reaches it, installed or not, and 'auto' (which would depend on the machine) is refused."""
    monkeypatch.setattr(milp_mod, "gurobi_available", lambda: True)

    def no_gurobi(*args: object) -> None:
        raise AssertionError("Gurobi was used without being asked for")

    monkeypatch.setattr(milp_mod, "_solve_gurobi", no_gurobi)
    net = random_net([4, 8, 3], 1)
    c = np.zeros(4)
    assert build_milp(net, c, 0.3, "l1").solve().solver == "highs"
    assert local_lipschitz(net, c, 0.3, "l1", method="milp").solver == "highs"
    with pytest.raises(ConfigError, match="'auto' is not one"):
        build_milp(net, c, 0.3, "l1").solve(solver="auto")


def test_box_with_a_half_width_per_coordinate_is_exact() -> None:
    """A hyperrectangle (one half-width per coordinate, as the PTR region certificate uses)
    gives the brute-force maximum too, and refuses a radius of the wrong length."""
    net = random_net([3, 5, 4, 3], 7)
    c = np.random.default_rng(7).uniform(-1, 1, 3)
    radius = np.array([0.05, 0.4, 0.2])
    want = brute_force(net, c, radius, "l1")  # type: ignore[arg-type]
    got = local_lipschitz(net, c, radius, "l1", solver="highs")
    assert got.exact and got.upper == pytest.approx(want, rel=1e-6)
    assert upper_bound(net, c, radius) >= want * (1 - 1e-9)
    with pytest.raises(ConfigError):
        local_lipschitz(net, c, np.array([0.1, 0.2]), "l1")


def test_node_limit_is_sound_and_deterministic() -> None:
    """A node-limited solve keeps a certified upper bound (never below the exact constant),
    returns the incumbent's input point, and gives the same answer every time."""
    net = random_net([6, 12, 12, 6], 3)
    c = np.random.default_rng(3).uniform(-1, 1, 6)
    exact = local_lipschitz(net, c, 0.5, "l1", solver="highs", method="milp")
    runs = [
        local_lipschitz(net, c, 0.5, "l1", solver="highs", node_limit=1, method="milp")
        for _ in range(2)
    ]
    assert runs[0].upper == runs[1].upper and runs[0].lower == runs[1].lower
    assert runs[0].upper >= exact.lower * (1 - 1e-9) >= runs[0].lower * (1 - 1e-9)
    assert runs[0].status in ("node_limit", "optimal")
    point = exact.argmax
    assert point is not None and np.all(np.abs(point - c) <= 0.5 + 1e-9)
    # a point of the box: its Jacobian norm is a valid witness (<= the certified constant)
    assert 0 < operator_norms(net.jacobians(point[None]), "l1")[0] <= exact.upper
    with pytest.raises(ConfigError):
        build_milp(net, c, 0.5, "l1").solve(node_limit=0)
