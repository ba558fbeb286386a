"""Why [8,32,32,8] at R = 0.5 stays unsolved: the size of the activation-pattern search.

For each of the five nets of compare.py's hard row this prints
- the unstable neurons per hidden layer under DeepPoly bounds on the whole box;
- from 400,000 uniform points of the box: the distinct layer-1 patterns (of the unstable
  layer-1 neurons) and the distinct full patterns seen, and the largest Jacobian norm
  seen (an attained lower bound on L);
- the coupled bound (below) with no gate fixed (a sound upper bound on L), and, for every
  sampled layer-1 pattern, the coupled bound with layer 1 fixed to it and layer 2's
  neurons fixed where the then-affine pre-activation keeps one sign on the box: how many
  of those layer-1 regions a pattern search cannot prune before opening layer 2.

The coupled bound. ||J||_{inf -> 1} = max over u in {-1,1}^n, v in {-1,1}^k of v^T J u.
With J = W_3 D_2 W_2 D_1 W_1, fixed (u, v), g = W_3^T v and h = W_2 D_1 W_1 u:
v^T J u = sum_j d2_j g_j h_j. Gates not fixed give d in [0, 1]: h goes to an interval
(exact when layer 1 is fixed) and each term to its largest value on it, so the bound is
exact over layer 2's completions once layer 1 is fixed (reachability aside). It is
bench.certify.lipschitz.coupled.CoupledBound, the region search's node bound.

Usage (repository root, package installed, about 4 minutes):
PYTHONPATH=. python studies/ptr-solvers/probes/hard_row.py
"""

from __future__ import annotations

import numpy as np

from bench.certify.lipschitz.coupled import CoupledBound
from bench.certify.lipschitz.relu import operator_norms, preactivation_bounds
from tests.bench.certify.lipschitz.test_local_lipschitz import random_net

SIZES, RADIUS, SAMPLES = [8, 32, 32, 8], 0.5, 400_000


def sampled_box(seed: int) -> tuple:
    """One net of the row: (net, centre, pre-activation bounds, stable-on and unstable masks
    per hidden layer, SAMPLES uniform points of the box, their layer-1 and layer-2
    pre-activations)."""
    net = random_net(SIZES, seed)
    c = np.random.default_rng(seed).uniform(-1, 1, SIZES[0])
    pre = preactivation_bounds(net, c, RADIUS)
    on = [(lo >= 0).astype(float) for lo, _ in pre]
    free = [((lo < 0) & (hi > 0)).astype(float) for lo, hi in pre]
    x = c + np.random.default_rng(1).uniform(-RADIUS, RADIUS, (SAMPLES, SIZES[0]))
    z1 = x @ net.weights[0].T + net.biases[0]
    z2 = np.maximum(z1, 0) @ net.weights[1].T + net.biases[1]
    return net, c, pre, on, free, x, z1, z2


def main() -> None:
    print(
        "seed | unstable (layer 1, 2) | layer-1 patterns seen | full patterns seen | "
        "largest norm seen | coupled bound, no gate fixed | layer-1 regions above the "
        "largest norm seen, layer 1 fixed | their layer-2 unstable neurons (median)"
    )
    for seed in range(5):
        net, c, pre, on, free, x, z1, z2 = sampled_box(seed)
        f1 = np.flatnonzero(free[0])
        layer1 = np.unique(z1[:, f1] > 0, axis=0)
        full, first = np.unique(np.hstack([z1 > 0, z2 > 0]), axis=0, return_index=True)
        seen = float(operator_norms(net.jacobians(x[first]), "l1").max())
        bound = CoupledBound(net)
        root = bound(on, free)[0]
        w1, w2, b1, b2 = net.weights[0], net.weights[1], net.biases[0], net.biases[1]
        above, unstable2 = 0, []
        for row in layer1:
            on1 = on[0].copy()
            on1[f1] = row
            a, a0 = w2 @ (on1[:, None] * w1), w2 @ (on1 * b1) + b2  # layer 2 is affine
            mid, rad = a @ c + a0, np.abs(a).sum(1) * RADIUS
            lo, hi = np.maximum(mid - rad, pre[1][0]), np.minimum(mid + rad, pre[1][1])
            free2 = ((lo < 0) & (hi > 0)).astype(float)
            if bound([on1, (lo >= 0).astype(float)], [0 * on1, free2])[0] > seen:
                above += 1
                unstable2.append(int(free2.sum()))
        median = int(np.median(unstable2)) if unstable2 else 0
        print(
            f"{seed} | {int(free[0].sum())}, {int(free[1].sum())} | {len(layer1)} | "
            f"{len(full)} | {seen:.4f} | {root:.4f} | {above} | {median}",
            flush=True,
        )


if __name__ == "__main__":
    main()
