"""Per-network differential bounds on the iDP decision bound (LUCID variant `diff`).

DB_c = max_i DB_c(i), where DB_c(i) is N's largest confidence in c over the domain on which
the one leave-one-out network N_i does not predict c. N_i differs from N by one training
point, so its margins differ from N's by little, and bounding that *difference* is far
tighter than bounding N and a hyper-network over all N_i (the paper's Sec. 5.4 notes that
tighter difference intervals than its interval rule exist, after ReluDiff, Paulsen et al.
2020). Every step is an over-approximation, so the result is a sound upper bound on DB_c:

- Margins (not logits): the last layer of N and of N_i is replaced by the rows
  W_c - W_j, b_c - b_j (j != c), so N's confidence is min_j of N's outputs and N_i leaves
  c iff one of its outputs is <= 0. Differences of margins are then bounded directly,
  without the loss of subtracting two separately bounded logits.
- Level 0 (every network, interval arithmetic): the paper's difference intervals (Sec. 6.2)
  for the pair (N, N_i). If N_i's margin j is <= 0 then N's margin j = N_i's minus their
  difference <= -(lower difference bound), so DB_c(i) <= max_j -dl_j.
- Level 1 (LP): the pair as a MILP (bench.certify.idp.bound's ReLU encoding, the shared
  input, matching dependencies), plus for every hidden neuron the convex hull of
  e = relu(z + d) - relu(z) over d in [dl, du] (relu is monotone and 1-Lipschitz, so e lies
  between min(0, d) and max(0, d)), with each layer's difference interval tightened to the
  LP relaxation's range of (N_i's minus N's pre-activation) before the next layer is added.
  Its LP optimum is certified by the dual, so it bounds DB_c(i) (never an incumbent).
- Level 2 (MILP): the same model solved as a MILP within the node / time limit; its dual
  bound.
- Best first: a max-heap of (bound, network, level). The top network is refined to the
  next level; when the top has reached the last level its bound is DB_c (every other
  network's bound is at most it), and at any earlier stop the top bound is still sound.
"""

from __future__ import annotations

import heapq
import math
import time

import numpy as np

from bench.certify.idp.bound import (
    ROUNDING,
    SIMILAR_WIDTH,
    DecisionBound,
    Groups,
    Hyper,
    Layer,
    _relu,
    certified_maximum,
    clock_spent,
    propagate,
)
from bench.certify.milp import MILP, LinearRelaxation

LP_LEVEL, MILP_LEVEL = 1, 2


def margin_layers(net: list[Layer], target: int) -> list[Layer]:
    """`net` with its last layer replaced by the margins logit_target - logit_j, j != target."""
    w, b = net[-1]
    others = [j for j in range(len(b)) if j != target]
    return [*net[:-1], (w[target] - w[others], b[target] - b[others])]


def interval_bound(net: list[Layer], member: list[Layer], groups: Groups = ()) -> float:
    """Level 0: DB_c(i) <= max_j -dl_j over the margins j that N_i can bring to <= 0 (capped
    by N's largest confidence); `net` and `member` are margin networks."""
    bounds = propagate(net, Hyper.over([member]), groups)
    (_, n_hi), (h_lo, _), (d_lo, _) = bounds.n[-1], bounds.h[-1], bounds.d[-1]
    can_leave = h_lo <= 0
    if not can_leave.any():
        return -math.inf  # N_i predicts the target on the whole domain
    return float(min((-d_lo[can_leave]).max(), n_hi.min()))


def difference_rows(
    m: MILP,
    z: np.ndarray,
    h: np.ndarray,
    a_n: np.ndarray,
    a_h: np.ndarray,
    d_lo: np.ndarray,
    d_hi: np.ndarray,
) -> None:
    """Rows bounding e = a_h - a_n (post-ReLU) by d = h - z (pre-ReLU): the convex hull of
    {(d, e): min(0, d) <= e <= max(0, d), d in [d_lo, d_hi]}."""
    for j in range(len(z)):
        lo, hi = float(d_lo[j]), float(d_hi[j])
        cols = [int(a_h[j]), int(a_n[j]), int(h[j]), int(z[j])]
        slack = ROUNDING * (1.0 + abs(lo) + abs(hi))
        if lo >= 0:  # 0 <= e <= d
            m.add_row(cols[:2], [1.0, -1.0], lo=-slack)
            m.add_row(cols, [1.0, -1.0, -1.0, 1.0], hi=slack)
        elif hi <= 0:  # d <= e <= 0
            m.add_row(cols[:2], [1.0, -1.0], hi=slack)
            m.add_row(cols, [1.0, -1.0, -1.0, 1.0], lo=-slack)
        else:  # e <= hi (d - lo) / (hi - lo) and e >= lo (hi - d) / (hi - lo)
            up, down = hi / (hi - lo), -lo / (hi - lo)
            m.add_row(cols, [1.0, -1.0, -up, up], hi=-up * lo + slack)
            m.add_row(cols, [1.0, -1.0, -down, down], lo=-down * hi - slack)


def _tighten_differences(
    m: MILP,
    z: np.ndarray,
    h: np.ndarray,
    rows: list[int],
    d_lo: np.ndarray,
    d_hi: np.ndarray,
    bounds: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
) -> bool:
    """Shrink each [d_lo, d_hi] (in place, and its matching row) to the LP relaxation's range
    of h - z; then h's bounds to [z_lo + d_lo, z_hi + d_hi]. False if the LP is infeasible."""
    relaxation = LinearRelaxation(m)
    z_lo, z_hi, h_lo, h_hi = bounds
    for j in range(len(z)):
        cols = [int(h[j]), int(z[j])]
        top = relaxation.optimum(cols, [1.0, -1.0], "max")
        if top == -math.inf:
            return False
        bottom = relaxation.optimum(cols, [1.0, -1.0], "min")
        if top is not None:
            d_hi[j] = min(d_hi[j], top)
        if bottom is not None:
            d_lo[j] = max(d_lo[j], bottom)
        if d_lo[j] > d_hi[j]:  # crossed within solver tolerance: keep the wider reading
            d_lo[j], d_hi[j] = d_hi[j], d_lo[j]
        m.row_lo[rows[j]], m.row_hi[rows[j]] = float(d_lo[j]), float(d_hi[j])
    h_lo[:] = np.maximum(h_lo, z_lo + d_lo)
    h_hi[:] = np.minimum(h_hi, z_hi + d_hi)
    h_lo[:], h_hi[:] = np.minimum(h_lo, h_hi), np.maximum(h_lo, h_hi)
    for j, var in enumerate(h.tolist()):
        m.lb[var], m.ub[var] = float(h_lo[j]), float(h_hi[j])
    return True


def pair_model(
    net: list[Layer], member: list[Layer], groups: Groups = (), relax_similar: bool = True
) -> MILP | None:
    """Level 1-2 model of DB_c(i) for margin networks N (`net`) and N_i (`member`): maximise
    N's confidence where some margin of N_i is <= 0. None when the LP relaxation is
    infeasible (N_i cannot leave the target anywhere in the domain)."""
    bounds = propagate(net, Hyper.over([member]), groups)
    m = MILP(sense="max")
    x = m.add_vars(0.0, 1.0, net[0][0].shape[1])
    for group in groups:
        m.add_row([int(x[j]) for j in group], np.ones(len(group)), 1.0, 1.0)
    a_n, a_h = x, x
    depth = len(net)
    for k, ((w, b), (w_i, b_i)) in enumerate(zip(net, member, strict=True)):
        (z_lo, z_hi), (h_lo, h_hi), (d_lo, d_hi) = bounds.n[k], bounds.h[k], bounds.d[k]
        z_lo, z_hi, h_lo, h_hi = z_lo.copy(), z_hi.copy(), h_lo.copy(), h_hi.copy()
        d_lo, d_hi = d_lo.copy(), d_hi.copy()
        z, h = m.add_vars(z_lo, z_hi), m.add_vars(h_lo, h_hi)
        rows = []
        for j in range(len(b)):
            m.add_row([int(z[j]), *a_n], [1.0, *(-w[j])], b[j], b[j])  # z = W a_n + b
            m.add_row([int(h[j]), *a_h], [1.0, *(-w_i[j])], b_i[j], b_i[j])  # h = W_i a_h + b_i
            rows.append(m.num_rows)
            m.add_row([int(h[j]), int(z[j])], [1.0, -1.0], d_lo[j], d_hi[j])  # matching
        # The first layer's differences are linear in the shared input: already exact.
        tightened = k == 0 or _tighten_differences(
            m, z, h, rows, d_lo, d_hi, (z_lo, z_hi, h_lo, h_hi)
        )
        if not tightened:
            return None
        if k == depth - 1:
            break
        similar = (d_hi - d_lo) < SIMILAR_WIDTH if relax_similar else np.zeros(len(b), bool)
        a_n = _relu(m, z, z_lo, z_hi, np.zeros(len(b), dtype=bool))
        a_h = _relu(m, h, h_lo, h_hi, similar)
        difference_rows(m, z, h, a_n, a_h, d_lo, d_hi)
    margins = len(b)
    # N_i leaves the target: one of its margins is <= 0 (ties count: argmax may pick it).
    if margins == 1:
        m.add_row([int(h[0])], [1.0], hi=0.0)
    else:
        picks = m.add_vars(0, 1, margins, binary=True)
        m.add_row(picks, np.ones(margins), lo=1.0)
        for s, j in zip(picks.tolist(), range(margins), strict=True):
            big = max(0.0, float(h_hi[j]))
            m.add_row([int(h[j]), s], [1.0, big], hi=big)  # h_j <= big (1 - s)
    (t,) = m.add_vars(float(z_lo.min()), float(z_hi.min()))
    for j in range(margins):  # t <= every margin of N: N's confidence
        m.add_row([int(t), int(z[j])], [1.0, -1.0], hi=0.0)
    m.set_objective([int(t)], [1.0])
    return m


def _lp_bound(m: MILP | None) -> float:
    if m is None:
        return -math.inf
    top = LinearRelaxation(m).optimum(list(m.objective), list(m.objective.values()), "max")
    return math.inf if top is None else top


def _milp_bound(m: MILP | None, time_limit: float | None, node_limit: int | None) -> float:
    if m is None:
        return -math.inf
    return certified_maximum(m.solve(time_limit=time_limit, node_limit=node_limit))


def differential_bound(
    net: list[Layer],
    loo: list[list[Layer]],
    target: int,
    *,
    time_limit: float | None = 60.0,
    budget: float | None = 600.0,
    node_limit: int | None = None,
    max_milps: int | None = None,
    groups: Groups = (),
) -> DecisionBound:
    """DB_target as the largest per-network bound, refined best first (module docstring).

    Budgets as in `idp_bound.decision_bound`: `max_milps` caps the level-2 MILPs (work, the
    same on every machine; LP refinements are at most one per network), `budget` the wall
    clock (None: none); whichever stops first, the top bound reached so far is returned."""
    start = time.perf_counter()
    margin_net = margin_layers(net, target)
    members = [margin_layers(n, target) for n in loo]
    heap = [(-interval_bound(margin_net, n, groups), i, 0) for i, n in enumerate(members)]
    heapq.heapify(heap)
    models: dict[int, MILP | None] = {}
    milps = 0
    while True:
        neg, i, level = heap[0]
        if level == MILP_LEVEL or neg == math.inf:  # the top is final (or nothing can leak)
            return DecisionBound(target, -neg, milps, time.perf_counter() - start, True)
        out_of_work = level == LP_LEVEL and max_milps is not None and milps >= max_milps
        if out_of_work or clock_spent(start, budget):
            return DecisionBound(target, -neg, milps, time.perf_counter() - start, False)
        heapq.heappop(heap)
        if level == 0:
            models[i] = pair_model(margin_net, members[i], groups)
            refined = _lp_bound(models[i])
        else:
            refined = _milp_bound(models.pop(i), time_limit, node_limit)
            milps += 1
        heapq.heappush(heap, (-min(-neg, refined), i, level + 1))
