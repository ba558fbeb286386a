"""An exact search over linear regions for the hard row ([8,32,32,8] at R = 0.5), l_inf -> l_1.

A prototype, kept here (not in bench.certify.lipschitz) until it solves the row: it finds
the exact constant of 2 of the 5 nets within 60 s (region_search.txt). It is sound either
way: a search cut by the time limit reports the largest bound of its open nodes.

Search. Best-first over sign assignments of the unstable neurons, layer 1 first (in order of
|W1 row| x |W2 column|, the neurons that move the bound most first), then layer 2. A node's
bound is hard_row.py's coupled bound (exact over layer 2's gates once layer 1 is fixed,
reachability aside). A child needs no LP when a known point of its parent's region has the
child's sign strictly; else patterns._ReachLP (one HiGHS instance) decides whether its closed
region meets the box. When layer 1 is fixed, layer 2 is affine on the region: its range over
the box, then one LP per neuron whose other sign no known point shows, fixes the neurons that
keep one sign in the region (region_bounds.py measured how much this removes). A complete
pattern's Jacobian norm is exact; the first one popped above every open bound is L. The lower
bound starts from 20,000 uniform points and a local random search around the best, and rises
with every LP point whose gates are all strict.

Usage (repository root, package installed): PYTHONPATH=. python region_search.py [SEED ...];
with --check, it compares itself with the pattern search on smaller shapes instead.
Run it with OPENBLAS_NUM_THREADS=1: the bound is a few small matrix products per node, and
BLAS threads competing for the cores make each one about 15x slower.
"""

from __future__ import annotations

import heapq
import itertools
import sys
import time
from pathlib import Path

import numpy as np

from bench.certify.lipschitz.patterns import MARGIN_TOL, _Part, _ReachLP, exact_by_patterns
from bench.certify.lipschitz.relu import ReluMLP, check_box, operator_norms
from tests.test_local_lipschitz import random_net

sys.path.insert(0, str(Path(__file__).parent))
from hard_row import RADIUS, SIZES, CoupledBound

TIME_LIMIT, SAMPLES = 60.0, 20_000


def sampled_lower_bound(net: ReluMLP, c: np.ndarray, radius: float) -> float:
    """The largest Jacobian norm among uniform points and a local random search around the
    best of them (an attained lower bound: the points are interior almost surely)."""
    rng = np.random.default_rng(0)
    points = np.concatenate([c[None], c + rng.uniform(-radius, radius, (SAMPLES, len(c)))])
    norms = operator_norms(net.jacobians(points), "l1")
    for step in (0.2, 0.1, 0.05, 0.05, 0.02, 0.02, 0.01):
        top = points[np.argsort(norms)[-128:]]
        moves = rng.normal(0, step * radius, (128, 64, len(c)))
        near = np.clip(top[:, None, :] + moves, c - radius, c + radius).reshape(-1, len(c))
        points = np.concatenate([points, near])
        norms = np.concatenate([norms, operator_norms(net.jacobians(near), "l1")])
    return float(norms.max())


def region_search(net: ReluMLP, center: np.ndarray, radius: float) -> dict[str, float | int | bool]:
    start = time.perf_counter()
    c = check_box(net, center, radius)
    part = _Part(net, c - radius, c + radius)
    reach = _ReachLP(net, part)
    w1, w2, w3 = net.weights
    weight = {
        j: np.abs(w1[j]).sum() * np.abs(w2[:, j]).sum() for layer, j in part.free if not layer
    }
    free = sorted((k for k in part.free if k[0] == 0), key=lambda k: -weight[k[1]])
    free += [k for k in part.free if k[0] == 1]
    first2 = sum(1 for layer, _ in free if layer == 0)
    stable_on = [(lo >= 0).astype(float) for lo, _ in part.pre]
    unstable = [((lo < 0) & (hi > 0)).astype(float) for lo, hi in part.pre]
    bound_of = CoupledBound(net)
    lps = 0

    def masks(state: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
        on, fr = [m.copy() for m in stable_on], [m.copy() for m in unstable]
        for (layer, j), s in zip(free, state, strict=True):
            if s != 2:
                on[layer][j], fr[layer][j] = float(s), 0.0
        return on, fr

    def bound(state: np.ndarray) -> float:
        return bound_of(*masks(state))

    def z_free(points: np.ndarray) -> np.ndarray:
        z1 = points @ w1.T + net.biases[0]
        z2 = np.maximum(z1, 0) @ w2.T + net.biases[1]
        return np.stack([(z1, z2)[layer][:, j] for layer, j in free], axis=1)

    best = sampled_lower_bound(net, c, radius)

    def reachable(state: np.ndarray) -> np.ndarray | None:
        """A point of the closed region of `state`'s fixed gates as z values (possibly
        empty when it only touches), or None when the region misses the box."""
        nonlocal lps, best
        lps += 1
        fixed = {free[i]: bool(s) for i, s in enumerate(state) if s != 2}
        margin, point = reach.margin(fixed)
        if margin < -MARGIN_TOL or point is None:
            return None
        z1 = point @ w1.T + net.biases[0]
        z2 = np.maximum(z1, 0) @ w2.T + net.biases[1]
        if min(np.abs(z1).min(), np.abs(z2).min()) > MARGIN_TOL:  # interior: attained
            best = max(best, float(operator_norms(net.jacobians(point[None]), "l1")[0]))
        return z_free(point[None])

    def refine(state: np.ndarray, wz: np.ndarray) -> np.ndarray:
        """Fix each layer-2 neuron that keeps one sign in the region of `state` (layer 1
        fixed): by its affine range over the box, else by an LP for the sign no known point
        of the region shows."""
        on, _ = masks(state)
        a = w2 @ (on[0][:, None] * w1)
        a0 = w2 @ (on[0] * net.biases[0]) + net.biases[1]
        mid, rad = a @ c + a0, np.abs(a).sum(1) * radius
        new = state.copy()
        for i in range(first2, len(free)):
            j = free[i][1]
            if new[i] != 2:
                continue
            if mid[j] - rad[j] >= 0 or mid[j] + rad[j] <= 0:
                new[i] = int(mid[j] - rad[j] >= 0)
                continue
            pos, neg = (wz[:, i] > MARGIN_TOL).any(), (wz[:, i] < -MARGIN_TOL).any()
            if pos and neg:
                continue
            for sign in (0,) if pos else (1,) if neg else (1, 0):
                trial = new.copy()
                trial[i] = sign
                if reachable(trial) is None:
                    new[i] = 1 - sign
                    break
        return new

    tie = itertools.count()
    root = np.full(len(free), 2, dtype=np.int8)
    witnesses = z_free(c + np.random.default_rng(1).uniform(-radius, radius, (4096, len(c))))
    # entries: (-bound, tie, state, z values of known points of its region, refined, complete)
    heap = [(-bound(root), next(tie), root, witnesses, False, False)]
    upper, finished = best, True
    while heap:
        top = -heap[0][0]
        if top <= best:
            break
        if time.perf_counter() - start > TIME_LIMIT:
            upper, finished = top, False
            break
        _, _, state, wz, refined, complete = heapq.heappop(heap)
        if complete:  # its exact norm is above every open bound: it is L
            upper = top
            break
        open_gates = np.flatnonzero(state == 2)
        if not len(open_gates):  # a complete, reachable pattern: its exact norm
            on, _ = masks(state)
            jac = w3 @ (on[1][:, None] * w2) @ (on[0][:, None] * w1)
            exact = float(operator_norms(jac[None], "l1")[0])
            if len(wz) and (wz * np.where(state == 1, 1.0, -1.0) > MARGIN_TOL).all(1).any():
                best = max(best, exact)  # an interior point has this pattern: attained
            heapq.heappush(heap, (-exact, next(tie), state, wz, True, True))
            continue
        d = int(open_gates[0])
        if d >= first2 and not refined:
            state = refine(state, wz)
            if bound(state) > best:
                heapq.heappush(heap, (-bound(state), next(tie), state, wz, True, False))
            continue
        for sign in (1, 0):
            child = state.copy()
            child[d] = sign
            inside = wz[wz[:, d] > MARGIN_TOL] if sign else wz[wz[:, d] < -MARGIN_TOL]
            if not len(inside):
                found = reachable(child)
                if found is None:
                    continue
                inside = found
            child_bound = bound(child)
            if child_bound > best:
                heapq.heappush(heap, (-child_bound, next(tie), child, inside, refined, False))
    upper = max(upper, best)
    return {
        "upper": upper,
        "lower": best,
        "exact": finished,
        "lps": lps,
        "seconds": time.perf_counter() - start,
    }


def main(seeds: list[int]) -> None:
    print(f"# region_search.py: [8,32,32,8], R = {RADIUS}, l_inf -> l_1, {TIME_LIMIT:.0f} s limit")
    print("seed | upper (certified) | lower (attained) | exact | LPs | seconds")
    for seed in seeds:
        net = random_net(SIZES, seed)
        c = np.random.default_rng(seed).uniform(-1, 1, SIZES[0])
        r = region_search(net, c, RADIUS)
        print(
            f"{seed} | {r['upper']:.6f} | {r['lower']:.6f} | {r['exact']} | {r['lps']} | "
            f"{r['seconds']:.1f}",
            flush=True,
        )


def check() -> None:
    """Both searches on smaller shapes (3 seeds each), where the pattern search is exact."""
    print("net, R, seed | region search | pattern search | both exact | agree to 1e-5")
    for sizes, radius in (
        ([8, 8, 8, 8], 0.5),
        ([8, 8, 8, 8], 1.0),
        ([4, 12, 10, 3], 0.7),
        ([6, 16, 16, 5], 0.4),
        ([8, 32, 32, 8], 0.1),
    ):
        for seed in range(3):
            net = random_net(sizes, seed)
            c = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
            mine = region_search(net, c, radius)
            ref = exact_by_patterns(net, c, radius, "l1", time_limit=TIME_LIMIT)
            agree = abs(float(mine["upper"]) - ref.upper) <= 1e-5 * ref.upper
            print(
                f"{sizes}, {radius}, {seed} | {mine['upper']:.6f} | {ref.upper:.6f} | "
                f"{bool(mine['exact'] and ref.exact)} | {agree}",
                flush=True,
            )


if __name__ == "__main__":
    if "--check" in sys.argv[1:]:
        check()
    else:
        main([int(s) for s in sys.argv[1:]] or list(range(5)))
