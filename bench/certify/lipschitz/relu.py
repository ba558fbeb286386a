"""ReLU MLPs over l_inf boxes: the network, exact operator norms of Jacobians, certified
pre-activation and backward (gradient) bounds, and cheap sound bounds on the local
Lipschitz constant. The exact methods build on these: LipMIP's MILP (local.py) and the
activation-pattern search (patterns.py).

Operator norms ||J||_{inf -> out} (the l_1 norm of the gradient is the dual of the l_inf
input norm): "l1" (what a Laplace release needs: l_1 sensitivity) is
max_{c in {-1,1}^k} ||J^T c||_1; "linf" (LipMIP's 'l1Ball1' option, which the Posthoc
reference code used by mistake) is max_j ||grad f_j||_1.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Literal

import numpy as np
from torch import nn

from bench.core.errors import ConfigError

OutNorm = Literal["l1", "linf"]
OUT_NORMS = ("l1", "linf")
Radius = float | np.ndarray  # an l_inf ball, or one half-width per coordinate (a box)
ENUM_MAX_K = 14  # exact ||.||_{inf->1} by enumerating sign vectors up to this output size
SAFETY = 1e-6  # relative padding on solver bounds: integrality / feasibility tolerances


@dataclass(frozen=True)
class ReluMLP:
    """Weights (out x in) and biases of a fully connected ReLU network, in float64."""

    weights: tuple[np.ndarray, ...]
    biases: tuple[np.ndarray, ...]

    @classmethod
    def from_module(cls, module: nn.Module) -> ReluMLP:
        """Read an nn.Sequential of Linear layers separated by ReLUs (Flatten allowed); the
        weights are copied to the CPU (float64 numpy), where the MILPs are solved."""
        layers = [m for m in module.modules() if not isinstance(m, nn.Sequential)]
        if isinstance(module, nn.Linear):
            layers = [module]
        weights, biases, expect_linear = [], [], True
        for m in layers:
            if isinstance(m, nn.Flatten | nn.Identity):
                continue
            if isinstance(m, nn.Linear) and expect_linear:
                weights.append(m.weight.detach().cpu().double().numpy().copy())
                b = m.bias.detach().cpu().double().numpy().copy() if m.bias is not None else None
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
    if k > ENUM_MAX_K:
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


def masked_bounds(
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
        plo, phi = masked_bounds(lo, hi, *pre[layer])
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
            if out_norm == "linf" or k <= ENUM_MAX_K
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
