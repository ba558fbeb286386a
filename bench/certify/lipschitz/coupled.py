"""The coupled bound on ||J||_{inf -> 1} of a two-hidden-layer ReLU MLP whose gates are
partly fixed: the node bound of the region search (regions.py).

||J||_{inf -> 1} = max over u in {-1, 1}^n, v in {-1, 1}^k of v^T J u (the l_inf ball's
vertices and the l_1 dual ball's), and v and -v give the same value, so v_0 = +1. With
J = W_3 D_2 W_2 D_1 W_1, g = W_3^T v and h = W_2 D_1 W_1 u: v^T J u = sum_j d2_j g_j h_j.
A gate not fixed has d in [0, 1]: h goes to an interval (exact once layer 1 is fixed) and
each term to its largest value on it. Fixing a gate shrinks every interval, so each pair's
bound only falls down the search tree; pairs already at or below an attained value can be
dropped from a node's descendants, which is what makes the bound cheap deep in the tree.
"""

from __future__ import annotations

import itertools

import numpy as np

from bench.certify.lipschitz.relu import ReluMLP
from bench.core.errors import ConfigError

MAX_PAIRS_LOG2 = 16  # 2^n input signs x 2^(k-1) output signs, enumerated
DENSE_ABOVE = 3000  # more active pairs than this: one dense product beats gathering
ROUNDING = 1e-9  # relative padding: the bound prunes, so it must not round below the truth


def sign_vectors(n: int, first_positive: bool) -> np.ndarray:
    """All of {-1, 1}^n as columns (n, 2^n), or the half with a +1 first entry."""
    s = np.array(list(itertools.product((-1.0, 1.0), repeat=n)))
    return (s[s[:, 0] > 0] if first_positive else s).T


def check_two_hidden_layers(net: ReluMLP) -> None:
    """Refuse a net the coupled bound does not cover, in one line."""
    if len(net.weights) != 3:
        raise ConfigError(
            f"the region search takes ReLU MLPs with two hidden layers, got {len(net.weights) - 1}"
        )
    n, k = net.weights[0].shape[1], net.weights[2].shape[0]
    if n + k - 1 > MAX_PAIRS_LOG2:
        raise ConfigError(
            f"the region search enumerates 2^(inputs + outputs - 1) sign pairs: {n} inputs and "
            f"{k} outputs exceed 2^{MAX_PAIRS_LOG2}"
        )


class CoupledBound:
    """Per-pair bounds max_{d, h} sum_j d2_j g_j h_j for every (v, u), given per hidden layer
    0/1 masks `on` (gates fixed on) and `free` (gates not fixed). Pairs are flat indices
    v * 2^n + u. a = W_1 u and g = W_3^T v are computed once."""

    def __init__(self, net: ReluMLP) -> None:
        check_two_hidden_layers(net)
        w1, w2, w3 = net.weights
        self.a = w1 @ sign_vectors(w1.shape[1], False)
        g = (w3.T @ sign_vectors(w3.shape[0], True)).T
        self.g_pos, self.g_neg = np.maximum(g, 0), np.minimum(g, 0)
        self.w2_pos, self.w2_neg = np.maximum(w2, 0), np.minimum(w2, 0)
        self.n_u = self.a.shape[1]
        self.pairs = g.shape[0] * self.n_u

    def _h(self, on: np.ndarray, free: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, ...]:
        """Bounds on h = W_2 D_1 a over the layer-1 gates not fixed (d in [0, 1])."""
        t_lo = on[:, None] * a + free[:, None] * np.minimum(a, 0)
        t_hi = on[:, None] * a + free[:, None] * np.maximum(a, 0)
        return self.w2_pos @ t_lo + self.w2_neg @ t_hi, self.w2_pos @ t_hi + self.w2_neg @ t_lo

    def dense(self, on: list[np.ndarray], free: list[np.ndarray]) -> np.ndarray:
        """Every pair's bound, flat."""
        h_lo, h_hi = self._h(on[0], free[0], self.a)
        total = (self.g_pos * on[1]) @ h_hi + (self.g_neg * on[1]) @ h_lo
        total += (self.g_pos * free[1]) @ np.maximum(h_hi, 0)
        total += (self.g_neg * free[1]) @ np.minimum(h_lo, 0)
        return _padded(total.ravel())

    def sparse(
        self, on: list[np.ndarray], free: list[np.ndarray], active: np.ndarray
    ) -> np.ndarray:
        """The bounds of the `active` pairs only: h for their distinct u, g for their v."""
        u, v = active % self.n_u, active // self.n_u
        distinct, column = np.unique(u, return_inverse=True)
        h_lo, h_hi = self._h(on[0], free[0], self.a[:, distinct])
        h_lo, h_hi = h_lo[:, column].T, h_hi[:, column].T
        total = (self.g_pos[v] * (on[1] * h_hi + free[1] * np.maximum(h_hi, 0))).sum(1)
        total += (self.g_neg[v] * (on[1] * h_lo + free[1] * np.minimum(h_lo, 0))).sum(1)
        return _padded(total)

    def __call__(
        self,
        on: list[np.ndarray],
        free: list[np.ndarray],
        active: np.ndarray | None = None,
        floor: float = -np.inf,
    ) -> tuple[float, np.ndarray]:
        """(max over the `active` pairs (all when None), the pairs whose bound is above
        `floor`). The max is the full coupled bound whenever it is above `floor`, provided
        the pairs left out were at or below `floor` at an ancestor (monotonicity)."""
        if active is None or len(active) > DENSE_ABOVE:
            total = self.dense(on, free)
            if active is None:
                active = np.arange(self.pairs)
            else:
                total = total[active]
        else:
            total = self.sparse(on, free, active)
        value = float(total.max()) if total.size else -np.inf
        return value, active[total > floor]


def _padded(total: np.ndarray) -> np.ndarray:
    return total + ROUNDING * np.abs(total) + 1e-12
