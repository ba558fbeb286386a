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
exact over layer 2's completions once layer 1 is fixed (reachability aside).

Usage (repository root, package installed, about 4 minutes):
PYTHONPATH=. python docs/reproductions/lipschitz-exact/hard_row.py
"""

from __future__ import annotations

import itertools

import numpy as np

from bench.certify.lipschitz.relu import ReluMLP, operator_norms, preactivation_bounds
from tests.test_local_lipschitz import random_net

SIZES, RADIUS, SAMPLES = [8, 32, 32, 8], 0.5, 400_000


def sign_vectors(n: int, first_positive: bool) -> np.ndarray:
    """All of {-1, 1}^n as columns (n, 2^n), or the half with a +1 first entry."""
    s = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    return (s[s[:, 0] > 0] if first_positive else s).T


class CoupledBound:
    """max over (u, v) of sum_j max_{d2_j, h_j} d2_j g_j h_j for one two-hidden-layer net, with
    a = W_1 u for all u in {-1, 1}^n and g = W_3^T v for the v with v_0 = +1 (v and -v give
    the same norm) computed once. Called with `on` / `free` per hidden layer: 0/1 masks of the
    gates fixed on and of the gates not fixed."""

    def __init__(self, net: ReluMLP) -> None:
        w1, w2, w3 = net.weights
        self.a = w1 @ sign_vectors(w1.shape[1], False)
        self.a_neg, self.a_pos = np.minimum(self.a, 0), np.maximum(self.a, 0)
        g = (w3.T @ sign_vectors(w3.shape[0], True)).T
        self.g_pos, self.g_neg = np.maximum(g, 0), np.minimum(g, 0)
        self.w2_pos, self.w2_neg = np.maximum(w2, 0), np.minimum(w2, 0)

    def __call__(self, on: list[np.ndarray], free: list[np.ndarray]) -> float:
        t_lo = on[0][:, None] * self.a + free[0][:, None] * self.a_neg
        t_hi = on[0][:, None] * self.a + free[0][:, None] * self.a_pos
        h_lo = self.w2_pos @ t_lo + self.w2_neg @ t_hi
        h_hi = self.w2_pos @ t_hi + self.w2_neg @ t_lo
        total = (self.g_pos * on[1]) @ h_hi + (self.g_neg * on[1]) @ h_lo
        total += (self.g_pos * free[1]) @ np.maximum(h_hi, 0)
        total += (self.g_neg * free[1]) @ np.minimum(h_lo, 0)
        return float(total.max()) * (1 + 1e-9) + 1e-12  # rounding slack: it bounds, prunes


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
        root = bound(on, free)
        w1, w2, b1, b2 = net.weights[0], net.weights[1], net.biases[0], net.biases[1]
        above, unstable2 = 0, []
        for row in layer1:
            on1 = on[0].copy()
            on1[f1] = row
            a, a0 = w2 @ (on1[:, None] * w1), w2 @ (on1 * b1) + b2  # layer 2 is affine
            mid, rad = a @ c + a0, np.abs(a).sum(1) * RADIUS
            lo, hi = np.maximum(mid - rad, pre[1][0]), np.minimum(mid + rad, pre[1][1])
            free2 = ((lo < 0) & (hi > 0)).astype(float)
            if bound([on1, (lo >= 0).astype(float)], [0 * on1, free2]) > seen:
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
