"""The iDP decision bound (iDP-DB) of LUCID (2025 paper, Sec. 5-6), computed soundly.

For class c, DB_c bounds from above the confidence of N (its c-logit minus its best other
logit) over every input of the domain on which some leave-one-out network N_i does not
predict c. The domain is [0, 1]^d, or, for a table with one-hot encoded categories, its
valid records: every one-hot group holds exactly one 1. The MILP ranges over the convex
hull of those records (each group a simplex), a superset, so the bound stays sound. An
answer c given with confidence above DB_c is then the same for every N_i, hence
independent of any single training point: 0-iDP with no noise (the paper's Theorem 6.1).

How it is computed (each step an over-approximation, so the bound stays sound):
- Hyper-network (Def. 5.1): for a set S of networks, interval weights [min, max] over S.
  Its layer inputs are non-negative (the domain is [0, 1]^d and ReLU outputs are >= 0),
  so every N_i in S satisfies W_min a + b_min <= W_i a + b_i <= W_max a + b_max.
- MILP: N and the hyper-network share the input; ReLUs by big-M with pre-activation
  bounds from interval arithmetic (certified by construction, never a solver value); the
  hyper-network must let some other logit reach the c-logit; maximise N's confidence.
  The solver's dual bound is used (bench.certify.milp), so a time limit still gives a
  sound, if looser, bound.
- Matching dependencies (Sec. 5.4): interval bounds on (hyper neuron - N's neuron),
  propagated from the weight differences, added as linear constraints.
- Relax-if-similar: a hyper ReLU whose difference interval is narrower than 0.01 gets the
  triangle relaxation (a superset of its graph) instead of a binary.
- Branch and bound (Sec. 5.3): a max-heap of (bound, set); the top set is split by k-means
  on the flattened weights; a child's bound is min(its MILP bound, its parent's); the
  search ends when the top is a single network, and the top's bound is sound at any time.
"""

from __future__ import annotations

import heapq
import math
import time
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn
from torch.func import functional_call

from bench.certify.milp import MILP, LinearRelaxation, MILPResult
from bench.core.errors import ConfigError

Layer = tuple[np.ndarray, np.ndarray]  # (W: out x in, b: out), float64
Groups = tuple[tuple[int, ...], ...]  # input indices of each one-hot group
SIMILAR_WIDTH = 0.01  # relax-if-similar threshold on a difference interval's width
ROUNDING = 1e-9  # slack on interval bounds: float64 rounding must never cut a point off
VARIANTS = {
    # name: (hyper-network, matching dependencies, relax-if-similar, branch and bound)
    "naive": (False, False, False, False),
    "H": (True, False, False, False),
    "HM": (True, True, False, False),
    "HMRiS": (True, True, True, False),
    "HMB": (True, True, False, True),
    "full": (True, True, True, True),
}


def dense_layers(
    model: nn.Module, params: dict[str, torch.Tensor], in_features: int
) -> list[Layer]:
    """The affine layers of a ReLU network (Linear, Conv1d, reshapes) as dense (W, b) in
    float64, read off the network applied to basis vectors; ReLUs must alternate with
    them and the last layer must be affine."""
    layers: list[Layer] = []
    pending: list[nn.Module] = []
    modules = list(model.children()) if isinstance(model, nn.Sequential) else [model]
    names = dict(model.named_children())
    width = in_features

    def flush() -> None:
        nonlocal width
        if not pending:
            return
        seq = nn.Sequential(*pending)
        prefix = {id(m): n for n, m in names.items()}
        local = {}
        for i, m in enumerate(pending):
            for pname, _ in m.named_parameters():
                local[f"{i}.{pname}"] = params[f"{prefix[id(m)]}.{pname}"]
        with torch.no_grad():
            basis = torch.cat([torch.zeros(1, width), torch.eye(width)]).double()
            out = functional_call(seq, {k: v.double() for k, v in local.items()}, (basis,))
            out = out.reshape(len(basis), -1)
        b = out[0]
        layers.append(((out[1:] - b).T.numpy().copy(), b.numpy().copy()))
        width = len(b)
        pending.clear()

    relus = 0
    for module in modules:
        if isinstance(module, nn.ReLU):
            flush()
            relus += 1
        elif isinstance(module, nn.Linear | nn.Conv1d | nn.Flatten | nn.Unflatten | nn.Identity):
            pending.append(module)
        else:
            raise ConfigError(f"iDP bound: unsupported layer {type(module).__name__}")
    flush()
    if len(layers) != relus + 1:
        raise ConfigError("iDP bound: the network must alternate affine layers and ReLUs")
    return layers


def _interval_affine(
    w_lo: np.ndarray,
    w_hi: np.ndarray,
    b_lo: np.ndarray,
    b_hi: np.ndarray,
    a_lo: np.ndarray,
    a_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of W a + b over W in [w_lo, w_hi], b in [b_lo, b_hi], a in [a_lo, a_hi]."""
    corners = np.stack([w_lo * a_lo, w_lo * a_hi, w_hi * a_lo, w_hi * a_hi])
    lo = corners.min(0).sum(1) + b_lo
    hi = corners.max(0).sum(1) + b_hi
    return _with_slack(lo, hi)


def _with_slack(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    slack = ROUNDING * (1 + np.abs(lo) + np.abs(hi))
    return lo - slack, hi + slack


def _input_affine(
    w_lo: np.ndarray, w_hi: np.ndarray, b_lo: np.ndarray, b_hi: np.ndarray, groups: Groups
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds of W x + b over W in [w_lo, w_hi], b in [b_lo, b_hi] and x in the domain:
    [0, 1] per ungrouped input, a simplex per one-hot group (x >= 0, sum 1), on which a
    group's term sum_j W_j x_j lies between min_j w_lo_j and max_j w_hi_j."""
    grouped = np.zeros(w_lo.shape[1], dtype=bool)
    lo, hi = b_lo.copy(), b_hi.copy()
    for group in groups:
        index = list(group)
        grouped[index] = True
        lo += w_lo[:, index].min(1)
        hi += w_hi[:, index].max(1)
    lo += np.minimum(w_lo[:, ~grouped], 0).sum(1)
    hi += np.maximum(w_hi[:, ~grouped], 0).sum(1)
    return _with_slack(lo, hi)


@dataclass
class Hyper:
    """Interval layers [w_lo, w_hi], [b_lo, b_hi] over a set of networks."""

    w_lo: list[np.ndarray]
    w_hi: list[np.ndarray]
    b_lo: list[np.ndarray]
    b_hi: list[np.ndarray]

    @classmethod
    def over(cls, networks: list[list[Layer]]) -> Hyper:
        depth = len(networks[0])
        ws = [np.stack([n[k][0] for n in networks]) for k in range(depth)]
        bs = [np.stack([n[k][1] for n in networks]) for k in range(depth)]
        return cls(
            [w.min(0) for w in ws],
            [w.max(0) for w in ws],
            [b.min(0) for b in bs],
            [b.max(0) for b in bs],
        )


@dataclass
class Bounds:
    """Pre-activation intervals per layer of N, of the hyper-network, and of their difference."""

    n: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    h: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    d: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)


def propagate(net: list[Layer], hyper: Hyper, groups: Groups = ()) -> Bounds:
    """Interval bounds of N's, the hyper-network's and their differences' pre-activations
    over the domain (sound: interval arithmetic with a rounding slack)."""
    out = Bounds()
    n_lo = n_hi = h_lo = h_hi = np.zeros(0)
    da_lo = da_hi = np.zeros(0)
    for k, (w, b) in enumerate(net):
        if k == 0:  # the input is the domain, shared: h - z = (W_h - W) x + (b_h - b)
            z = _input_affine(w, w, b, b, groups)
            h = _input_affine(hyper.w_lo[0], hyper.w_hi[0], hyper.b_lo[0], hyper.b_hi[0], groups)
            t = _input_affine(
                hyper.w_lo[0] - w, hyper.w_hi[0] - w, hyper.b_lo[0] - b, hyper.b_hi[0] - b, groups
            )
        else:
            z = _interval_affine(w, w, b, b, n_lo, n_hi)
            h = _interval_affine(
                hyper.w_lo[k], hyper.w_hi[k], hyper.b_lo[k], hyper.b_hi[k], h_lo, h_hi
            )
            # h - z = (W_h - W) a_h + W (a_h - a_n) + (b_h - b), each term by intervals.
            t1 = _interval_affine(
                hyper.w_lo[k] - w,
                hyper.w_hi[k] - w,
                hyper.b_lo[k] - b,
                hyper.b_hi[k] - b,
                h_lo,
                h_hi,
            )
            t2 = _interval_affine(w, w, np.zeros_like(b), np.zeros_like(b), da_lo, da_hi)
            t = (t1[0] + t2[0], t1[1] + t2[1])
        d = (np.maximum(t[0], h[0] - z[1]), np.minimum(t[1], h[1] - z[0]))
        out.n.append(z)
        out.h.append(h)
        out.d.append(d)
        # Post-ReLU ranges; relu(p) - relu(q) lies between min(0, p - q) and max(0, p - q).
        n_lo, n_hi = np.maximum(z[0], 0), np.maximum(z[1], 0)
        h_lo, h_hi = np.maximum(h[0], 0), np.maximum(h[1], 0)
        da_lo, da_hi = np.minimum(d[0], 0), np.maximum(d[1], 0)
    return out


def _relu(
    m: MILP, pre: np.ndarray, lo: np.ndarray, hi: np.ndarray, relax: np.ndarray
) -> np.ndarray:
    """Post-ReLU variables of `pre`: exact by big-M (one binary per unstable neuron), or the
    triangle relaxation where `relax`."""
    post = m.add_vars(np.maximum(lo, 0), np.maximum(hi, 0))
    for j in range(len(pre)):
        p, a, low, u = int(pre[j]), int(post[j]), float(lo[j]), float(hi[j])
        if u <= 0:
            m.add_row([a], [1.0], 0.0, 0.0)
        elif low >= 0:
            m.add_row([a, p], [1.0, -1.0], 0.0, 0.0)
        else:
            m.add_row([a, p], [1.0, -1.0], lo=0.0)  # a >= p (a >= 0 is its bound)
            if relax[j]:
                # a <= u (p - l) / (u - l): the upper side of the triangle
                m.add_row([a, p], [u - low, -u], hi=-u * low)
            else:
                (s,) = m.add_vars(0, 1, binary=True)
                m.add_row([a, p, int(s)], [1.0, -1.0, -low], hi=-low)  # a <= p - l (1 - s)
                m.add_row([a, int(s)], [1.0, -u], hi=0.0)  # a <= u s
    return post


def _tighten(m: MILP, variables: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
    """Shrink [lo, hi] (in place, and the variables' bounds in `m`) to the LP relaxation's
    range of each variable: tighter big-M constants, hence a tighter MILP bound. An LP
    optimum is certified by its dual solution, so it bounds every point of the MILP (Sec.
    6.2: never a MIP incumbent); one warm-started relaxation serves every variable."""
    relaxation = LinearRelaxation(m)
    for j, var in enumerate(variables.tolist()):
        top = relaxation.optimum([var], [1.0], "max")
        bottom = relaxation.optimum([var], [1.0], "min")
        if top is not None and math.isfinite(top):
            hi[j] = min(hi[j], top)
        if bottom is not None and math.isfinite(bottom):
            lo[j] = max(lo[j], bottom)
        if lo[j] > hi[j]:  # crossed within solver tolerance: keep the wider reading
            lo[j], hi[j] = hi[j], lo[j]
        m.lb[var], m.ub[var] = float(lo[j]), float(hi[j])
        relaxation.set_bounds(var, lo[j], hi[j])


def encode(
    net: list[Layer],
    hyper: Hyper,
    target: int,
    *,
    matching: bool,
    relax_similar: bool,
    tighten: bool = True,
    groups: Groups = (),
) -> MILP:
    """The MILP whose optimum is N's largest confidence in `target` on inputs where some
    network of the hyper-network's set may not predict `target` (maximised). With `tighten`,
    pre-activation bounds beyond the first layer come from the LP relaxation built so far.
    Each one-hot group's inputs sum to 1 (the hull of the valid records)."""
    d_in = net[0][0].shape[1]
    bounds = propagate(net, hyper, groups)
    m = MILP(sense="max")
    x = m.add_vars(0.0, 1.0, d_in)
    for group in groups:
        m.add_row([int(x[j]) for j in group], np.ones(len(group)), 1.0, 1.0)
    a_n, a_h = x, x
    depth = len(net)
    for k, (w, b) in enumerate(net):
        (zl, zu), (hl, hu), (dl, du) = bounds.n[k], bounds.h[k], bounds.d[k]
        zl, zu, hl, hu = zl.copy(), zu.copy(), hl.copy(), hu.copy()
        z = m.add_vars(zl, zu)
        h = m.add_vars(hl, hu)
        for j in range(len(b)):
            m.add_row([*z[j : j + 1], *a_n], [1.0, *(-w[j])], b[j], b[j])  # z = W a + b
            # hyper: W_lo a_h + b_lo <= h <= W_hi a_h + b_hi  (a_h >= 0)
            m.add_row([*h[j : j + 1], *a_h], [1.0, *(-hyper.w_lo[k][j])], lo=hyper.b_lo[k][j])
            m.add_row([*h[j : j + 1], *a_h], [1.0, *(-hyper.w_hi[k][j])], hi=hyper.b_hi[k][j])
            if matching:
                m.add_row([int(h[j]), int(z[j])], [1.0, -1.0], dl[j], du[j])
        if tighten and k > 0:  # the first layer's intervals are already exact
            _tighten(m, z, zl, zu)
            _tighten(m, h, hl, hu)
            bounds.n[k], bounds.h[k] = (zl, zu), (hl, hu)
        if k == depth - 1:
            a_n, a_h = z, h
            break
        never = np.zeros(len(b), dtype=bool)
        similar = (du - dl) < SIMILAR_WIDTH if relax_similar else never
        a_n = _relu(m, z, zl, zu, never)
        a_h = _relu(m, h, hl, hu, similar)
    logits_n, logits_h = a_n, a_h
    (nl, nu), (hl, hu) = bounds.n[-1], bounds.h[-1]
    others = [j for j in range(len(logits_n)) if j != target]
    # Leak: some other hyper logit reaches the target's (ties count: argmax may pick it).
    if len(others) == 1:
        j = others[0]
        m.add_row([int(logits_h[j]), int(logits_h[target])], [1.0, -1.0], lo=0.0)
    else:
        picks = m.add_vars(0, 1, len(others), binary=True)
        m.add_row(picks, np.ones(len(others)), lo=1.0)
        for s, j in zip(picks, others, strict=True):
            big = max(0.0, float(hu[target] - hl[j]))
            # H_j - H_c >= -big (1 - s)
            m.add_row([int(logits_h[j]), int(logits_h[target]), int(s)], [1.0, -1.0, -big], lo=-big)
    t_lo = float(nl[target] - max(nu[j] for j in others))
    t_hi = float(nu[target] - min(nl[j] for j in others))
    (t,) = m.add_vars(t_lo, t_hi)
    for j in others:  # t <= N_c - N_j
        m.add_row([int(t), int(logits_n[target]), int(logits_n[j])], [1.0, -1.0, 1.0], hi=0.0)
    m.set_objective([int(t)], [1.0])
    return m


@dataclass(frozen=True)
class DecisionBound:
    """A class's iDP-DB with how it was reached."""

    target: int
    bound: float
    milps: int
    seconds: float
    complete: bool  # False when a budget (time or MILP count) stopped branch and bound early


def _solve_bound(
    net: list[Layer],
    members: list[list[Layer]],
    target: int,
    flags: tuple[bool, ...],
    time_limit: float | None,
    node_limit: int | None = None,
    groups: Groups = (),
) -> float:
    _, matching, relax, _ = flags
    milp = encode(
        net, Hyper.over(members), target, matching=matching, relax_similar=relax, groups=groups
    )
    return certified_maximum(milp.solve(time_limit=time_limit, node_limit=node_limit))


def certified_maximum(result: MILPResult) -> float:
    """The sound upper bound a maximisation's solve certifies: -inf when infeasible (no
    input on which a network of the set leaves the target), +inf when the solver failed,
    else its dual bound (never the incumbent)."""
    if result.status == "infeasible":
        return -math.inf
    if result.status == "error" or result.status == "unbounded":
        return math.inf
    return result.bound


def check_groups(groups: Groups, in_features: int) -> None:
    """One-hot groups must be non-empty, disjoint sets of input indices."""
    seen: set[int] = set()
    for group in groups:
        if not group or any(not 0 <= j < in_features or j in seen for j in group):
            raise ConfigError(
                f"iDP bound: one-hot groups must be disjoint, non-empty sets of input "
                f"indices below {in_features}, got {list(group)}"
            )
        seen.update(group)


def _split(flat: np.ndarray, members: list[int], seed: int) -> list[list[int]]:
    """Partition `members` by k-means on their flattened weights, k by the elbow rule
    (the largest k whose inertia still drops by at least half), k <= 4."""
    from sklearn.cluster import KMeans

    points = flat[members]
    best = [members[: len(members) // 2], members[len(members) // 2 :]]
    previous = float(((points - points.mean(0)) ** 2).sum())
    for k in range(2, min(4, len(members)) + 1):
        km = KMeans(n_clusters=k, n_init=4, random_state=seed).fit(points)
        groups = [[members[i] for i in np.flatnonzero(km.labels_ == g)] for g in range(k)]
        groups = [g for g in groups if g]
        if len(groups) < 2:
            break
        if k > 2 and km.inertia_ > 0.5 * previous:
            break
        best, previous = groups, km.inertia_
    return best


def clock_spent(start: float, budget: float | None) -> bool:
    """Whether the wall-clock `budget` (None: none) since `start` is spent."""
    return budget is not None and time.perf_counter() - start > budget


def decision_bound(
    net: list[Layer],
    loo: list[list[Layer]],
    target: int,
    *,
    variant: str = "full",
    time_limit: float | None = 60.0,
    budget: float | None = 600.0,
    seed: int = 0,
    node_limit: int | None = None,
    max_milps: int | None = None,
    groups: Groups = (),
) -> DecisionBound:
    """DB_target over the leave-one-out networks `loo` for the variant's techniques, on
    the domain [0, 1]^d with the one-hot `groups` of a table (none: the whole box).

    Budgets: `time_limit` per MILP and `budget` for branch and bound are wall-clock (the
    paper's; None: no clock), so the bound they give depends on the machine's load;
    `node_limit` per MILP and `max_milps` for branch and bound (no split starts once that
    many MILPs were solved) are work budgets, the same on every machine: with both clocks
    None the bound is a function of the networks alone.
    Whichever stops first, the bound returned is the certified one reached so far."""
    if variant not in VARIANTS:
        raise ConfigError(f"unknown LUCID variant {variant!r}; known: {', '.join(VARIANTS)}")
    check_groups(groups, net[0][0].shape[1])
    flags = VARIANTS[variant]
    hyper, _, _, branch = flags
    start = time.perf_counter()

    def solve(members: list[list[Layer]]) -> float:
        return _solve_bound(net, members, target, flags, time_limit, node_limit, groups)

    if not hyper:  # naive: one exact MILP per leave-one-out network, then the maximum
        bounds = [solve([n]) for n in loo]
        return DecisionBound(target, max(bounds), len(loo), time.perf_counter() - start, True)
    everyone = list(range(len(loo)))
    root = solve(loo)
    if not branch:
        return DecisionBound(target, root, 1, time.perf_counter() - start, True)
    flat = np.stack([np.concatenate([np.concatenate([w.ravel(), b]) for w, b in n]) for n in loo])
    heap: list[tuple[float, int, list[int]]] = [(-root, 0, everyone)]
    milps, counter = 1, 1
    while True:
        neg, _, members = heap[0]
        if len(members) == 1 or not math.isfinite(neg):
            return DecisionBound(target, -neg, milps, time.perf_counter() - start, True)
        out_of_work = max_milps is not None and milps >= max_milps
        if out_of_work or clock_spent(start, budget):
            return DecisionBound(target, -neg, milps, time.perf_counter() - start, False)
        heapq.heappop(heap)
        for group in _split(flat, members, seed):
            child = solve([loo[i] for i in group])
            milps += 1
            heapq.heappush(heap, (-min(child, -neg), counter, group))
            counter += 1
