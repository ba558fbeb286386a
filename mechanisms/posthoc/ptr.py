"""Modified Propose-Test-Release (Posthoc paper §4, supplement Alg. 1), one query at a time.

With d_X = l_inf in embedding space and d_Y = l_1 (REFERENCE.md §1):
1. the proposal DeltaP is fixed before any query (from training embeddings);
2. phi(x, R) = 1/2 max{R' in [R, R_max] : L(f, N(x, R')) <= DeltaP}, 0 if none (Lemma 4.2:
   phi <= gamma), by bisection on a fixed dyadic grid of [R, R_max];
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

Every decision "L(f, N(x, r)) <= DeltaP ?" is exact for the MILP's constant (LipMIP's):
cheap sound upper bound <= DeltaP, a sampled Jacobian norm > DeltaP, the MILP's certified
dual bound <= DeltaP, or its incumbent > DeltaP. The bisection then returns the largest
feasible grid point, a deterministic function of x whose sensitivity is <= (d + step) / 2
<= R since step <= R, so Lemma 4.3 carries over to the grid. Only a MILP that hits its time
limit undecided leaves a decision inexact: it is treated as "L > DeltaP" (phi can only
shrink, keeping phi <= gamma) and the query is flagged (`PhiResult.exact` False).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from bench.certify.local_lipschitz import (
    OutNorm,
    ReluMLP,
    local_lipschitz,
    operator_norms,
    sampled_norms,
    upper_bound,
)
from bench.errors import ConfigError
from mechanisms.calibration import check_privacy_params, laplace_scale


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
    """Search ceiling: phi = R_max / 2 passes the test with probability >= 1 - e^-4 / 2."""
    return 2.0 * (abstain_threshold(eps, delta, radius) + 4.0 * radius / eps)


def grid_levels(eps: float, radius: float, r_max: float) -> int:
    """Bisection depth: grid step (R_max - R) / 2^m <= min(R, R / (4 eps)), a quarter of the
    test's noise scale (phi then sits within R / (8 eps) of the grid-free maximum)."""
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
    time_limit: float = 10.0
    solver: str = "auto"
    out_norm: OutNorm = "l1"
    samples: int = 64

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


@dataclass(frozen=True)
class PhiResult:
    """phi(x, R) and how it was obtained."""

    phi: float
    lipschitz_upper: float  # certified upper bound on L(f, N(x, R))
    exact: bool  # every decision certified (no undecided time-out)
    milps: int
    seconds: float


def compute_phi(net: ReluMLP, center: np.ndarray, cfg: PTRConfig) -> PhiResult:
    """phi(x, R) by bisection over the fixed grid (module docstring)."""
    start = time.perf_counter()
    # Jacobian norms at points spread over the largest box: each lower-bounds L for every
    # box (around x) that contains its point. Deterministic in x (fixed seed), no privacy RNG.
    dist, norms = sampled_norms(
        net, center, cfg.r_max, cfg.samples, np.random.default_rng(0), cfg.out_norm
    )
    order = np.argsort(dist)
    dist, running_max = dist[order], np.maximum.accumulate(norms[order])
    state = {"milps": 0, "exact": True}
    found: list[tuple[float, float]] = []  # (distance, Jacobian norm) at MILP incumbents

    def feasible(r: float) -> bool:
        i = int(np.searchsorted(dist, r, side="right")) - 1
        if i >= 0 and running_max[i] > cfg.delta_p:
            return False  # a point of the box has a Jacobian norm above DeltaP
        if any(d <= r and norm > cfg.delta_p for d, norm in found):
            return False
        if upper_bound(net, center, r, cfg.out_norm) <= cfg.delta_p:
            return True
        state["milps"] += 1
        res = local_lipschitz(
            net,
            center,
            r,
            cfg.out_norm,
            time_limit=cfg.time_limit,
            solver=cfg.solver,
            threshold=cfg.delta_p,
            samples=8,
        )
        if res.argmax is not None:  # the incumbent's point lower-bounds every box holding it
            point = res.argmax[None]
            norm = float(operator_norms(net.jacobians(point), cfg.out_norm)[0])
            found.append((float(np.abs(res.argmax - center).max()), norm))
        if res.upper <= cfg.delta_p:
            return True
        if res.lower <= cfg.delta_p:  # undecided at the time limit: shrink (sound), flag
            state["exact"] = False
        return False

    lip_r = upper_bound(net, center, cfg.radius, cfg.out_norm)
    if not feasible(cfg.radius):
        return PhiResult(
            0.0, lip_r, bool(state["exact"]), int(state["milps"]), time.perf_counter() - start
        )
    if feasible(cfg.r_max):
        lo = cfg.r_max
    else:
        lo, hi = cfg.radius, cfg.r_max
        for _ in range(cfg.levels):
            mid = (lo + hi) / 2
            if feasible(mid):
                lo = mid
            else:
                hi = mid
    return PhiResult(
        lo / 2,
        min(lip_r, cfg.delta_p),
        bool(state["exact"]),
        int(state["milps"]),
        time.perf_counter() - start,
    )
