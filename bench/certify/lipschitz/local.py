"""Exact local Lipschitz constants of ReLU MLPs over an l_inf box, and cheap sound bounds.

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

`upper_bound` (interval backward pass, product of layer norms) and `sampled_norms`
(Jacobian norms at points of the box: each is a value of the MILP's objective at a
feasible point, hence a lower bound) decide many "L <= t ?" questions without a MILP.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from bench.certify.milp import MILP, MILPResult
from bench.errors import ConfigError

OutNorm = Literal["l1", "linf"]
OUT_NORMS = ("l1", "linf")
Method = Literal["auto", "patterns", "milp"]
METHODS = ("auto", "patterns", "milp")
PATTERN_MAX_FREE = 16  # "auto": the pattern search scores 2^16 patterns in bulk at most
Radius = float | np.ndarray  # an l_inf ball, or one half-width per coordinate (a box)
_ENUM_MAX_K = 14  # exact ||.||_{inf->1} by enumerating sign vectors up to this output size
SAFETY = 1e-6  # relative padding on solver bounds: integrality / feasibility tolerances


@dataclass(frozen=True)
class ReluMLP:
    """Weights (out x in) and biases of a fully connected ReLU network, in float64."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @classmethod
    def from_module(cls, module: nn.Module) -> ReluMLP:
        """Read an nn.Sequential of Linear layers separated by ReLUs (Flatten allowed)."""
        layers = [m for m in module.modules() if not isinstance(m, nn.Sequential)]
        if isinstance(module, nn.Linear):
            layers = [module]
        weights, biases, expect_linear = [], [], True
        for m in layers:
            if isinstance(m, nn.Flatten | nn.Identity):
                continue
            if isinstance(m, nn.Linear) and expect_linear:
                weights.append(m.weight.detach().double().numpy().copy())
                b = m.bias.detach().double().numpy().copy() if m.bias is not None else None
                biases.append(b if b is not None else np.zeros(m.out_features))
                expect_linear = False
            elif isinstance(m, nn.ReLU) and not expect_linear:
                expect_linear = True
            else:
                raise ConfigError(
                    "local Lipschitz needs a ReLU MLP (Linear, ReLU, ..., Linear); found "
                    f"{type(m).__name__}"
                )
        if not weights or expect_linear:
            raise ConfigError("local Lipschitz needs a ReLU MLP ending in a Linear layer")
        return cls(tuple(weights), tuple(biases))

    @property
    def in_dim(self) -> int:
        return self.weights[0].shape[1]

    @property
    def out_dim(self) -> int:
        return self.weights[-1].shape[0]

    def forward(self, x: np.ndarray) -> np.ndarray:
        """f(x) for a batch (N, in_dim)."""
        h = np.atleast_2d(x)
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            h = h @ w.T + b
            if i < len(self.weights) - 1:
                h = np.maximum(h, 0.0)
        return h

    def jacobians(self, x: np.ndarray) -> np.ndarray:
        """Jacobians (N, out, in) with the activation pattern z > 0 at each point."""
        h = np.atleast_2d(x)
        jac = np.broadcast_to(np.eye(self.in_dim), (len(h), self.in_dim, self.in_dim))
        for i, (w, b) in enumerate(zip(self.weights, self.biases, strict=True)):
            z = h @ w.T + b
            jac = np.einsum("oi,nij->noj", w, jac)
            if i < len(self.weights) - 1:
                on = (z > 0).astype(np.float64)
                jac = jac * on[:, :, None]
                h = z * on
        return jac


def check_box(net: ReluMLP, center: np.ndarray, radius: Radius) -> np.ndarray:
    """The centre as float64 (in_dim,); refuse a bad radius or a centre of the wrong size.
    A radius is a scalar (an l_inf ball) or one half-width per coordinate (a box)."""
    c = np.asarray(center, dtype=np.float64).reshape(-1)
    if c.shape[0] != net.in_dim:
        raise ConfigError(
            f"box centre has {c.shape[0]} coordinates, the network takes {net.in_dim}"
        )
    r = np.asarray(radius, dtype=np.float64)
    if r.ndim > 1 or (r.ndim == 1 and r.shape[0] != c.shape[0]):
        raise ConfigError(f"box radius must be a scalar or one per coordinate ({c.shape[0]})")
    if not (np.all(r >= 0) and np.all(np.isfinite(r))) or not np.all(np.isfinite(c)):
        raise ConfigError(f"box radius must be finite and >= 0 (got {radius}), centre finite")
    return c


def operator_norms(jac: np.ndarray, out_norm: OutNorm) -> np.ndarray:
    """||J||_{inf -> out} for a batch of Jacobians (N, k, n), computed exactly."""
    if out_norm == "linf":
        return np.abs(jac).sum(-1).max(-1)
    k = jac.shape[1]
    if k > _ENUM_MAX_K:
        raise ConfigError(f"exact inf->l1 norms enumerate 2^k sign vectors; k={k} is too large")
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=k)))[: 2 ** (k - 1)]  # +-c same
    return np.abs(np.einsum("ck,nkj->ncj", signs, jac)).sum(-1).max(-1)


def interval_preactivation_bounds(
    net: ReluMLP, center: np.ndarray, radius: Radius
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval-arithmetic bounds [l, u] on every hidden layer's pre-activation over the box."""
    lo, hi = center - radius, center + radius
    out = []
    for w, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        mid, rad = (lo + hi) / 2, (hi - lo) / 2
        zm, zr = w @ mid + b, np.abs(w) @ rad
        out.append((zm - zr, zm + zr))
        lo, hi = np.maximum(zm - zr, 0.0), np.maximum(zm + zr, 0.0)
    return out


def _relu_relaxation(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """Linear bounds s_l z <= relu(z) <= s_u z + t_u on [lo, hi] (DeepPoly's triangle)."""
    on, off = lo >= 0, hi <= 0
    unstable = ~(on | off)
    width = np.where(unstable, hi - lo, 1.0)
    s_u = np.where(on, 1.0, np.where(unstable, hi / width, 0.0))
    t_u = np.where(unstable, -lo * hi / width, 0.0)
    s_l = np.where(on, 1.0, np.where(unstable, (hi > -lo).astype(np.float64), 0.0))
    return s_l, s_u, t_u


def preactivation_bounds(
    net: ReluMLP, center: np.ndarray, radius: Radius
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Sound bounds [l, u] on every hidden pre-activation over the box: interval arithmetic
    intersected with linear back-substitution through the triangle relaxations of earlier
    ReLUs (DeepPoly / CROWN, Singh et al. 2019, Zhang et al. 2018). Tighter bounds mean
    fewer unstable neurons and smaller big-M constants, hence faster MILPs; both are sound
    over-approximations of the exact pre-activation range, so exactness is unaffected."""
    ibp = interval_preactivation_bounds(net, center, radius)
    out: list[tuple[np.ndarray, np.ndarray]] = []
    for m, (w, b) in enumerate(zip(net.weights[:-1], net.biases[:-1], strict=True)):
        bounds = []
        for sign in (1.0, -1.0):  # sign=+1: upper bound of z; -1: upper bound of -z
            lam, const = sign * w, sign * b
            for k in range(m - 1, -1, -1):
                s_l, s_u, t_u = _relu_relaxation(*out[k])
                pos, neg = np.maximum(lam, 0.0), np.minimum(lam, 0.0)
                const = const + pos @ t_u
                lam = pos * s_u + neg * s_l
                const = const + lam @ net.biases[k]
                lam = lam @ net.weights[k]
            bounds.append(
                lam @ center + const + np.abs(lam) @ np.broadcast_to(radius, center.shape)
            )
        hi_lin, lo_lin = bounds[0], -bounds[1]
        lo = np.maximum(ibp[m][0], lo_lin)
        hi = np.minimum(ibp[m][1], hi_lin)
        out.append((lo, np.maximum(hi, lo)))
    return out


def _backward_start(
    net: ReluMLP, out_norm: OutNorm, symmetric: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds on v = W_L^T c for c in the dual ball of the output norm (with `symmetric`,
    for c in [-1, 1]^k with c_0 = 1: see `build_milp`)."""
    w = net.weights[-1]
    if symmetric and out_norm == "l1":
        rest = np.abs(w[1:]).sum(0)
        return w[0] - rest, w[0] + rest
    r = np.abs(w).sum(0) if out_norm == "l1" else np.abs(w).max(0)
    return -r, r


def _interval_matvec_t(w: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, ...]:
    """Bounds on w^T p for p in [lo, hi]."""
    mid, rad = (lo + hi) / 2, (hi - lo) / 2
    return w.T @ mid - np.abs(w).T @ rad, w.T @ mid + np.abs(w).T @ rad


def _masked(
    lo: np.ndarray, hi: np.ndarray, zl: np.ndarray, zu: np.ndarray
) -> tuple[np.ndarray, ...]:
    """Bounds on a * v: stable-off neurons give 0, stable-on v, unstable the hull with 0."""
    on, off = zl >= 0, zu <= 0
    unstable = ~(on | off)
    plo = np.where(on, lo, np.where(unstable, np.minimum(lo, 0.0), 0.0))
    phi = np.where(on, hi, np.where(unstable, np.maximum(hi, 0.0), 0.0))
    return plo, phi


def backward_bounds(
    net: ReluMLP,
    pre: list[tuple[np.ndarray, np.ndarray]],
    out_norm: OutNorm,
    symmetric: bool = False,
) -> tuple[list[tuple[np.ndarray, np.ndarray]], tuple[np.ndarray, np.ndarray]]:
    """Interval bounds on the backward values v_l (gradient w.r.t. each hidden layer's
    output, top layer first) and on the input gradient g."""
    vs = []
    lo, hi = _backward_start(net, out_norm, symmetric)
    for layer in range(len(net.weights) - 2, -1, -1):
        vs.append((lo, hi))
        plo, phi = _masked(lo, hi, *pre[layer])
        lo, hi = _interval_matvec_t(net.weights[layer], plo, phi)
    return vs, (lo, hi)


def upper_bound(
    net: ReluMLP, center: np.ndarray, radius: Radius, out_norm: OutNorm = "l1"
) -> float:
    """A cheap sound upper bound on L(f, box): the smaller of the interval backward bound
    and the product of per-layer operator norms with stable-off neurons removed."""
    c = check_box(net, center, radius)
    pre = preactivation_bounds(net, c, radius)
    _, (glo, ghi) = backward_bounds(net, pre, out_norm)
    interval = float(np.maximum(np.abs(glo), np.abs(ghi)).sum())
    # ||W_L D_{L-1} ... D_1 W_1||_{inf->out} <= ||W_L P||_{inf->out} prod ||P W_l P'||_{inf->inf}
    # with P the projection onto neurons that are not stable-off (0 <= D <= P).
    alive = [zu > 0 for _, zu in pre]
    prod = 1.0
    for layer, w in enumerate(net.weights[:-1]):
        rows = w[alive[layer]]
        if layer > 0:
            rows = rows[:, alive[layer - 1]]
        prod *= float(np.abs(rows).sum(1).max()) if rows.size else 0.0
    top = net.weights[-1][:, alive[-1]] if alive else net.weights[-1]
    if top.size:
        k = top.shape[0]
        top_norm = (
            float(operator_norms(top[None], out_norm)[0])
            if out_norm == "linf" or k <= _ENUM_MAX_K
            else float(np.abs(top).sum())
        )
    else:
        top_norm = 0.0
    return min(interval, top_norm * prod) * (1 + SAFETY)


def sampled_norms(
    net: ReluMLP,
    center: np.ndarray,
    radius: float,
    n: int,
    generator: np.random.Generator,
    out_norm: OutNorm = "l1",
) -> tuple[np.ndarray, np.ndarray]:
    """Jacobian norms at the centre, at corners and at uniform points of the box, with each
    point's l_inf distance from the centre. Each norm is a lower bound on L(f, box') for any
    box' around `center` of radius >= that distance (the point lies in it)."""
    c = check_box(net, center, radius)
    corners = np.sign(generator.uniform(-1, 1, size=(n // 2, len(c))))
    uniform = generator.uniform(-1, 1, size=(n - n // 2, len(c)))
    scale = generator.uniform(0, 1, size=(n, 1))  # spread over radii, for reuse across boxes
    offsets = np.concatenate([corners, uniform]) * scale * radius
    points = np.concatenate([c[None], c + offsets])
    dist = np.concatenate([[0.0], np.abs(offsets).max(1)])
    return dist, operator_norms(net.jacobians(points), out_norm)


def lower_bound(
    net: ReluMLP,
    center: np.ndarray,
    radius: float,
    out_norm: OutNorm = "l1",
    n: int = 64,
    seed: int = 0,
) -> float:
    """A sound lower bound on L(f, box): the largest sampled Jacobian norm."""
    _, norms = sampled_norms(net, center, radius, n, np.random.default_rng(seed), out_norm)
    return float(norms.max())


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
        plo, phi = _masked(vlo, vhi, zl, zu)
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
    method: str  # "milp", "patterns", "bounds" (cheap bounds settled it)
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
    solver: str = "auto",
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
    (bench.certify.lipschitz.patterns), exact and far faster on small nets; "auto" uses the
    pattern search when the box leaves at most PATTERN_MAX_FREE neurons unstable, else the
    MILP with the c_0 = 1 symmetry fixed. `node_limit` applies to the MILP only."""
    if method not in METHODS:
        raise ConfigError(f"local Lipschitz method must be one of {METHODS}, got {method!r}")
    c = check_box(net, center, radius)
    ub = upper_bound(net, c, radius, out_norm)
    lb = lower_bound(net, c, radius, out_norm, n=samples, seed=seed)
    if ub <= lb * (1 + 2 * SAFETY) or not np.any(np.asarray(radius) > 0):
        return LipschitzResult(ub, lb, True, "bounds")
    if threshold is not None and (ub <= threshold or lb > threshold):
        return LipschitzResult(ub, lb, False, "bounds")
    if method == "patterns" or (method == "auto" and _patterns_fit(net, c, radius, out_norm)):
        from bench.certify.lipschitz.patterns import exact_by_patterns  # imports this module

        found = exact_by_patterns(
            net, c, radius, out_norm, time_limit=time_limit, threshold=threshold, floor=lb
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
    result = build_milp(net, c, radius, out_norm, symmetric=method == "auto").solve(
        time_limit=time_limit, solver=solver, threshold=threshold, node_limit=node_limit
    )
    return _from_milp(result, ub, lb, net.in_dim)


def _patterns_fit(net: ReluMLP, center: np.ndarray, radius: Radius, out_norm: OutNorm) -> bool:
    """Whether the pattern search suits this box: few unstable neurons, few outputs."""
    if out_norm == "l1" and net.out_dim > _ENUM_MAX_K:
        return False
    pre = preactivation_bounds(net, center, radius)
    return sum(int(((lo < 0) & (hi > 0)).sum()) for lo, hi in pre) <= PATTERN_MAX_FREE


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
