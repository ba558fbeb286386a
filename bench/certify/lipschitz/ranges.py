"""Sign tests of an affine function over a layer-1 region, for the region search
(regions.py): "is a.x + a0 <= 0 on {x in the box : sigma_i z_i(x) >= 0 for the fixed
layer-1 gates i}?"

The region is a polytope (layer 1 is affine in x), so one LP answers exactly. Its duals are
kept: by weak LP duality, for any mu with mu_i sigma_i >= 0 on fixed gates and 0 elsewhere,
max over the box of a.x + a0 + sum_i mu_i z_i(x) bounds a.x + a0 on the region, and that
max has a closed form. A certificate found for one region is tried first on every later
region that fixes the same gates with the same signs: most regions of a search differ from
an earlier one in a few gates, and the closed form costs a matrix product where the LP costs
a solver call. A certificate is used only when its closed form proves the sign itself, so
a reused one is as sound as a fresh LP.
"""

from __future__ import annotations

from collections.abc import Hashable

import numpy as np

from bench.certify.lipschitz.patterns import MARGIN_TOL

KEEP = 512  # certificates kept per key (the latest): trying them must cost less than an LP


class LayerOneRanges:
    """The LP "max a.x over the box and the fixed layer-1 gates' half-spaces" in one HiGHS
    instance (the gates' rows switch on through their bounds), with a certificate cache per
    caller-chosen key."""

    def __init__(self, w: np.ndarray, b: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        import highspy

        self._hs = highspy
        self.w, self.b, self.lo, self.hi = w, b, lo, hi
        self.center, self.radius = (lo + hi) / 2, (hi - lo) / 2
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("threads", 1)
        self.inf = highspy.kHighsInf
        n = w.shape[1]
        h.addCols(n, np.zeros(n), lo, hi, 0, [], [], [])
        for row in w:
            h.addRow(-self.inf, self.inf, n, np.arange(n, dtype=np.int32), row)
        h.changeObjectiveSense(highspy.ObjSense.kMaximize)
        self.h, self.n = h, n
        self.rows = np.arange(len(w), dtype=np.int32)
        self.certificates: dict[Hashable, np.ndarray] = {}
        self.lps = self.reused = 0

    def _box_max(self, coef: np.ndarray, const: np.ndarray | float) -> np.ndarray:
        return coef @ self.center + np.abs(coef) @ self.radius + const

    def _certified(self, mu: np.ndarray, a: np.ndarray, a0: float) -> np.ndarray:
        """Whether each certificate (rows of mu) proves a.x + a0 < 0 on the region."""
        return self._box_max(a + mu @ self.w, a0 + mu @ self.b) < 0

    def never_positive(
        self, key: Hashable, a: np.ndarray, a0: float, signs: np.ndarray
    ) -> tuple[bool, np.ndarray | None]:
        """(True, None) when a.x + a0 < 0 on the closed region of `signs` (+1 on, -1 off,
        0 not fixed, per gate), else (False, a point of the region where it is >= -tol, or
        None when the solver gave no answer: sound, the gate is just left open).
        `key` names the function family whose certificates are tried first."""
        known = self.certificates.get(key)
        if known is not None:
            usable = ((known == 0) | (np.sign(known) == signs)).all(1)
            if usable.any() and self._certified(known[usable], a, a0).any():
                self.reused += 1
                return True, None
        self.lps += 1
        h = self.h
        h.changeRowsBounds(
            len(self.rows),
            self.rows,
            np.where(signs > 0, -self.b, -self.inf),
            np.where(signs < 0, -self.b, self.inf),
        )
        h.changeColsCost(self.n, np.arange(self.n, dtype=np.int32), a)
        h.run()
        status = h.getModelStatus()
        if status == self._hs.HighsModelStatus.kInfeasible:
            return True, None  # the region itself is empty: vacuously never positive
        if status != self._hs.HighsModelStatus.kOptimal:
            return False, None  # no answer from the solver: assume it can be positive
        solution = h.getSolution()
        if h.getInfo().objective_function_value + a0 >= -MARGIN_TOL:
            return False, np.asarray(solution.col_value)
        mu = np.abs(np.asarray(solution.row_dual)) * signs
        if self._certified(mu[None], a, a0)[0]:
            kept = known[1 - KEEP :] if known is not None else np.empty((0, len(mu)))
            self.certificates[key] = np.vstack([kept, mu])
        return True, None
