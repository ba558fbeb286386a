"""Decide "L(f, box) <= t?" for a small ReLU MLP by splitting the input box (sound).

Why: PTR asks one yes/no question per query. For the Posthoc obfuscators (8 inputs, two
hidden layers of 8) a best-first split of the input box usually settles it in a few
hundred cheap steps, far faster than the MILP, and the MILP stays as the fallback.

Soundness. f is piecewise linear; over a box B, L(f, B) (l_inf -> out) is the largest
||J_sigma|| over the activation patterns sigma whose linear piece meets B's interior
(LipMIP, Jordan & Dimakis 2020, §3). Every such pattern agrees with the neurons that
certified pre-activation bounds (DeepPoly) prove stable on B; a pattern whose closed piece
misses B (an LP over x, the pre-activations being affine in x once the pattern is fixed)
is refuted; the largest norm left, or the interval backward bound, bounds L(f, B) from
above. L(f, B) = max over a split's parts, so "every leaf's bound <= t" certifies L <= t.
A Jacobian norm > t at a point of B certifies L > t. The search stops undecided (None)
when its box budget runs out: never a guess.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog

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


@dataclass(frozen=True)
class SplitDecision:
    """`below`: True (L <= t certified), False (L > t certified), None (budget ran out).
    `upper` is a certified upper bound on L (inf if none below t was shown), `witness` the
    largest Jacobian norm seen at a point of the box (a lower bound), `boxes` the work."""

    below: bool | None
    upper: float
    witness: float
    boxes: int


@dataclass(frozen=True)
class Patterns:
    """Every activation pattern that agrees with the stable neurons of a box: the unstable
    neurons `free` ((layer, index) pairs), one 0/1 mask per hidden layer and pattern, and
    each pattern's Jacobian norm ||J_sigma|| (l_inf -> out)."""

    free: list[tuple[int, int]]
    masks: list[np.ndarray]  # per hidden layer: (patterns, width)
    norms: np.ndarray  # (patterns,)


def box_patterns(
    net: ReluMLP, pre: list[tuple[np.ndarray, np.ndarray]], out_norm: OutNorm, max_free: int
) -> Patterns | None:
    """The patterns of a box with certified pre-activation bounds `pre`; None when more
    than `max_free` neurons are unstable (2^max_free patterns is the cost)."""
    free = [
        (layer, int(j))
        for layer, (lo, hi) in enumerate(pre)
        for j in np.flatnonzero((lo < 0) & (hi > 0))
    ]
    if len(free) > max_free:
        return None
    count = 2 ** len(free)
    masks = pattern_masks(pre, free)
    jac = np.broadcast_to(net.weights[0], (count, *net.weights[0].shape))
    for layer, w in enumerate(net.weights[1:]):
        jac = np.einsum("oi,pij->poj", w, jac * masks[layer][:, :, None])
    return Patterns(free, masks, operator_norms(jac, out_norm))


def pattern_masks(
    pre: list[tuple[np.ndarray, np.ndarray]], free: list[tuple[int, int]]
) -> list[np.ndarray]:
    """Per hidden layer, the 0/1 gate masks (2^len(free), width) of every pattern of the
    unstable neurons `free`: pattern p sets the i-th to bit i of p, most significant first
    (so a prefix's completions form one contiguous block); stable neurons as `pre` says."""
    count = 2 ** len(free)
    masks = [np.repeat((lo >= 0)[None].astype(np.float64), count, 0) for lo, _ in pre]
    bits = (np.arange(count)[:, None] >> np.arange(len(free))[::-1]) & 1
    for i, (layer, j) in enumerate(free):
        masks[layer][:, j] = bits[:, i]
    return masks


def halve(net: ReluMLP, lo: np.ndarray, hi: np.ndarray) -> tuple[tuple[np.ndarray, ...], ...]:
    """The box [lo, hi] cut in two across the coordinate whose width moves the first
    layer's pre-activations most."""
    axis = int(np.argmax((hi - lo) * np.abs(net.weights[0]).sum(0)))
    middle = (lo[axis] + hi[axis]) / 2
    left_hi, right_lo = hi.copy(), lo.copy()
    left_hi[axis], right_lo[axis] = middle, middle
    return (lo, left_hi), (right_lo, hi)


def pattern_bound(
    net: ReluMLP, pre: list[tuple[np.ndarray, np.ndarray]], out_norm: OutNorm, max_free: int
) -> float | None:
    """max ||J_sigma|| over every pattern agreeing with the stable neurons (reachable or
    not): an upper bound on L over the box; None when too many neurons are unstable."""
    pats = box_patterns(net, pre, out_norm, max_free)
    return None if pats is None else float(pats.norms.max()) * (1 + SAFETY)


def interior_margin(
    net: ReluMLP, pats: Patterns, p: int, lo: np.ndarray, hi: np.ndarray
) -> tuple[float, np.ndarray | None]:
    """max s such that some x in [lo, hi] has every unstable neuron's pre-activation on the
    side pattern p gives it by at least s (an LP: pre-activations are affine in x once the
    pattern is fixed). s > 0: the pattern's linear piece meets the box's interior; s < 0:
    it does not meet the box at all."""
    rows, rhs = [], []
    a, c = np.eye(len(lo)), np.zeros(len(lo))
    wanted = {key: pats.masks[key[0]][p, key[1]] for key in pats.free}
    for layer, (w, b) in enumerate(zip(net.weights[:-1], net.biases[:-1], strict=True)):
        za, zc = w @ a, w @ c + b
        for (lay, j), on in wanted.items():
            if lay == layer:  # on: z >= s  <=>  -z + s <= 0;  off: z <= -s  <=>  z + s <= 0
                sign = -1.0 if on else 1.0
                rows.append(np.append(sign * za[j], 1.0))
                rhs.append(-sign * zc[j])
        mask = pats.masks[layer][p]
        a, c = za * mask[:, None], zc * mask
    res = linprog(
        np.append(np.zeros(len(lo)), -1.0),
        A_ub=np.array(rows),
        b_ub=np.array(rhs),
        bounds=[*zip(lo, hi, strict=True), (-1.0, 1.0)],
        method="highs",
    )
    if res.status != 0:  # the closed region is empty (infeasible even at s = -1)
        return -1.0, None
    return float(-res.fun), np.asarray(res.x[:-1])


MARGIN_TOL = 1e-7  # LP margins within +-tol are neither a witness nor a refutation


def _refine(
    net: ReluMLP,
    pats: Patterns,
    lo: np.ndarray,
    hi: np.ndarray,
    threshold: float,
    out_norm: OutNorm,
    max_lps: int,
) -> tuple[float | None, float]:
    """Test the box's patterns with norm > t, largest first, by `interior_margin`: one whose
    piece meets the box's interior is a witness (its Jacobian at the LP's point, recomputed,
    exceeds t: returns (None, norm)); refuted ones are dropped. Returns (bound, witness):
    the largest norm not refuted (<= t: the box is settled below t)."""
    order = np.argsort(-pats.norms, kind="stable")
    for lps, p in enumerate(order):
        if pats.norms[p] <= threshold:
            return threshold, 0.0  # every pattern above t was refuted
        if lps == max_lps:
            return float(pats.norms[p]) * (1 + SAFETY), 0.0
        margin, point = interior_margin(net, pats, int(p), lo, hi)
        if margin > MARGIN_TOL and point is not None:
            norm = float(operator_norms(net.jacobians(point[None]), out_norm)[0])
            if norm > threshold:
                return None, norm
        if margin >= -MARGIN_TOL:  # not refuted: keep it as the box's bound
            return float(pats.norms[p]) * (1 + SAFETY), 0.0
    return threshold, 0.0


def decide_by_splitting(
    net: ReluMLP,
    center: np.ndarray,
    radius: Radius,
    threshold: float,
    out_norm: OutNorm = "l1",
    *,
    max_boxes: int = 200,
    max_free: int = 10,
    max_lps: int = 4,
) -> SplitDecision:
    """Best-first (largest bound first) split of the box. Each box gets certified
    pre-activation bounds; with few unstable neurons its patterns above t are tested for
    reachability by LP (`_refine`), else the interval backward bound is used. True when every
    leaf is settled below t, False on a witness (a point whose Jacobian norm exceeds t),
    None when `max_boxes` boxes were bounded first."""
    c = check_box(net, center, radius)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), c.shape)
    witness, boxes = 0.0, 0
    heap: list[tuple[float, int, np.ndarray, np.ndarray]] = []
    counter = itertools.count()  # heap tie-break: deterministic order

    def push(lo: np.ndarray, hi: np.ndarray) -> bool:
        """Bound a box and queue it unless settled; False when it yields a witness."""
        nonlocal witness, boxes
        boxes += 1
        mid = (lo + hi) / 2
        witness = max(witness, float(operator_norms(net.jacobians(mid[None]), out_norm)[0]))
        if witness > threshold:
            return False
        pre = preactivation_bounds(net, mid, (hi - lo) / 2)
        pats = box_patterns(net, pre, out_norm, max_free)
        if pats is None:
            _, (glo, ghi) = backward_bounds(net, pre, out_norm)
            bound: float | None = float(np.maximum(np.abs(glo), np.abs(ghi)).sum()) * (1 + SAFETY)
        else:
            bound, found = _refine(net, pats, lo, hi, threshold, out_norm, max_lps)
            witness = max(witness, found)
            if bound is None:
                return False
        if bound > threshold:
            heapq.heappush(heap, (-bound, next(counter), lo, hi))
        return True

    if not push(c - r, c + r):
        return SplitDecision(False, np.inf, witness, boxes)
    while heap:
        if boxes + 2 > max_boxes:
            return SplitDecision(None, -heap[0][0], witness, boxes)
        _, _, lo, hi = heapq.heappop(heap)
        (lo_a, hi_a), (lo_b, hi_b) = halve(net, lo, hi)
        if not (push(lo_a, hi_a) and push(lo_b, hi_b)):
            return SplitDecision(False, np.inf, witness, boxes)
    return SplitDecision(True, threshold, witness, boxes)
