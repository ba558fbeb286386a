"""Audit of Posthoc PTR's own randomised steps (`posthoc-ptr`; "Posthoc privacy guarantees for
collaborative inference with modified Propose-Test-Release", NeurIPS 2023, Sec. 4 and its
supplement).

The claim, (2 eps, delta/2, R)-reconstruction privacy over l_inf in EMBEDDING space, is
Theorem 4.4's composition of two steps, each calibrated to eps:
- step 3, the test: phi_hat = phi(z) + Lap(R / eps), ⊥ when phi_hat <= ln(1/delta) R / eps.
  Its ⊥ indicator is a function of phi_hat alone, and the first display of Theorem 4.4's
  proof bounds phi_hat's privacy loss on a pair by |phi(z) - phi(z')| eps / R (the Laplace
  mechanism, as metric privacy), which Lemma 4.3 (|Delta phi| <= d(z, z') <= R) turns
  into eps;
- step 4, the release: f(z) + Lap(DeltaP R / eps) per coordinate, (eps, 0, R)-private
  wherever phi > 0 (the certificate L(f, N(z, R)) <= DeltaP bounds ||f(z) - f(z')||_1 by
  DeltaP R: the Laplace mechanism; mechanisms/posthoc/ptr.py).
So the audit tests each step against its own eps, on pairs (z0, z1) built in embedding
space with ||z0 - z1||_inf <= R (random corners of the l_inf ball, and the corner that
maximises ||f(z1) - f(z0)||_1, found by sign-gradient ascent):
- "release" test, on pairs with phi(z0) = phi(z1) > 0: there the two ⊥ laws are equal and
  independent of the release noise, so the composed mechanism on the pair is step 4 mixed
  with the same ⊥ weight on both sides, and (Theorem 4.4, second case) must be
  (eps, 0)-indistinguishable. Statistic: the exact Laplace log-likelihood ratio of the
  release, -inf on ⊥ (a fixed function of the whole output, so the test stays valid);
- "⊥" test, on pairs with phi(z0) != phi(z1): the ⊥ indicator must be
  (eps |Delta phi| / R, 0)-indistinguishable; its bound is reported divided by
  |Delta phi| / R, i.e. as a bound on the eps step 3's noise is calibrated to.
phi of each side is computed once, by the mechanism's own memoised certifier (its MILPs
are never re-run per draw); every draw then costs two noise draws, made in release()'s
order from the mechanism's own noise models (`cfg` for the test: release() takes eps and R
from the same parameters; `noise()` for the release). A replay check first releases one
real input through `release()` and the vectorised model with the same generator and
demands the same ⊥ decisions and values: only then do the audit's draws stand for the
mechanism's. The model's draws run in blocks with generators derived from the seed by
index, reduced to scores (selection) or error counts (evaluation) as they are drawn, by
the audit's worker threads (bench/certify/audit/draws.py: the same numbers for any
number of workers). Selection and evaluation use disjoint draws, as in core.py.

eps_lb is reported on the claim's scale: 2 x the step bound, a 95% lower bound on 2 eps*,
where eps* is the smallest eps for which Theorem 4.4's premises (each step eps-private)
hold on the audited pairs. A correct mechanism stays below its claim with probability
>= 95%; a step under-noised by 0.8x shows as eps_lb ~ 2.5 eps > 2 eps. It bounds the
theorem's premise, not the composed mechanism's own loss on one pair, which can be lower.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from bench.certify.audit.bounds import eps_detectable, eps_lower_bound
from bench.certify.audit.draws import CHUNK_RELEASES, Stream, run_streams
from bench.certify.audit.power import gdp_mu_estimate, plan_at, planned_draws
from bench.certify.audit.registry import AuditOptions, Claim
from bench.certify.audit.result import (
    AuditResult,
    audit_generator,
    draw_counter,
    result_builder,
)
from bench.certify.audit.thresholds import best_threshold
from bench.core.device import host_view
from bench.plugin.accounting import laplace_scale
from bench.plugin.protocols import Mechanism, NoiseModel, Task

DISTANCE = "linf/embedding"
STEPS = 2  # Theorem 4.4 composes the test and the release, each at eps
REPLAY_DRAWS = 256
CHUNK = 1 << 14  # draws per vectorised call (one block: its own generator, draws.py)
MIN_SELECT = 20_000  # selection draws per pair and side, at least
SELECT_FRACTION = 16
# Cost units per noise value drawn and scored (a float64 uniform, a log, the likelihood
# ratio): core.py's scale (about 2e8 units per second), measured once, never timed.
UNITS_PER_VALUE = 100
ASCENT_STEPS = 60
ANCHORS = 1  # test inputs whose embeddings anchor the pairs
# New certified MILPs the audit may spend settling phi (the mechanism's own time / node
# limits bound each): inside the fit-time region certificate none are needed; outside, a
# partner that would need more is left out rather than the job made minutes slower.
MILP_BUDGET = 1


def claims_embedding_distance(claim: Claim) -> bool:
    """Whether a claim is over l_inf in embedding space, the claim this audit tests."""
    return claim.distance == DISTANCE


@dataclass(frozen=True)
class Side:
    """One embedding of a pair: z (float64 holding float32 values), f(z), and r_top, the
    largest grid radius the certifier decides feasible (-inf: none; phi = r_top / 2)."""

    z: np.ndarray
    out: torch.Tensor
    r_top: float

    @property
    def phi(self) -> float:
        return max(self.r_top, 0.0) / 2


class PTRModel:
    """release() of PosthocPTR for one embedding, vectorised: per chunk of m draws, the test
    noise (m,) then the release noise (m, k) from the same generator, in release()'s order.
    The test releases iff r_top > 2 (t0 - Z) or t0 - Z < 0 (ptr.ptr_test's single decision
    at the first grid point above 2 (t0 - Z), for a memoised monotone certifier)."""

    def __init__(self, mechanism: Any, milp_budget: int = 0) -> None:
        cfg = mechanism.cfg
        self.mechanism = mechanism
        self.milp_budget, self.milps_used = milp_budget, 0
        self.threshold = math.log(1.0 / cfg.delta) * cfg.radius / cfg.eps  # Alg. 1, step 3
        self.test_noise = NoiseModel("laplace", laplace_scale(cfg.eps, cfg.radius))
        self.release_noise: NoiseModel = mechanism.noise()

    @torch.no_grad()
    def side(self, z: torch.Tensor) -> Side | None:
        """z (d,) float32 -> its Side, phi from the mechanism's own memoised certifier (so
        release() agrees with it afterwards): the top grid point first (inside the fit-time
        region certificate it settles phi at once), then a bisection. A decision not yet
        memoised is made only while the audit's MILP budget lasts (a decision runs at most
        one MILP); None when the budget is spent before phi is settled."""
        mech, cfg = self.mechanism, self.mechanism.cfg
        z64 = z.detach().double().numpy()
        cert = mech.certifier(z64)

        def feasible(j: int) -> bool | None:
            if cert.true_up_to < j < cert.false_from and self.milps_used >= self.milp_budget:
                return None
            before = cert.milps
            answer = bool(cert.feasible(j))
            self.milps_used += cert.milps - before
            return answer

        top = feasible(cfg.last)
        if top is None:
            return None
        if top:
            r_top = cfg.grid_radius(cfg.last)
        else:
            bottom = feasible(0)
            if bottom is None:
                return None
            lo, hi = 0, cfg.last  # feasible(lo), not feasible(hi)
            while bottom and hi - lo > 1:
                mid = (lo + hi) // 2
                answer = feasible(mid)
                if answer is None:
                    return None
                lo, hi = (mid, hi) if answer else (lo, mid)
            r_top = cfg.grid_radius(lo) if bottom else -math.inf
        return Side(z64, host_view(mech.f)(z.float().unsqueeze(0))[0], r_top)

    def draw(self, side: Side, m: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """(released (m,) bool, values (m, k) float32) of m releases of `side`."""
        test = self.test_noise.sample(torch.Size((m,)), gen).double()
        values = side.out + self.release_noise.sample(torch.Size((m, len(side.out))), gen)
        t = self.threshold - test
        return (t < 0) | (side.r_top > 2 * t), values


def replay(mechanism: Mechanism, model: PTRModel, x: torch.Tensor, seed: int) -> Side | str:
    """The anchor side g(x), after checking that release() of `x` REPLAY_DRAWS times and
    the model with the same generator give the same ⊥ decisions and values (float
    tolerance); or why not."""
    batch = x.expand(REPLAY_DRAWS, *x.shape).clone()
    with torch.no_grad():
        z = host_view(mechanism.vae)(batch)[0]  # type: ignore[attr-defined]
    side = model.side(z)
    if side is None:
        return f"phi of the anchor embedding needs more than {model.milp_budget} MILPs"
    real = mechanism.release(batch, audit_generator(seed, "ptr/replay"))
    released, values = model.draw(side, REPLAY_DRAWS, audit_generator(seed, "ptr/replay"))
    kept = real.values[released].float()
    if not (
        torch.equal(real.released.bool(), released)
        and kept.shape == values[released].shape
        and torch.allclose(kept, values[released], rtol=1e-4, atol=1e-5)
    ):
        return (
            "release() does not reproduce the PTR model read from the mechanism's cfg, "
            "noise() and certifier (replay check): the vectorised audit would test another "
            "mechanism"
        )
    return side


@dataclass(frozen=True)
class Candidate:
    """A pair and the step test that applies to it. `factor` turns the pair's bound into a
    bound on the step's eps (1 for the release; R / |Delta phi| for ⊥)."""

    index: int
    sides: tuple[Side, Side]
    kind: str  # "release" or "⊥"
    factor: float
    score: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    distance: float


def _worst_direction(f: Any, z0: torch.Tensor, radius: float, gen: torch.Generator) -> torch.Tensor:
    """s in [-1, 1]^d maximising ||f(z0 + R s) - f(z0)||_1 (sign-gradient ascent from a
    random start, then the better of the end point and its rounding to a corner)."""
    with torch.no_grad():
        f0 = f(z0.unsqueeze(0))
    s = (2 * torch.rand(z0.shape, generator=gen) - 1).requires_grad_(True)

    def gap(v: torch.Tensor) -> torch.Tensor:
        return (f((z0 + radius * v).unsqueeze(0)) - f0).abs().sum()

    for _ in range(ASCENT_STEPS):
        (grad,) = torch.autograd.grad(gap(s), s)
        with torch.no_grad():
            s = (s + 0.25 * torch.sign(grad)).clamp(-1.0, 1.0).requires_grad_(True)
    s = s.detach()
    corner = torch.where(s >= 0, 1.0, -1.0)
    with torch.no_grad():
        return corner if gap(corner) >= gap(s) else s


def _partner(z0: torch.Tensor, s: torch.Tensor, radius: float) -> torch.Tensor:
    """z0 + R s in float32, pulled in until its l_inf distance (in float64) is <= R."""
    shrink = 1.0 - 1e-6
    while True:
        z1 = (z0.double() + radius * shrink * s.double()).float()
        if float((z1.double() - z0.double()).abs().max()) <= radius:
            return z1
        shrink *= 1.0 - 1e-6


def candidates(
    model: PTRModel, anchors: list[Side], radius: float, n_random: int, n_worst: int, seed: int
) -> list[Candidate]:
    """The pairs around each anchor embedding and the step test each one admits (pairs
    whose partner's phi the MILP budget cannot settle are left out)."""
    mech: Any = model.mechanism
    gen = audit_generator(seed, "ptr/pairs")
    out: list[Candidate] = []
    for first in anchors:
        z0 = torch.from_numpy(first.z).float()
        directions = [
            torch.where(torch.rand(z0.shape, generator=gen) < 0.5, -1.0, 1.0)
            for _ in range(n_random)
        ]
        f = host_view(mech.f)  # the ascent runs on the CPU
        directions += [_worst_direction(f, z0, radius, gen) for _ in range(n_worst)]
        for s in directions:
            a, b = first, model.side(_partner(z0, s, radius))
            if b is None:
                continue
            distance = float(np.abs(b.z - a.z).max())
            if a.r_top == b.r_top and a.r_top > 0 and not torch.equal(a.out, b.out):
                scale = model.release_noise.scale
                m0, m1 = a.out.double().unsqueeze(0), b.out.double().unsqueeze(0)

                def llr(released: torch.Tensor, y: torch.Tensor, m0=m0, m1=m1, scale=scale):
                    # The Laplace log-likelihood ratio in float64 from the released float32
                    # values, rounded to 1e-9: its atom at the largest loss is one value, so
                    # no threshold splits it by float rounding (a side channel of the float
                    # encoding, not of the mechanism the claim describes).
                    y = y.double()
                    s_ = ((y - m0).abs().sum(1) - (y - m1).abs().sum(1)) / scale
                    return torch.where(released, torch.round(s_, decimals=9), -math.inf)

                out.append(Candidate(len(out), (a, b), "release", 1.0, llr, distance))
            elif a.phi != b.phi:
                lo, hi = (a, b) if a.phi < b.phi else (b, a)  # x1: the more-released side
                factor = radius / (hi.phi - lo.phi)

                def indicator(released: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
                    return released.double()

                out.append(Candidate(len(out), (lo, hi), "⊥", factor, indicator, distance))
    return out


def _draw_scores(
    model: PTRModel, cand: Candidate, side: int
) -> Callable[[int, torch.Generator], np.ndarray]:
    """m releases of one side of the candidate's pair, reduced to the candidate's scores."""

    def scores(m: int, gen: torch.Generator) -> np.ndarray:
        released, values = model.draw(cand.sides[side], m, gen)
        return cand.score(released, values).numpy()

    return scores


def _draw_count(
    model: PTRModel, cand: Candidate, side: int, threshold: float
) -> Callable[[int, torch.Generator], int]:
    """m releases of one side, reduced to its error count at `threshold`: scores above it
    on side 0 (false positives), at or below it on side 1 (false negatives)."""
    scores = _draw_scores(model, cand, side)

    def count(m: int, gen: torch.Generator) -> int:
        s = scores(m, gen)
        return int(np.count_nonzero(s > threshold if side == 0 else s <= threshold))

    return count


def _select(
    model: PTRModel,
    cands: list[Candidate],
    n_sel: int,
    n_eval: int,
    alpha: float,
    seed: int,
    draw_options: dict[str, Any],
) -> tuple[float, Candidate, float] | None:
    """Every candidate's selection draws (both sides, all candidates in one pool run) and
    the (candidate, threshold) whose bound at the evaluation's size, times its factor, is
    the largest."""
    streams = [
        Stream(f"ptr/sel/{c.index}/{side}", n_sel, CHUNK, _draw_scores(model, c, side))
        for c in cands
        for side in (0, 1)
    ]
    results = run_streams(streams, seed, **draw_options)
    best: tuple[float, Candidate, float] | None = None
    for j, c in enumerate(cands):
        s0, s1 = np.concatenate(results[2 * j]), np.concatenate(results[2 * j + 1])
        threshold, bound = best_threshold(s0, s1, 0.0, alpha, n_eval)
        if best is None or c.factor * bound > best[0]:
            best = (c.factor * bound, c, threshold)
    return best


def _evaluate(
    model: PTRModel,
    cand: Candidate,
    threshold: float,
    n_eval: int,
    seed: int,
    draw_options: dict[str, Any],
) -> tuple[int, int]:
    """(false positives, false negatives) of the chosen test on fresh draws, counted as
    they are drawn."""
    streams = [
        Stream(f"ptr/eval/{side}", n_eval, CHUNK, _draw_count(model, cand, side, threshold))
        for side in (0, 1)
    ]
    fp, fn = run_streams(streams, seed, **draw_options)
    return sum(fp), sum(fn)


def _loss_coordinates(cands: list[Candidate]) -> int:
    """The most output coordinates a release pair's f values differ in (1 without one)."""
    k = 1
    for c in cands:
        if c.kind == "release":
            gap = (c.sides[1].out - c.sides[0].out).abs()
            k = max(k, int((gap > 1e-9 * gap.max().clamp_min(1e-30)).sum()))
    return k


def audit_ptr(
    mechanism: Mechanism,
    task: Task,
    seed: int,
    claim: Claim,
    options: AuditOptions,
) -> AuditResult:
    """Audit a fitted Posthoc PTR mechanism's two steps (module docstring); deterministic
    given `seed`. Sizes and `progress` as in core.audit_mechanism, planned for the release
    step."""
    result = result_builder(mechanism, claim, time.perf_counter())
    eps, radius = claim.eps, claim.radius
    n_draws, n_select, ratio = options.n_draws, options.n_select, options.ratio
    confidence = options.confidence

    if eps is None or not (eps > 0 and math.isfinite(eps)) or not (radius and radius > 0):
        return result(audited=False, reason="the PTR claim declares no positive eps and radius")
    step_eps = eps / STEPS
    alpha = 1.0 - confidence
    test_x = task.splits().test.x
    gen = audit_generator(seed, "ptr/anchors")
    index = torch.randperm(len(test_x), generator=gen)[:ANCHORS]
    x = test_x[index].float()
    model = PTRModel(mechanism, MILP_BUDGET)
    anchor = replay(mechanism, model, x[0], seed)
    if isinstance(anchor, str):
        return result(audited=False, reason=anchor)
    cands = candidates(model, [anchor], float(radius), options.n_random, options.n_worst, seed)
    k = _loss_coordinates(cands)
    if n_draws is not None:
        plan = plan_at("laplace", step_eps, 0.0, n_draws, ratio=ratio, alpha=alpha, coordinates=k)
    else:
        per_draw = UNITS_PER_VALUE * (1 + k)
        selection = 2 * max(1, len(cands)) / SELECT_FRACTION
        cap = max(MIN_SELECT, int(options.max_cost / (per_draw * (2 + selection))))
        plan = planned_draws(
            "laplace",
            step_eps,
            0.0,
            ratio=ratio,
            target=options.target_power,
            max_draws=cap,
            coordinates=k,
        )
    n_eval = plan.n_draws
    n_sel = n_select if n_select is not None else max(MIN_SELECT, n_eval // SELECT_FRACTION)
    power_fields: dict[str, Any] = {
        "eps_ideal": STEPS * plan.ideal,
        "power": plan.power,
        "ratio": ratio,
        "n_select": n_sel,
        "n_pairs": len(cands),
        "confidence": confidence,
        "eps_detectable": STEPS * eps_detectable(n_eval, n_eval, 0.0, alpha),
        "workers": options.workers,
    }
    draw_options: dict[str, Any] = {
        "workers": options.workers,
        "chunk": options.chunk or CHUNK_RELEASES,
        "counted": draw_counter(options.progress, 2 * n_sel * len(cands) + 2 * n_eval),
    }
    best = _select(model, cands, n_sel, n_eval, alpha, seed, draw_options)
    if best is None:
        return result(
            eps_lb=0.0,
            reason=(
                "no embedding pair within R differs in phi or (at equal phi > 0) in f, of "
                f"those whose phi {MILP_BUDGET} MILPs could settle"
            ),
            **power_fields,
        )
    _, c, threshold = best
    false_pos, false_neg = _evaluate(model, c, threshold, n_eval, seed, draw_options)
    pair_lb = float(eps_lower_bound(false_pos, n_eval, false_neg, n_eval, 0.0, alpha))
    eps_lb = STEPS * c.factor * pair_lb
    if c.kind == "release":
        statistic = "PTR release likelihood-ratio (Thm 4.4 step 4 at equal phi; eps_lb = 2 x step)"
    else:
        dphi = c.sides[1].phi - c.sides[0].phi
        statistic = (
            f"PTR ⊥ indicator (Thm 4.4 step 3, Delta phi {dphi:.3g} = {1 / c.factor:.3g} R; "
            "eps_lb = 2 x pair bound x R / Delta phi)"
        )
    return result(
        passed=eps_lb <= eps,
        eps_lb=eps_lb,
        n_draws=n_eval,
        pair=f"embedding pair at l_inf {c.distance:.3g} (pair {c.index + 1} of {len(cands)})",
        statistic=statistic,
        threshold=threshold,
        fpr=false_pos / n_eval,
        fnr=false_neg / n_eval,
        mu_gdp=gdp_mu_estimate(false_pos / n_eval, false_neg / n_eval, n_eval),
        eps_gdp=None,
        releases=2 * n_sel * len(cands) + 2 * n_eval,
        **power_fields,
    )
