"""Exact local Lipschitz constants (l_inf -> l_1) of two-hidden-layer ReLU MLPs by a
best-first search over linear regions, for nets too large for the pattern search's bulk
scoring (patterns.py) and for the MILP: it solves LipMIP's [8,32,32,8] at R = 0.5, where
every MILP times out (studies/ptr-solvers/records/lipschitz-exact.md).

What it computes, as patterns.py: the largest ||J_sigma||_{inf -> 1} over the sign
patterns sigma whose closed linear region meets the box (LipMIP, Jordan & Dimakis 2020,
Thm 3/4: L(f, box) for a net in general position, an upper bound always).

Search. A node fixes the signs of some unstable neurons (layer 1 first, in order of
|W1 row| x |W2 column|, then layer 2). Its bound is coupled.py's, with the layer-2 gates
that a linear bound over the node's layer-1 gates proves stable fixed. A popped node first
settles what its region forces: with layer 1 partly fixed, each free layer-1 gate that no
known point of the region shows on both sides is tested by ranges.py (an LP or a reused
dual certificate); with layer 1 complete, layer 2 is affine on the region and its gates are
tested the same way. Pairs of layer-1 signs that miss the box (one LP each, up front) fix
the partner of every gate they touch. A child needs a reachability LP (patterns._ReachLP)
only when no known point of its parent's region has its signs. A complete pattern's norm
is exact; the first one popped above every open bound is the answer. Known points come
from uniform samples, from every LP's optimum and from samples around them; the attained
lower bound starts from a sampled local search and rises with every interior point.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from bench.certify.lipschitz.coupled import CoupledBound
from bench.certify.lipschitz.patterns import MARGIN_TOL, _Part, _ReachLP
from bench.certify.lipschitz.ranges import LayerOneRanges
from bench.certify.lipschitz.relu import (
    SAFETY,
    Radius,
    ReluMLP,
    _relu_relaxation,
    check_box,
    operator_norms,
)

WITNESSES = 4096  # uniform points of the box known at the root
NEARBY = 256  # points sampled around a region's known points before its gates are tested
ENOUGH_POINTS = 64  # a region with this many known points is not sampled further
FLOOR_SAMPLES = 20_000  # uniform points of the sampled lower bound, then a local search

SignedGate = tuple[int, int]  # (gate position in the search order, sign 0 / 1)


@dataclass(frozen=True)
class RegionSearchResult:
    """`upper` is certified; `lower` is the norm of a pattern with an interior point in the
    box (attained); `exact` when they agree."""

    upper: float
    lower: float
    exact: bool
    status: str  # "optimal", "decided" (a threshold was settled), "time_limit", "work_limit"
    nodes: int
    lps: int
    seconds: float


def sampled_floor(net: ReluMLP, c: np.ndarray, r: np.ndarray, seed: int = 0) -> float:
    """The largest Jacobian norm among uniform points of the box and a local random search
    around the best of them: attained (the points are interior almost surely)."""
    rng = np.random.default_rng(seed)
    points = np.concatenate([c[None], c + rng.uniform(-r, r, (FLOOR_SAMPLES, len(c)))])
    norms = operator_norms(net.jacobians(points), "l1")
    for step in (0.2, 0.1, 0.05, 0.05, 0.02, 0.02, 0.01):
        top = points[np.argsort(norms)[-128:]]
        moves = rng.normal(0, 1, (128, 64, len(c))) * step * r
        near = np.clip(top[:, None, :] + moves, c - r, c + r).reshape(-1, len(c))
        points = np.concatenate([points, near])
        norms = np.concatenate([norms, operator_norms(net.jacobians(near), "l1")])
    return float(norms.max())


class _Search:
    """One run of the search; see the module docstring."""

    def __init__(self, net: ReluMLP, c: np.ndarray, r: np.ndarray, floor: float) -> None:
        self.net, self.c, self.r = net, c, r
        self.part = _Part(net, c - r, c + r)
        self.reach = _ReachLP(net, self.part)
        self.bound_of = CoupledBound(net)
        w1, w2, _ = net.weights
        weight = {j: np.abs(w1[j]).sum() * np.abs(w2[:, j]).sum() for _, j in self.part.free}
        first = sorted((k for k in self.part.free if k[0] == 0), key=lambda k: -weight[k[1]])
        self.free = first + [k for k in self.part.free if k[0] == 1]
        self.n1 = len(first)
        self.idx = [np.array([j for m, j in self.free if m == layer], int) for layer in (0, 1)]
        self.stable_on = [(lo >= 0).astype(float) for lo, _ in self.part.pre]
        self.unstable = [((lo < 0) & (hi > 0)).astype(float) for lo, hi in self.part.pre]
        self.ranges = LayerOneRanges(w1[self.idx[0]], net.biases[0][self.idx[0]], c - r, c + r)
        self.rng = np.random.default_rng(2)
        self.best = max(floor, sampled_floor(net, c, r))
        self.lps = 0
        self.implied: dict[SignedGate, list[SignedGate]] = {}
        self.slopes = _relu_relaxation(*self.part.pre[0])  # used on free (unstable) gates only

    # --- geometry ---------------------------------------------------------------------

    def points(self, x: np.ndarray) -> np.ndarray:
        """Known-point rows [x | pre-activations of the free gates in search order]."""
        w1, w2, _ = self.net.weights
        z1 = x @ w1.T + self.net.biases[0]
        z2 = np.maximum(z1, 0) @ w2.T + self.net.biases[1]
        return np.hstack([x, z1[:, self.idx[0]], z2[:, self.idx[1]]])

    def masks(self, state: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """0/1 masks per hidden layer: gates on (fixed or stable), gates not fixed."""
        on, free = [m.copy() for m in self.stable_on], [m.copy() for m in self.unstable]
        for layer, part in enumerate((state[: self.n1], state[self.n1 :])):
            idx = self.idx[layer]
            on[layer][idx] = np.where(part == 2, on[layer][idx], part)
            free[layer][idx] = part == 2
        return on, free

    def layer2_range(self, on0: np.ndarray, free0: np.ndarray) -> tuple[np.ndarray, ...]:
        """Sound bounds on layer 2's pre-activations over the box with layer 1's fixed gates
        exact (on: z, off: 0) and its free ones relaxed (DeepPoly's triangles over the box),
        intersected with the box's."""
        w1 = self.net.weights[0]
        b1, b2 = self.net.biases[0], self.net.biases[1]
        w2p, w2n = self.bound_of.w2_pos, self.bound_of.w2_neg
        s_l, s_u, t_u = self.slopes
        s_u, s_l, t_u = on0 + free0 * s_u, on0 + free0 * s_l, free0 * t_u
        up = (w2p * s_u + w2n * s_l) @ w1
        up0 = w2p @ (s_u * b1 + t_u) + w2n @ (s_l * b1) + b2
        low = (w2p * s_l + w2n * s_u) @ w1
        low0 = w2p @ (s_l * b1) + w2n @ (s_u * b1 + t_u) + b2
        hi = up @ self.c + up0 + np.abs(up) @ self.r
        lo = low @ self.c + low0 - np.abs(low) @ self.r
        box_lo, box_hi = self.part.pre[1]
        return np.maximum(lo, box_lo), np.minimum(hi, box_hi)

    # --- bounds and propagation ---------------------------------------------------------

    def bound(
        self, state: np.ndarray, active: np.ndarray | None
    ) -> tuple[float, np.ndarray, np.ndarray]:
        """(coupled bound, `state` with the layer-2 gates its layer-2 range fixes, the sign
        pairs still above the attained value). Fixed gates are kept in the state, so a
        descendant's masks only narrow and the dropped pairs stay dropped."""
        on, free = self.masks(state)
        lo, hi = self.layer2_range(on[0], free[0])
        open2 = state[self.n1 :] == 2
        now_on, now_off = open2 & (lo[self.idx[1]] >= 0), open2 & (hi[self.idx[1]] <= 0)
        if now_on.any() or now_off.any():
            state = state.copy()
            state[self.n1 + np.flatnonzero(now_on)] = 1
            state[self.n1 + np.flatnonzero(now_off)] = 0
            on, free = self.masks(state)
        value, active = self.bound_of(on, free, active, self.best)
        return value, state, active

    def propagate(self, state: np.ndarray, new: Iterable[SignedGate]) -> np.ndarray | None:
        """`state` with the signs the pair exclusions force after the literals `new`, or
        None when two of its signs exclude each other."""
        queue = list(new)
        while queue:
            for gate, sign in self.implied.get(queue.pop(), ()):
                if state[gate] == 2:
                    state[gate] = sign
                    queue.append((gate, sign))
                elif state[gate] != sign:
                    return None
        return state

    def signs1(self, state: np.ndarray) -> np.ndarray:
        part = state[: self.n1]
        return np.where(part == 1, 1.0, np.where(part == 0, -1.0, 0.0))

    def can_take(
        self, gate: int, sign: int, state: np.ndarray, a: np.ndarray, a0: float
    ) -> tuple[bool, np.ndarray | None]:
        """ranges.py's test whether a gate with pre-activation a.x + a0 on the region of
        `state`'s layer-1 gates can take `sign` (its closed half-space meets the region)."""
        flip = 1.0 if sign else -1.0
        never, x = self.ranges.never_positive((gate, sign), flip * a, flip * a0, self.signs1(state))
        return not never, x

    def exclude_pairs(self, witnesses: np.ndarray) -> None:
        """Each pair of layer-1 signs that no uniform point shows and whose half-spaces miss
        the box (ranges.py) becomes two implications."""
        w, b = self.ranges.w, self.ranges.b
        z = witnesses[:, len(self.c) : len(self.c) + self.n1] > 0
        for i, j in itertools.combinations(range(self.n1), 2):
            for si, sj in itertools.product((0, 1), repeat=2):
                if ((z[:, i] == si) & (z[:, j] == sj)).any():
                    continue
                only_i = np.full(self.n1 + len(self.idx[1]), 2, dtype=np.int8)
                only_i[i] = si
                if not self.can_take(j, sj, only_i, w[j], b[j])[0]:
                    self.implied.setdefault((i, si), []).append((j, 1 - sj))
                    self.implied.setdefault((j, sj), []).append((i, 1 - si))

    # --- known points -------------------------------------------------------------------

    def inside(self, state: np.ndarray, known: np.ndarray, strict: bool) -> np.ndarray:
        """The known points in the region of `state` (closed, or strictly inside)."""
        fixed = state != 2
        sign = np.where(state[fixed] == 1, 1.0, -1.0)
        margin = known[:, len(self.c) :][:, fixed] * sign
        return known[(margin > MARGIN_TOL).all(1) if strict else (margin >= -MARGIN_TOL).all(1)]

    def enrich(self, state: np.ndarray, known: np.ndarray) -> np.ndarray:
        """Add points sampled around the region's known points that fall strictly inside."""
        if not len(known) or len(known) >= ENOUGH_POINTS:
            return known
        base = known[self.rng.integers(0, len(known), NEARBY), : len(self.c)]
        scale = self.rng.choice([0.3, 0.1, 0.03, 0.01], (NEARBY, 1)) * self.r
        x = np.clip(
            base + self.rng.uniform(-1, 1, base.shape) * scale, self.c - self.r, self.c + self.r
        )
        return np.concatenate([known, self.inside(state, self.points(x), strict=True)])

    def reachable(self, state: np.ndarray) -> np.ndarray | None:
        """Known-point rows of the closed region of `state` (reachability LP): one row, or
        none when the LP ended without an answer (the region stays open, unproven), or None
        when the LP is infeasible, i.e. the region misses the box. An interior point raises
        the attained value."""
        self.lps += 1
        margin, x = self.reach.margin(
            {self.free[i]: bool(s) for i, s in enumerate(state) if s != 2}
        )
        if margin < -MARGIN_TOL:
            return None
        if x is None:  # no answer: not a refutation, so the child is kept (without a point)
            return np.empty((0, len(self.c) + len(self.free)))
        row = self.points(x[None])
        if (np.abs(row[0, len(self.c) :]) > MARGIN_TOL).all():
            self.best = max(self.best, float(operator_norms(self.net.jacobians(x[None]), "l1")[0]))
        return row

    # --- settling a popped node ---------------------------------------------------------

    def settle(self, state: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Fix every gate of the next open layer that keeps one sign on the region: layer 1
        while it is partly open, else layer 2 (affine on the region). None: region empty."""
        known = self.enrich(state, known)
        w1, w2, _ = self.net.weights
        layer1 = (state[: self.n1] == 2).any()
        if layer1:
            gates = range(self.n1)
            a, a0 = self.ranges.w, self.ranges.b
        else:
            on, _ = self.masks(state)
            a = (w2 @ (on[0][:, None] * w1))[self.idx[1]]
            a0 = (w2 @ (on[0] * self.net.biases[0]) + self.net.biases[1])[self.idx[1]]
            gates = range(self.n1, len(self.free))
        state = state.copy()
        for gate in gates:
            if state[gate] != 2:
                continue
            k = gate if layer1 else gate - self.n1
            z = known[:, len(self.c) + gate]
            pos, neg = (z > MARGIN_TOL).any(), (z < -MARGIN_TOL).any()
            if pos and neg:
                continue
            for sign in (0,) if pos else (1,) if neg else (1, 0):
                possible, x = self.can_take(gate, sign, state, a[k], a0[k])
                if not possible:
                    state[gate] = 1 - sign
                    if layer1 and self.propagate(state, [(gate, 1 - sign)]) is None:
                        return None
                    break
                if x is not None:
                    known = np.concatenate([known, self.points(x[None])])
        return state, known

    # --- the search ---------------------------------------------------------------------

    def run(
        self, deadline: float, threshold: float | None, work_limit: float = math.inf
    ) -> tuple[float, str, int]:
        """(certified upper bound, status, nodes popped); with `threshold`, stop as soon as
        the bounds decide L <= threshold or L > threshold (status "decided"); stop with the
        open heap's top (sound) once nodes popped plus LPs solved reach `work_limit`."""
        known = self.points(self.c + self.rng.uniform(-self.r, self.r, (WITNESSES, len(self.c))))
        self.exclude_pairs(known)
        tie = itertools.count()
        value, root, active = self.bound(np.full(len(self.free), 2, dtype=np.int8), None)
        # entries: (-bound, tie, state, known points, settled, complete, active pairs)
        heap = [(-value, next(tie), root, known, False, False, active)]
        popped = 0
        while heap:
            top = -heap[0][0]
            if top <= self.best:
                return self.best, "optimal", popped
            if threshold is not None and (top <= threshold or self.best > threshold):
                return top, "decided", popped
            if time.perf_counter() > deadline:
                return top, "time_limit", popped
            if popped + self.lps + self.ranges.lps >= work_limit:
                return top, "work_limit", popped
            _, _, state, known, settled, complete, active = heapq.heappop(heap)
            popped += 1
            if complete:  # its exact norm is above every open bound: the answer, attained
                self.reachable(state)  # if its region has an interior point (else touching)
                return top, "optimal", popped
            open_gates = np.flatnonzero(state == 2)
            if not len(open_gates):
                heapq.heappush(heap, self.leaf(state, known, active, next(tie)))
                continue
            if not settled:
                got = self.settle(state, known)
                if got is None:
                    continue
                value, state, active = self.bound(got[0], active)
                if value > self.best:
                    heapq.heappush(heap, (-value, next(tie), state, got[1], True, False, active))
                continue
            gate = int(open_gates[0])
            for sign in (1, 0):
                child = state.copy()
                child[gate] = sign
                if gate < self.n1 and self.propagate(child, [(gate, sign)]) is None:
                    continue
                inside = self.inside(child, known, strict=False)
                if not len(inside):
                    found = self.reachable(child)
                    if found is None:
                        continue
                    inside = found
                value, child, child_active = self.bound(child, active)
                if value > self.best:
                    # a child of a layer-1 branch has a new region to settle
                    entry = (-value, next(tie), child, inside, gate >= self.n1, False, child_active)
                    heapq.heappush(heap, entry)
        return self.best, "optimal", popped

    def leaf(self, state: np.ndarray, known: np.ndarray, active: np.ndarray, tie: int) -> tuple:
        """A complete pattern's entry at its exact norm; attained if a known point is strictly
        inside its region."""
        w1, w2, w3 = self.net.weights
        on, _ = self.masks(state)
        jac = w3 @ (on[1][:, None] * w2) @ (on[0][:, None] * w1)
        exact = float(operator_norms(jac[None], "l1")[0])
        if len(self.inside(state, known, strict=True)):
            self.best = max(self.best, exact)
        return (-exact, tie, state, known, True, True, active)


def exact_by_regions(
    net: ReluMLP,
    center: np.ndarray,
    radius: Radius,
    *,
    time_limit: float | None = None,
    threshold: float | None = None,
    floor: float = 0.0,
    work_limit: int | None = None,
) -> RegionSearchResult:
    """L(f, box) for ||.||_inf -> ||.||_1 and a two-hidden-layer net (see the module
    docstring). `floor` is a known attained value; with `threshold`, stop once L <= t or
    L > t is certified; with `time_limit` (seconds) or `work_limit` (nodes popped plus LPs
    solved: the same stop on every machine), stop with the certified bounds reached so far
    (`upper` still sound, `exact` False)."""
    start = time.perf_counter()
    c = check_box(net, center, radius)
    r = np.broadcast_to(np.asarray(radius, dtype=np.float64), c.shape).copy()
    search = _Search(net, c, r, floor)
    deadline = start + (time_limit if time_limit is not None else math.inf)
    upper, status, nodes = search.run(
        deadline, threshold, math.inf if work_limit is None else work_limit
    )
    upper = max(upper, search.best) * (1 + SAFETY)
    lower = search.best
    return RegionSearchResult(
        upper=upper,
        lower=lower,
        exact=status == "optimal" and upper <= lower * (1 + 3 * SAFETY),
        status=status,
        nodes=nodes,
        lps=search.lps + search.ranges.lps,
        seconds=time.perf_counter() - start,
    )
