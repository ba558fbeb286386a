"""Modified Propose-Test-Release (Posthoc paper §4, supplement Alg. 1), one query at a time.

With d_X = l_inf in embedding space and d_Y = l_1 (REFERENCE.md §1):
1. the proposal DeltaP is fixed before any query (from training embeddings);
2. phi(x, R) = 1/2 max{R' in [R, R_max] : L(f, N(x, R')) <= DeltaP}, 0 if none (Lemma 4.2:
   phi <= gamma), over a fixed uniform grid R = r_0 < ... < r_N = R_max;
3. phi_hat = phi + Lap(R / eps); ⊥ if phi_hat <= ln(1/delta) R / eps (Lemma 4.3: phi has
   sensitivity <= R over neighbours, so this test is (eps, 0, R)-private);
4. else release f(z) + Lap(b) per coordinate, b = DeltaP R / eps (`release_scale`).
Theorem 4.4: (2 eps, delta / 2, R)-reconstruction privacy.

The release scale. Step 4 must be (eps, 0, R)-reconstruction private (Theorem 4.4's
composition). For x' with ||g(x) - g(x')||_inf <= R and phi > 0 (so L(f, N(g(x), R)) <=
DeltaP, certified), ||f(g(x)) - f(g(x'))||_1 <= DeltaP R: the l_1 sensitivity over
neighbours is DeltaP R, hence b = DeltaP R / eps (Laplace mechanism). The paper writes
Lap(DeltaP / eps), which covers this only for R <= 1 (and over-noises by 1/R there), and
under-noises for R > 1; DeltaP R / eps is exact for every R and is the scale under which,
as in the reference sweeps, accuracy depends on R / eps only.

Every decision "L(f, N(x, r)) <= DeltaP ?" is certified (`Certifier`): a fit-time region
certificate covering the box, a sampled Jacobian norm > DeltaP, a cheap sound upper bound
<= DeltaP, a budgeted input-splitting search (bench/certify/lipschitz/split.py), or the
exact search (`method`): its certified upper bound <= DeltaP, or a value it attains at a
point of the box > DeltaP. By default ("auto") the exact search is bench's activation-pattern
or region search (bench/certify/lipschitz/local.py), which settles exactly the decisions
LipMIP's node-limited MILP ("milp") can leave open. L grows with the box, so the feasible
grid points form a prefix r_0..r_J and phi = r_J / 2: a deterministic function of x whose
sensitivity is <= (d + step) / 2 <= R since step <= R (Lemma 4.3 on the grid).

The exact search runs on a work budget (`node_limit`: MILP nodes, or the searches' nodes
and LPs), never on seconds, so every decision is the same function of x on every machine.
A search that spends it undecided answers with its certified upper bound, never an
incumbent: the decision is "L > DeltaP" for that radius and every larger one, so the query
is refused rather than released on an unproven box, phi can only shrink (phi <= gamma,
Lemma 4.2, still holds), and the query is flagged (`exact` False, reported as `ptr_exact`):
Lemma 4.3's sensitivity bound is proven for phi built from exact decisions, so a flagged
query's test rests on the budgeted decision.

One decision per query (`ptr_test`). Alg. 1 releases iff phi + Z > t0, Z ~ Lap(R/eps),
t0 = ln(1/delta) R/eps. Drawing Z first, this is phi > t := t0 - Z: always when t < 0
(phi >= 0), else iff r_J > 2t, i.e. iff the first grid point above 2t is feasible (prefix).
So the test needs one certified decision instead of a bisection's ~log2(N), with the same
output distribution; `compute_phi` (the bisection) remains for reporting and the tests.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from bench.certify.lipschitz.local import (
    Method,
    OutNorm,
    ReluMLP,
    local_lipschitz,
    operator_norms,
    sampled_norms,
    upper_bound,
)
from bench.certify.lipschitz.split import decide_by_splitting
from bench.core.errors import ConfigError
from bench.plugin.accounting import check_privacy_params, laplace_scale


def release_scale(delta_p: float, eps: float, radius: float) -> float:
    """Laplace scale of the released values: b = DeltaP R / eps, the l_1 sensitivity of f
    over R-neighbours inside the certified box divided by eps (module docstring)."""
    return laplace_scale(eps, delta_p * radius)


def phi_noise_scale(eps: float, radius: float) -> float:
    """Laplace scale of the test noise on phi: R / eps (phi's sensitivity is R, Lemma 4.3)."""
    return laplace_scale(eps, radius)


def abstain_threshold(eps: float, delta: float, radius: float) -> float:
    """⊥ when phi_hat <= ln(1/delta) R / eps: then a phi of 0 passes w.p. delta / 2."""
    check_privacy_params(eps, delta, radius)
    return math.log(1.0 / delta) * radius / eps


def default_r_max(eps: float, delta: float, radius: float) -> float:
    """Search ceiling: phi = R_max / 2 passes the test with probability >= 1 - e^-4 / 2; at
    least 2 R so the grid [R, R_max] is never empty (large eps)."""
    return max(2.0 * (abstain_threshold(eps, delta, radius) + 4.0 * radius / eps), 2.0 * radius)


def grid_levels(eps: float, radius: float, r_max: float) -> int:
    """Grid depth m (N = 2^m steps): step (R_max - R) / 2^m <= min(R, R / (4 eps)), a quarter
    of the test's noise scale (phi then sits within R / (8 eps) of the grid-free maximum)."""
    target = min(radius, 0.25 * radius / eps)
    return max(1, math.ceil(math.log2(max(r_max - radius, target) / target)))


@dataclass(frozen=True)
class PTRConfig:
    """Public parameters of one PTR instance (all fixed before any query)."""

    eps: float
    delta: float
    radius: float
    delta_p: float
    r_max: float
    time_limit: float | None = None  # seconds per search; None: node budgets alone decide
    solver: str = "highs"  # a node-limited decision depends on it (bench.certify.milp)
    out_norm: OutNorm = "l1"
    samples: int = 64
    node_limit: int | None = 5000  # the exact search's work budget (module docstring)
    split_boxes: int = 200  # input-splitting budget before the exact search (0: none)
    # The exact search behind a decision the cheap bounds and the splitting search leave open:
    # "auto" (the default; bench.certify.lipschitz.local: the pattern or region search where
    # they apply, else the MILP) or "milp" (LipMIP's MILP, node-limited).
    method: Method = "auto"

    def __post_init__(self) -> None:
        check_privacy_params(self.eps, self.delta, self.radius)
        if not (self.delta_p > 0 and math.isfinite(self.delta_p)):
            raise ConfigError(
                f"PTR proposal DeltaP must be positive and finite, got {self.delta_p}"
            )
        if not self.r_max > self.radius:
            raise ConfigError(f"PTR needs R_max > R, got R_max={self.r_max}, R={self.radius}")

    @property
    def levels(self) -> int:
        return grid_levels(self.eps, self.radius, self.r_max)

    @property
    def last(self) -> int:
        """Index N of the last grid point (r_N = R_max)."""
        return 2**self.levels

    def grid_radius(self, j: int) -> float:
        """r_j = R + j (R_max - R) / N."""
        return self.radius + j * (self.r_max - self.radius) / self.last

    def first_point_above(self, s: float) -> int | None:
        """The smallest j with r_j > s, None when s >= R_max."""
        if s >= self.r_max:
            return None
        step = (self.r_max - self.radius) / self.last
        j = min(max(0, math.floor((s - self.radius) / step) + 1), self.last)
        while j > 0 and self.grid_radius(j - 1) > s:  # guard float rounding both ways
            j -= 1
        while self.grid_radius(j) <= s:
            j += 1
        return j


@dataclass(frozen=True)
class CertifiedRegion:
    """A fit-time certificate: L(f, [lo - R_max, hi + R_max]) <= `lipschitz` (sound). When
    that is <= DeltaP, every PTR box around an embedding inside [lo, hi] is feasible."""

    lo: np.ndarray
    hi: np.ndarray
    reach: float  # R_max: the largest box radius the certificate must cover
    lipschitz: float
    feasible: bool  # lipschitz <= DeltaP

    def covers(self, center: np.ndarray, r: float) -> bool:
        """True when N(center, r) lies inside the certified region and it is feasible."""
        return bool(
            self.feasible
            and r <= self.reach
            and np.all(center - r >= self.lo - self.reach)
            and np.all(center + r <= self.hi + self.reach)
        )


def certify_region(net: ReluMLP, z_train: np.ndarray, cfg: PTRConfig) -> CertifiedRegion:
    """One exact search over the training embeddings' bounding box grown by R_max (the server's own
    data, like DeltaP: fixed before any query), decided against DeltaP with a budget 20x a
    query's. It only short-cuts decisions the per-query path would certify the same way."""
    lo, hi = z_train.min(0), z_train.max(0)
    res = local_lipschitz(
        net,
        (lo + hi) / 2,
        (hi - lo) / 2 + cfg.r_max,
        cfg.out_norm,
        time_limit=None if cfg.time_limit is None else 20 * cfg.time_limit,
        solver=cfg.solver,
        threshold=cfg.delta_p,
        node_limit=None if cfg.node_limit is None else 20 * cfg.node_limit,
        method=cfg.method,
    )
    return CertifiedRegion(lo, hi, cfg.r_max, res.upper, res.upper <= cfg.delta_p)


class Certifier:
    """Memoised certified decisions "L(f, N(z, r_j)) <= DeltaP" on the grid, for one z.

    Decisions are kept monotone in j (module docstring): a True at j is certified and
    implies True below it; a False (certified or budget-exhausted) is extended above it."""

    def __init__(
        self,
        net: ReluMLP,
        center: np.ndarray,
        cfg: PTRConfig,
        region: CertifiedRegion | None = None,
    ) -> None:
        self.net, self.center, self.cfg, self.region = net, center, cfg, region
        self.true_up_to, self.false_from = -1, cfg.last + 1
        self.exact, self.milps = True, 0
        self._sampled: tuple[np.ndarray, np.ndarray] | None = None
        self._witnesses: list[tuple[float, float]] = []  # (distance, Jacobian norm)

    def _sampled_above(self, r: float) -> bool:
        """A sampled point within distance r has a Jacobian norm above DeltaP (so L > it).
        Sampled once over the largest box (fixed seed: deterministic in z, no privacy RNG)."""
        if self._sampled is None:
            dist, norms = sampled_norms(
                self.net,
                self.center,
                self.cfg.r_max,
                self.cfg.samples,
                np.random.default_rng(0),
                self.cfg.out_norm,
            )
            order = np.argsort(dist)
            self._sampled = dist[order], np.maximum.accumulate(norms[order])
        dist, running_max = self._sampled
        i = int(np.searchsorted(dist, r, side="right")) - 1
        if i >= 0 and running_max[i] > self.cfg.delta_p:
            return True
        return any(d <= r and norm > self.cfg.delta_p for d, norm in self._witnesses)

    def _decide(self, r: float) -> bool:
        cfg = self.cfg
        if self.region is not None and self.region.covers(self.center, r):
            return True
        if self._sampled_above(r):
            return False
        if upper_bound(self.net, self.center, r, cfg.out_norm) <= cfg.delta_p:
            return True
        if cfg.split_boxes > 0:
            split = decide_by_splitting(
                self.net, self.center, r, cfg.delta_p, cfg.out_norm, max_boxes=cfg.split_boxes
            )
            if split.below is not None:
                return split.below
        self.milps += 1
        res = local_lipschitz(
            self.net,
            self.center,
            r,
            cfg.out_norm,
            time_limit=cfg.time_limit,
            solver=cfg.solver,
            threshold=cfg.delta_p,
            samples=8,
            node_limit=cfg.node_limit,
            method=cfg.method,
        )
        if res.argmax is not None:  # the incumbent's point lower-bounds every box holding it
            norm = float(operator_norms(self.net.jacobians(res.argmax[None]), cfg.out_norm)[0])
            self._witnesses.append((float(np.abs(res.argmax - self.center).max()), norm))
        if res.upper <= cfg.delta_p:  # certified upper bound: the box is feasible
            return True
        if res.lower <= cfg.delta_p:  # budget spent undecided: refuse this radius, flag
            self.exact = False
        return False  # else an attained value > DeltaP: certified infeasible

    def feasible(self, j: int) -> bool:
        """The (memoised, monotone) decision at grid point j."""
        if j <= self.true_up_to:
            return True
        if j >= self.false_from:
            return False
        if self._decide(self.cfg.grid_radius(j)):
            self.true_up_to = j
            return True
        self.false_from = j
        return False


@dataclass(frozen=True)
class PhiResult:
    """phi(x, R) and how it was obtained."""

    phi: float
    exact: bool  # every decision certified (no undecided budget exhaustion)
    milps: int
    seconds: float


def compute_phi(
    net: ReluMLP, center: np.ndarray, cfg: PTRConfig, region: CertifiedRegion | None = None
) -> PhiResult:
    """phi(x, R) = r_J / 2 by bisection over the grid indices (Alg. 1's binary search)."""
    start = time.perf_counter()
    cert = Certifier(net, center, cfg, region)
    if not cert.feasible(0):
        phi = 0.0
    elif cert.feasible(cfg.last):
        phi = cfg.r_max / 2
    else:
        lo, hi = 0, cfg.last  # invariant: feasible(lo), not feasible(hi)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if cert.feasible(mid):
                lo = mid
            else:
                hi = mid
        phi = cfg.grid_radius(lo) / 2
    return PhiResult(phi, cert.exact, cert.milps, time.perf_counter() - start)


@dataclass(frozen=True)
class QueryDecision:
    """The PTR test's outcome for one query: released or ⊥, from one certified decision."""

    released: bool
    radius: float | None  # the grid radius decided (None: settled by the noise alone)
    exact: bool
    milps: int
    seconds: float


def ptr_test(cert: Certifier, noise: float) -> QueryDecision:
    """Alg. 1's test given the drawn Z = `noise`: release iff phi + Z > t0 (module
    docstring: one decision at the first grid point above 2 (t0 - Z))."""
    start = time.perf_counter()
    cfg = cert.cfg
    t = abstain_threshold(cfg.eps, cfg.delta, cfg.radius) - noise
    milps = cert.milps
    if t < 0:
        return QueryDecision(True, None, True, 0, time.perf_counter() - start)
    j = cfg.first_point_above(2 * t)
    if j is None:
        return QueryDecision(False, None, True, 0, time.perf_counter() - start)
    released = cert.feasible(j)
    return QueryDecision(
        released, cfg.grid_radius(j), cert.exact, cert.milps - milps, time.perf_counter() - start
    )
