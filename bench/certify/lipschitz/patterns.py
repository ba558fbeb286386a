"""Exact local Lipschitz constants of small ReLU MLPs by a best-first search over
activation patterns, the MILP's equal and, on LipMIP's shapes, much faster.

Why: LipMIP's MILP (`local.build_milp`) branches on ReLU gates, on output signs and on the
signs of the gradient, and its LP relaxation is weak, so a net with 16 hidden neurons can
take thousands of nodes. Here the Jacobian norm of every pattern is computed exactly and
in bulk (numpy), and only reachability needs an LP.

What it computes (the same quantity as the MILP). f is piecewise linear; the MILP's value
is the largest ||J_sigma||_{inf -> out} over the activation patterns sigma whose closed
linear piece {x in B : z_j(x) >= 0 for gates on, <= 0 for gates off} is non-empty
(LipMIP, Jordan & Dimakis 2020, Thm 3/4: this is L(f, B) for a net in general position,
and an upper bound on it always). Neurons that certified pre-activation bounds prove
stable on a box agree with every such pattern.

Search. The box is split (best-first, largest bound first) until a part has at most
`max_free` unstable neurons. In a part, the 2^F patterns of its F unstable neurons
(ordered by layer, so a pattern prefix fixing layer l makes layer l+1's pre-activations
affine in x) are scored; a prefix's bound is the largest score of its completions, a
contiguous block of the sorted-by-bits score array. Prefixes are expanded best-first and
each one is kept only if an LP finds x in the part with its fixed gates' signs. The first
complete pattern popped is the part's exact maximum; parts whose bound cannot beat the best
value found are skipped. Every bound used is sound: an unexplored part is bounded by the
interval backward bound or by its unreachability-ignoring pattern maximum, both >= L there.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from dataclasses import dataclass

import numpy as np

from bench.certify.lipschitz.relu import (
    SAFETY,
    OutNorm,
    Radius,
    ReluMLP,
    backward_bounds,
    check_box,
    operator_norms,
    preactivation_bounds,
)
from bench.certify.lipschitz.split import halve, pattern_masks

MARGIN_TOL = 1e-9  # an LP margin within +-tol counts as touching the piece
CHUNK = 4096  # patterns scored per batch (memory: CHUNK x 2^(k-1) x n floats)
PATTERN_MAX_FREE = 16  # local_lipschitz "auto": at most 2^16 patterns scored in bulk
SAMPLES = 256  # random points of a part whose gate prefixes need no LP


@dataclass(frozen=True)
class PatternSearchResult:
    """`upper` is certified; `lower` is the norm of a pattern whose piece has an interior
    point in the box (attained); `exact` when the search finished."""

    upper: float
    lower: float
    exact: bool
    status: str  # "optimal", "decided" (threshold settled), "time_limit", "work_limit"
    parts: int  # boxes bounded
    lps: int  # reachability LPs solved
    seconds: float


class _Part:
    """One box: certified pre-activation bounds, its unstable neurons and pattern scores."""

    def __init__(self, net: ReluMLP, lo: np.ndarray, hi: np.ndarray) -> None:
        self.lo, self.hi = lo, hi
        self.pre = preactivation_bounds(net, (lo + hi) / 2, (hi - lo) / 2)
        self.free = [
            (layer, int(j))
            for layer, (zl, zu) in enumerate(self.pre)
            for j in np.flatnonzero((zl < 0) & (zu > 0))
        ]
        self.free_set = set(self.free)
        self.scores: np.ndarray | None = None
        self.masks: list[np.ndarray] = []

    def bound(self, net: ReluMLP, out_norm: OutNorm, max_free: int) -> float:
        """A sound upper bound on L over the part; scores its patterns when few are free."""
        if len(self.free) <= max_free:
            self._score(net, out_norm)
            assert self.scores is not None
            return float(self.scores.max())
        _, (glo, ghi) = backward_bounds(net, self.pre, out_norm)
        return float(np.maximum(np.abs(glo), np.abs(ghi)).sum())

    def exact_norm(self, net: ReluMLP, pattern: int, out_norm: OutNorm) -> float:
        """||J_sigma|| in float64 for one scored pattern."""
        jac = net.weights[0]
        for layer, w in enumerate(net.weights[1:]):
            jac = w @ (jac * self.masks[layer][pattern][:, None])
        return float(operator_norms(jac[None], out_norm)[0])

    def _score(self, net: ReluMLP, out_norm: OutNorm) -> None:
        """||J_sigma|| for every pattern of the free neurons (bit i of p: free neuron i, most
        significant first), so a prefix's completions form one contiguous block."""
        count = 2 ** len(self.free)
        masks = pattern_masks(self.pre, self.free)
        scores = np.empty(count)
        for lo in range(0, count, CHUNK):
            hi = min(count, lo + CHUNK)
            # J^T = W_1^T D_1 W_2^T D_2 ... W_L^T, built from the input side as (N, n, .)
            jac_t = net.weights[0].T * masks[0][lo:hi, None, :]
            for layer, w in enumerate(net.weights[1:], start=1):
                jac_t = jac_t @ w.T
                if layer < len(masks):
                    jac_t = jac_t * masks[layer][lo:hi, None, :]
            jac = jac_t.transpose(0, 2, 1)
            scores[lo:hi] = _norm_bounds(jac, out_norm)
        self.masks, self.scores = masks, scores


class _ReachLP:
    """The reachability LP of one part, kept in one HiGHS instance: variables x, the hidden
    outputs y that feed a later hidden layer, and a margin s. Per free neuron: an "on" row
    (z - s >= 0), an "off" row (z + s <= 0) and, where y is used later, a row y = z. Fixing a
    gate switches its rows on through their bounds (and y's to 0 when off), so successive
    LPs differ only in bounds and warm-start. An unfixed gate leaves y free in [0, u]: every
    x that gives the fixed gates their signs is still feasible (with y = relu(z)), so an
    infeasible LP refutes the prefix, and the layer order of `free` makes every active row
    exact in x once the gates before it are fixed."""

    def __init__(self, net: ReluMLP, part: _Part) -> None:
        import highspy

        self._hs = highspy
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        inf = highspy.kHighsInf
        self.n = n = len(part.lo)
        hidden = len(part.pre)
        col_lo, col_hi = [part.lo], [part.hi]
        y_cols: list[np.ndarray] = []
        for layer in range(hidden - 1):  # the last hidden layer's outputs feed no gate
            zu = part.pre[layer][1]
            y_cols.append(np.arange(n, n + len(zu)) + sum(len(y) for y in y_cols))
            col_lo.append(np.zeros(len(zu)))
            col_hi.append(np.maximum(zu, 0.0))
        s_col = n + sum(len(y) for y in y_cols)
        lo, hi = np.concatenate([*col_lo, [-1.0]]), np.concatenate([*col_hi, [1.0]])
        cost = np.zeros(len(lo))
        cost[s_col] = 1.0
        h.addCols(len(lo), cost, lo, hi, 0, [], [], [])
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        rows = 0

        def add_row(lo_: float, hi_: float, idx: np.ndarray, val: np.ndarray) -> int:
            nonlocal rows
            h.addRow(lo_, hi_, len(idx), idx.astype(np.int32), val)
            rows += 1
            return rows - 1

        on_row, off_row, def_row, bias, y_col, y_hi = [], [], [], [], [], []
        for layer in range(hidden):
            w, b = net.weights[layer], net.biases[layer]
            zl, zu = part.pre[layer]
            src = np.arange(n) if layer == 0 else y_cols[layer - 1]
            for j in range(len(b)):
                free = (layer, j) in part.free_set
                defines = layer < hidden - 1 and (free or zl[j] >= 0)
                if defines:  # y - w.src = b: always for a stable-on gate, while on if free
                    bounds = (-inf, inf) if free else (b[j], b[j])
                    idx = np.append(src, y_cols[layer][j])
                    row = add_row(*bounds, idx, np.append(-w[j], 1.0))
                if not free:
                    continue
                idx = np.append(src, s_col)
                on_row.append(add_row(-inf, inf, idx, np.append(w[j], -1.0)))  # >= -b when on
                off_row.append(add_row(-inf, inf, idx, np.append(w[j], 1.0)))  # <= -b when off
                def_row.append(row if defines else -1)
                bias.append(b[j])
                y_col.append(int(y_cols[layer][j]) if layer < hidden - 1 else -1)
                y_hi.append(max(float(zu[j]), 0.0))
        self.h, self.inf, self.keys = h, inf, list(part.free)
        self.on_row, self.off_row = np.array(on_row), np.array(off_row)
        self.def_row, self.bias = np.array(def_row), np.array(bias)
        self.y_col, self.y_hi = np.array(y_col, dtype=np.int32), np.array(y_hi)

    def margin(self, fixed: dict[tuple[int, int], bool]) -> tuple[float, np.ndarray | None]:
        """max s over x in the part with each fixed gate's pre-activation on its side by s,
        and the maximiser x (None when even s = -1 is infeasible)."""
        h, inf = self.h, self.inf
        state = np.array([fixed.get(key, 2) for key in self.keys], dtype=np.int64)
        on, off = state == 1, state == 0
        defined = on & (self.def_row >= 0)
        rows = np.concatenate([self.on_row, self.off_row, self.def_row[self.def_row >= 0]])
        lo = np.concatenate(
            [
                np.where(on, -self.bias, -inf),
                np.full(len(off), -inf),
                np.where(defined, self.bias, -inf)[self.def_row >= 0],
            ]
        )
        hi = np.concatenate(
            [
                np.full(len(on), inf),
                np.where(off, -self.bias, inf),
                np.where(defined, self.bias, inf)[self.def_row >= 0],
            ]
        )
        h.changeRowsBounds(len(rows), rows.astype(np.int32), lo, hi)
        has_y = self.y_col >= 0
        h.changeColsBounds(
            int(has_y.sum()),
            self.y_col[has_y],
            np.zeros(int(has_y.sum())),
            np.where(off, 0.0, self.y_hi)[has_y],
        )
        h.run()
        status = h.getModelStatus()
        if status == self._hs.HighsModelStatus.kInfeasible:
            return -1.0, None  # infeasible even at s = -1: the closed region misses the part
        if status != self._hs.HighsModelStatus.kOptimal:
            return 0.0, None  # no answer: keep the block (not refuted), claim no interior point
        x = np.asarray(h.getSolution().col_value[: self.n])
        return float(h.getInfo().objective_function_value), x


def _search_part(
    net: ReluMLP,
    part: _Part,
    floor: float,
    deadline: float,
    out_norm: OutNorm,
    max_lps: float = math.inf,
) -> tuple[float, float, int, bool]:
    """Best-first over pattern prefixes of one scored part, solving at most `max_lps`
    reachability LPs. Returns (upper, attained, lps, finished): `upper` bounds L over the
    part (<= floor when nothing beats it), `attained` the best exact norm of a pattern with
    an interior point (0 if none)."""
    assert part.scores is not None
    scores, free = part.scores, part.free
    total = len(free)
    counter = itertools.count()
    # entries: (-bound, tie, prefix, depth); depth total + 1 marks a re-scored full pattern
    heap: list[tuple[float, int, int, int]] = [(-float(scores.max()), next(counter), 0, 0)]
    lps, attained = 0, 0.0
    interior: dict[int, bool] = {0: True} if total == 0 else {}  # no free gate: one piece
    reach = _ReachLP(net, part)
    rng = np.random.default_rng(0)
    probes = rng.uniform(part.lo, part.hi, size=(SAMPLES, len(part.lo)))
    seen = _strict_prefixes(net, part, probes)
    while heap:
        neg, _, prefix, depth = heap[0]
        if -neg <= max(floor, attained):
            return max(floor, attained), attained, lps, True
        if time.perf_counter() > deadline or lps >= max_lps:
            return -neg, attained, lps, False  # the open heap's top bounds the rest: sound
        heapq.heappop(heap)
        if depth == total + 1:  # its exact norm beats every other bound: the part's maximum
            return -neg, attained, lps, True
        if depth == total:  # reachable: replace the fast bound by the exact float64 norm
            exact = part.exact_norm(net, prefix, out_norm)
            if interior[prefix]:
                attained = max(attained, exact)
            heapq.heappush(heap, (-exact, next(counter), prefix, total + 1))
            continue
        for bit in (0, 1):
            child, d = (prefix << 1) | bit, depth + 1
            top = float(scores[child << (total - d) : (child + 1) << (total - d)].max())
            if top <= max(floor, attained):
                continue
            if (d, child) in seen:  # a point of the part has these gates strictly: reachable
                margin = 1.0
            else:
                fixed = {free[i]: bool((child >> (d - 1 - i)) & 1) for i in range(d)}
                margin, point = reach.margin(fixed)
                lps += 1
                if point is not None:
                    seen.update(_strict_prefixes(net, part, point[None]))
            if margin < -MARGIN_TOL:
                continue  # no x in the part gives these gates: the whole block is unreachable
            if d == total:
                interior[child] = margin > MARGIN_TOL
            heapq.heappush(heap, (-top, next(counter), child, d))
    return max(floor, attained), attained, lps, True


def _norm_bounds(jac: np.ndarray, out_norm: OutNorm) -> np.ndarray:
    """Sound upper bounds on ||J||_{inf -> out} for a batch (N, k, n), fast: the l1 norm is
    the largest ||J^T c||_1 over sign vectors c with c_0 = +1 (c and -c agree), computed in
    float32 by one GEMM and widened by the standard rounding-error bound of an inner
    product of length m, gamma_m = m u / (1 - m u), u = 2^-24 (Higham, Accuracy and
    Stability, Thm 3.5): |fl(c.J_j) - c.J_j| <= gamma_{k+1} sum_i |J_ij| (the +1 for
    rounding J), and the sum over j adds a relative gamma_n. Callers re-score a winner in
    float64 (`operator_norms`) before reporting it."""
    n_pat, k, n_in = jac.shape
    if out_norm == "linf" or k > 14:
        return operator_norms(jac, out_norm) * (1 + 1e-12)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=k - 1)), dtype=np.float32)
    signs = np.hstack([np.ones((len(signs), 1), dtype=np.float32), signs])
    flat = np.ascontiguousarray(jac.transpose(1, 0, 2), dtype=np.float32).reshape(k, -1)
    prod = signs @ flat  # (2^(k-1), k) x (k, N n)
    np.abs(prod, out=prod)
    # the sum over j as a matrix-vector product: far faster than a reduction over 8 entries
    approx = (
        (prod.reshape(-1, n_in) @ np.ones(n_in, dtype=np.float32)).reshape(len(signs), n_pat).max(0)
    )
    u = 2.0**-24
    gamma = lambda m: m * u / (1 - m * u)  # noqa: E731
    mass = np.abs(jac).sum((1, 2))
    return (approx.astype(np.float64) + gamma(k + 1) * mass) * (1 + gamma(n_in)) * (1 + 4 * u)


def _strict_prefixes(net: ReluMLP, part: _Part, points: np.ndarray) -> set[tuple[int, int]]:
    """(depth, prefix) of every free-gate prefix that some point has strictly (each fixed
    pre-activation at least MARGIN_TOL away from 0): such prefixes are reachable."""
    zs, h = [], points
    for w, b in zip(net.weights[:-1], net.biases[:-1], strict=True):
        z = h @ w.T + b
        zs.append(z)
        h = np.maximum(z, 0.0)
    out: set[tuple[int, int]] = set()
    for z_row in range(len(points)):
        prefix = 0
        for d, (layer, j) in enumerate(part.free, start=1):
            z = zs[layer][z_row, j]
            if abs(z) <= MARGIN_TOL:
                break
            prefix = (prefix << 1) | int(z > 0)
            out.add((d, prefix))
    return out


def exact_by_patterns(
    net: ReluMLP,
    center: np.ndarray,
    radius: Radius,
    out_norm: OutNorm = "l1",
    *,
    time_limit: float | None = None,
    threshold: float | None = None,
    max_free: int = PATTERN_MAX_FREE,
    floor: float = 0.0,
    work_limit: int | None = None,
) -> PatternSearchResult:
    """L(f, box) exactly (see the module docstring). `floor` is a known attained value (e.g.
    a sampled Jacobian norm) used to prune; with `threshold`, stop once L <= t or L > t is
    certified; with `time_limit` (seconds) or `work_limit` (parts bounded plus reachability
    LPs solved: the same stop on every machine), stop with the certified bounds reached so
    far (status "time_limit" / "work_limit": `upper` is still sound, `exact` False)."""
    start = time.perf_counter()
    deadline = start + (time_limit if time_limit is not None else math.inf)
    c = check_box(net, center, radius)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), c.shape)
    best, touching, parts, lps = float(floor), 0.0, 0, 0
    counter = itertools.count()
    heap: list[tuple[float, int, _Part]] = []

    def push(lo: np.ndarray, hi: np.ndarray) -> None:
        nonlocal parts
        parts += 1
        part = _Part(net, lo, hi)
        heapq.heappush(heap, (-part.bound(net, out_norm, max_free), next(counter), part))

    def result(upper: float, status: str) -> PatternSearchResult:
        upper = max(upper, best) * (1 + SAFETY)
        done = status == "optimal" and upper <= best * (1 + 3 * SAFETY)
        return PatternSearchResult(
            upper, best, done, status, parts, lps, time.perf_counter() - start
        )

    budget = math.inf if work_limit is None else work_limit
    push(c - r, c + r)
    while heap:
        top = max(-heap[0][0], touching)
        if top <= best:
            return result(top, "optimal")
        if threshold is not None and (top <= threshold or best > threshold):
            return result(top, "decided")
        if time.perf_counter() > deadline:
            return result(top, "time_limit")
        if parts + lps >= budget:
            return result(top, "work_limit")
        _, _, part = heapq.heappop(heap)
        if part.scores is None:  # too many unstable neurons: split the box first
            for lo, hi in halve(net, part.lo, part.hi):
                push(lo, hi)
            continue
        upper, attained, used, finished = _search_part(
            net, part, best, deadline, out_norm, budget - parts - lps
        )
        lps += used
        best = max(best, attained)
        if not finished:
            heapq.heappush(heap, (-upper, next(counter), part))
            status = "work_limit" if parts + lps >= budget else "time_limit"
            return result(max(upper, -heap[0][0]), status)
        touching = max(touching, upper)  # > best only if the top piece meets the part
        # on its boundary alone: the MILP's value, but not attained at an interior point
    return result(max(best, touching), "optimal")
