"""Exact local Lipschitz constants of ReLU MLPs over an l_inf box: LipMIP's MILP, and the
entry point `local_lipschitz` that chooses between it and the pattern search.

L(f, B) = sup_{x', x'' in B} ||f(x') - f(x'')||_out / ||x' - x''||_inf over the box
B = {x : ||x - center||_inf <= radius}. For a ReLU network this equals the largest norm
of a (generalised) Jacobian over B (Jordan & Dimakis 2020, "LipMIP", Thm 3 / 4), with the
operator norm ||J||_{inf -> out} = max_{||c||_out* <= 1} ||J^T c||_1 (the l_1 norm of the
gradient is the dual of the l_inf input norm). Output norms:

- "l1"   (what the Laplace release needs: l_1 sensitivity): c ranges over [-1, 1]^k, so the
          constant is max_{c in {-1,1}^k} ||J^T c||_1, up to k times max_j ||J_j||_1;
- "linf" (LipMIP's 'l1Ball1' option that the Posthoc reference code used by mistake):
          c ranges over the l_1 ball, i.e. max_j ||grad f_j||_1.

The MILP (LipMIP's formulation, written here from the paper): interval pre-activation
bounds over B; forward ReLU y = relu(z) with one binary a per unstable neuron (y >= 0,
y >= z, y <= u a, y <= z - l (1 - a)); a backward pass sharing those binaries
(p = a * v by big-M with interval bounds on v); gradient g = W_1^T p_1; objective
sum_i |g_i| with one sign binary per coordinate whose sign is not fixed. The value we
report as a guarantee is the solver's certified (dual) bound, never its incumbent.

`local_lipschitz` tries the cheap sound bounds of relu.py first (`upper_bound`: interval
backward pass, product of layer norms; `lower_bound`: Jacobian norms at points of the box),
then an exact method: this MILP, the activation-pattern search of patterns.py, which finds
the same value far faster on boxes with few unstable neurons, or the region search of
regions.py, which solves two-hidden-layer nets that neither finishes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from bench.certify.lipschitz import patterns as _patterns
from bench.certify.lipschitz import regions as _regions
from bench.certify.lipschitz.coupled import MAX_PAIRS_LOG2
from bench.certify.lipschitz.patterns import PATTERN_MAX_FREE
from bench.certify.lipschitz.relu import (
    ENUM_MAX_K,
    OUT_NORMS,
    SAFETY,
    OutNorm,
    Radius,
    ReluMLP,
    backward_bounds,
    check_box,
    interval_preactivation_bounds,
    lower_bound,
    masked_bounds,
    operator_norms,
    preactivation_bounds,
    sampled_norms,
    upper_bound,
)
from bench.certify.milp import MILP, MILPResult
from bench.core.errors import ConfigError

# The primitives live in relu.py; this module re-exports them for its callers.
__all__ = [
    "METHODS",
    "OUT_NORMS",
    "PATTERN_MAX_FREE",
    "SAFETY",
    "LipschitzResult",
    "Method",
    "OutNorm",
    "Radius",
    "ReluMLP",
    "backward_bounds",
    "build_milp",
    "check_box",
    "interval_preactivation_bounds",
    "local_lipschitz",
    "lower_bound",
    "module_local_lipschitz",
    "operator_norms",
    "preactivation_bounds",
    "sampled_norms",
    "upper_bound",
]

Method = Literal["auto", "patterns", "regions", "milp"]
METHODS = ("auto", "patterns", "regions", "milp")


def build_milp(
    net: ReluMLP,
    center: np.ndarray,
    radius: Radius,
    out_norm: OutNorm,
    *,
    symmetric: bool = False,
    interval_only: bool = False,
) -> MILP:
    """LipMIP's MILP for max ||J(x)^T c||_1 over x in the box and c in the dual ball.

    `symmetric` (l1 only) fixes c_0 = 1: the objective is convex in c, so its maximum over
    the box [-1, 1]^k sits at a vertex, and c and -c give the same value, so some maximiser
    has c_0 = 1; the optimum is unchanged and the search space halves (about 2x fewer
    nodes on LipMIP's shapes). `interval_only` uses plain interval pre-activation bounds,
    as LipMIP does by default: the baseline the benchmarks compare against."""
    if out_norm not in OUT_NORMS:
        raise ConfigError(f"output norm must be one of {OUT_NORMS}, got {out_norm!r}")
    c0 = check_box(net, center, radius)
    bounds = interval_preactivation_bounds if interval_only else preactivation_bounds
    pre = bounds(net, c0, radius)
    symmetric = symmetric and out_norm == "l1"
    vb, (glo, ghi) = backward_bounds(net, pre, out_norm, symmetric)
    m = MILP("max")
    h = m.add_vars(c0 - radius, c0 + radius)  # the input x
    gates: list[np.ndarray | None] = []  # per hidden layer: binary index or -1 (stable)
    for layer, (zl, zu) in enumerate(pre):
        w, b = net.weights[layer], net.biases[layer]
        y = m.add_vars(np.maximum(zl, 0.0), np.maximum(zu, 0.0))
        gate = np.full(len(zl), -1, dtype=np.int64)
        for j in range(len(zl)):
            # z_j = w_j . h + b_j, written inline in each row (no z variables)
            idx, coef = np.append(h, y[j]), np.append(-w[j], 1.0)
            if zl[j] >= 0:  # stable on: y = z
                m.add_row(idx, coef, b[j], b[j])
            elif zu[j] <= 0:  # stable off: y = 0 (bounds already force it)
                continue
            else:
                a = int(m.add_vars(0, 1, binary=True)[0])
                gate[j] = a
                m.add_row(idx, coef, lo=b[j])  # y >= z
                m.add_row([y[j], a], [1.0, -zu[j]], hi=0.0)  # y <= u a
                # y <= z - l (1 - a)  <=>  y - w.h + l... : y - w.h - l a <= b - l
                m.add_row(np.append(idx, a), np.append(coef, -zl[j]), hi=b[j] - zl[j])
        gates.append(gate)
        h = y
    # backward pass: v_top = W_L^T c, p = a * v, v_below = W^T p, g = W_1^T p_1
    k = net.out_dim
    if out_norm == "l1":
        c_lo = -np.ones(k)
        if symmetric:
            c_lo[0] = 1.0
        cvar = m.add_vars(c_lo, np.ones(k))
        c_idx, c_coef = cvar, np.ones(k)
    else:  # c = c+ - c-, ||c||_1 <= 1
        cp, cm = m.add_vars(np.zeros(k), np.ones(k)), m.add_vars(np.zeros(k), np.ones(k))
        m.add_row(np.concatenate([cp, cm]), np.ones(2 * k), hi=1.0)
        c_idx, c_coef = np.concatenate([cp, cm]), np.concatenate([np.ones(k), -np.ones(k)])
    w_top = net.weights[-1]
    # v = W^T (c_coef * c_idx): express v_i as a variable with an equality row
    src_idx, src_mat = c_idx, (w_top[:, :] if out_norm == "l1" else np.vstack([w_top, w_top]))
    src_sign = c_coef
    for step, layer in enumerate(range(len(net.weights) - 2, -1, -1)):
        vlo, vhi = vb[step]
        v = m.add_vars(vlo, vhi)
        for i in range(len(v)):
            m.add_row(np.append(src_idx, v[i]), np.append(-src_sign * src_mat[:, i], 1.0), 0.0, 0.0)
        zl, zu = pre[layer]
        plo, phi = masked_bounds(vlo, vhi, zl, zu)
        p = m.add_vars(plo, phi)
        for j in range(len(p)):
            a = gates[layer][j]
            if zl[j] >= 0:
                m.add_row([p[j], v[j]], [1.0, -1.0], 0.0, 0.0)
            elif zu[j] <= 0:
                continue  # p = 0 by its bounds
            else:  # p = a v, v in [vl, vu]: big-M product of a binary and a bounded value
                vl, vu = vlo[j], vhi[j]
                m.add_row([p[j], a], [1.0, -vu], hi=0.0)  # p <= vu a
                m.add_row([p[j], a], [1.0, -vl], lo=0.0)  # p >= vl a
                m.add_row([p[j], v[j], a], [1.0, -1.0, -vl], hi=-vl)  # p <= v - vl (1 - a)
                m.add_row([p[j], v[j], a], [1.0, -1.0, -vu], lo=-vu)  # p >= v - vu (1 - a)
        src_idx, src_mat, src_sign = p, net.weights[layer], np.ones(len(p))
    # g = W_1^T p_1 and the objective sum |g_i|
    obj_idx, obj_coef = [], []
    for i in range(net.in_dim):
        row_idx, row_coef = src_idx, src_sign * src_mat[:, i]
        lo_i, hi_i = glo[i], ghi[i]
        if lo_i >= 0 or hi_i <= 0:  # sign fixed: |g_i| = +-g_i, linear
            s = 1.0 if lo_i >= 0 else -1.0
            obj_idx.extend(row_idx.tolist())
            obj_coef.extend((s * row_coef).tolist())
            continue
        t = int(m.add_vars(0.0, max(-lo_i, hi_i))[0])
        s = int(m.add_vars(0, 1, binary=True)[0])  # s = 1: g_i >= 0 branch
        # t <= g + 2 (-lo) (1 - s);  t <= -g + 2 hi s
        m.add_row(
            np.concatenate([[t, s], row_idx]),
            np.concatenate([[1.0, -2 * lo_i], -row_coef]),
            hi=-2 * lo_i,
        )
        m.add_row(
            np.concatenate([[t, s], row_idx]), np.concatenate([[1.0, -2 * hi_i], row_coef]), hi=0.0
        )
        obj_idx.append(t)
        obj_coef.append(1.0)
    m.set_objective(obj_idx, obj_coef)
    return m


@dataclass(frozen=True)
class LipschitzResult:
    """A local Lipschitz constant: `upper` is certified (sound), `lower` is attained by some
    point of the box; `exact` when they agree to the solver tolerance."""

    upper: float
    lower: float
    exact: bool
    method: str  # "milp", "patterns", "regions", "bounds" (cheap bounds settled it)
    solver: str | None = None
    seconds: float = 0.0
    status: str = "optimal"
    argmax: np.ndarray | None = None  # the MILP incumbent's input point, if any


def local_lipschitz(
    net: ReluMLP,
    center: np.ndarray,
    radius: Radius,
    out_norm: OutNorm = "l1",
    *,
    time_limit: float | None = None,
    solver: str = "highs",
    threshold: float | None = None,
    samples: int = 32,
    seed: int = 0,
    node_limit: int | None = None,
    method: Method = "auto",
) -> LipschitzResult:
    """L(f, box); with `threshold`, stop once L <= threshold or L > threshold is certified
    (cheap bounds first, then the exact method's bounds).

    `method`: "milp" is LipMIP's MILP as the Posthoc PTR path has always solved it (its
    committed numbers rest on it); "patterns" is the activation-pattern search
    (bench.certify.lipschitz.patterns), exact and far faster on small nets; "regions" is the
    region search (bench.certify.lipschitz.regions: two hidden layers, l_inf -> l_1), which
    solves nets too large for both; "auto" uses the pattern search when the box leaves at
    most PATTERN_MAX_FREE neurons unstable, else the region search where it applies, else
    the MILP with the c_0 = 1 symmetry fixed.

    `node_limit` is the exact method's work budget, counted the same way on every machine:
    branch-and-bound nodes of the MILP, parts bounded plus reachability LPs of the pattern
    search, nodes popped plus LPs of the region search. A search that spends it stops with
    its certified upper bound (never an incumbent) and `exact` False."""
    if method not in METHODS:
        raise ConfigError(f"local Lipschitz method must be one of {METHODS}, got {method!r}")
    if method == "regions" and out_norm != "l1":
        raise ConfigError(
            f"the region search computes l_inf -> l_1 constants only, got out_norm={out_norm!r}: "
            "use method 'patterns' or 'milp'"
        )
    c = check_box(net, center, radius)
    ub = upper_bound(net, c, radius, out_norm)
    lb = lower_bound(net, c, radius, out_norm, n=samples, seed=seed)
    if ub <= lb * (1 + 2 * SAFETY) or not np.any(np.asarray(radius) > 0):
        return LipschitzResult(ub, lb, True, "bounds")
    if threshold is not None and (ub <= threshold or lb > threshold):
        return LipschitzResult(ub, lb, False, "bounds")
    if method == "patterns" or (method == "auto" and _patterns_fit(net, c, radius, out_norm)):
        found = _patterns.exact_by_patterns(
            net,
            c,
            radius,
            out_norm,
            time_limit=time_limit,
            threshold=threshold,
            floor=lb,
            work_limit=node_limit,
        )
        return LipschitzResult(
            min(ub, found.upper),
            found.lower,
            found.exact,
            "patterns",
            None,
            found.seconds,
            found.status,
        )
    if method == "regions" or (method == "auto" and _regions_fit(net, out_norm)):
        found_r = _regions.exact_by_regions(
            net,
            c,
            radius,
            time_limit=time_limit,
            threshold=threshold,
            floor=lb,
            work_limit=node_limit,
        )
        return LipschitzResult(
            min(ub, found_r.upper),
            found_r.lower,
            found_r.exact,
            "regions",
            "highs",
            found_r.seconds,
            found_r.status,
        )
    result = build_milp(net, c, radius, out_norm, symmetric=method == "auto").solve(
        time_limit=time_limit, solver=solver, threshold=threshold, node_limit=node_limit
    )
    return _from_milp(result, ub, lb, net.in_dim)


def _patterns_fit(net: ReluMLP, center: np.ndarray, radius: Radius, out_norm: OutNorm) -> bool:
    """Whether the pattern search suits this box: few unstable neurons, few outputs."""
    if out_norm == "l1" and net.out_dim > ENUM_MAX_K:
        return False
    pre = preactivation_bounds(net, center, radius)
    return sum(int(((lo < 0) & (hi > 0)).sum()) for lo, hi in pre) <= PATTERN_MAX_FREE


def _regions_fit(net: ReluMLP, out_norm: OutNorm) -> bool:
    """Whether the region search covers this net: two hidden layers, l_inf -> l_1, and
    few enough input and output signs to enumerate (coupled.py)."""
    n, k = net.in_dim, net.out_dim
    return len(net.weights) == 3 and out_norm == "l1" and n + k - 1 <= MAX_PAIRS_LOG2


def _from_milp(result: MILPResult, ub: float, lb: float, in_dim: int) -> LipschitzResult:
    if result.status in ("infeasible", "unbounded", "error"):
        return LipschitzResult(
            ub, lb, False, "bounds", result.solver, result.seconds, result.status
        )
    upper = min(ub, result.bound * (1 + SAFETY))
    lower = max(lb, result.incumbent if result.incumbent is not None else -math.inf)
    # build_milp adds the input x first: the incumbent's point is the solution's head
    point = result.solution[:in_dim].copy() if result.solution is not None else None
    return LipschitzResult(
        upper,
        lower,
        result.status == "optimal",
        "milp",
        result.solver,
        result.seconds,
        result.status,
        point,
    )


def module_local_lipschitz(
    module: nn.Module,
    center: torch.Tensor,
    radius: float,
    out_norm: OutNorm = "l1",
    **kwargs: object,
) -> LipschitzResult:
    """`local_lipschitz` for a torch ReLU MLP and a torch centre."""
    return local_lipschitz(
        ReluMLP.from_module(module), center.detach().double().numpy(), radius, out_norm, **kwargs
    )  # type: ignore[arg-type]
