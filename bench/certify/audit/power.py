"""Audit sizing and power: how many draws an audit needs, and what it could have shown.

A claim of the declared noise family reduces, on its worst pair, to one dimension: two unit
Gaussians mu apart (the projection test is Neyman-Pearson optimal for them; Balle & Wang
2018 give mu for an (eps, delta) claim), or two unit Laplace laws eps apart (pure eps). On
that model (for Laplace, the test on the corner where the loss is spread over k
coordinates) this module computes
- `ideal_bound`: the median eps lower bound the audit's one-threshold Clopper-Pearson test
  gets from n draws per side on a mechanism exactly at its claim: the largest eps the audit
  could have shown at that n, so a reader can tell "passed" from "could not have failed";
- `detection_power`: the chance the audit refutes a mechanism at `ratio` x its claimed eps
  (e.g. 0.8x Gaussian noise at eps 2 is 1.28x), and `planned_draws`, the smallest n on a
  fixed ladder with power >= the target.
Both are deterministic (a fixed simulation seed) and cost milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from bench.certify.audit.bounds import eps_lower_bound
from bench.plugin.accounting import analytic_gaussian_eps, analytic_gaussian_sigma

# Draws per side the planner tries, smallest first.
LADDER = (
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    3_000_000,
    5_000_000,
    10_000_000,
)
POWER_REPS = 400  # simulated audits per power estimate
Rates = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True)
class ScoreModel:
    """A 1-D test statistic: FPR(t) = P(score > t | x0), FNR(t) = P(score <= t | x1)."""

    fpr: Rates
    fnr: Rates
    thresholds: np.ndarray


def gaussian_mu(eps: float, delta: float) -> float:
    """mu of the tight Gaussian mechanism for (eps, delta) (sensitivity / sigma; Balle &
    Wang 2018, Thm 8): the separation of the two unit Gaussians on the worst pair."""
    return 1.0 / analytic_gaussian_sigma(eps, delta, 1.0)


def gaussian_model(mu: float) -> ScoreModel:
    return ScoreModel(
        fpr=lambda t: norm.sf(t),
        fnr=lambda t: norm.cdf(t - mu),
        thresholds=np.linspace(-1.0, mu + 8.0, 600),
    )


def laplace_model(eps: float, coordinates: int = 1) -> ScoreModel:
    """The tight pure-eps Laplace mechanism whose loss is spread evenly over `coordinates`
    release coordinates, seen through its best test: every coordinate beyond the x1 side's
    mean, where the likelihood ratio is exactly e^eps (probability 2^-k under x1, 2^-k e^-eps
    under x0). With k = 1 this is the 1-D Laplace pair; each more coordinate halves the
    test's rates, which is why spread pairs (LDP on every pixel) need far more draws."""
    tail = 0.5**coordinates
    return ScoreModel(
        fpr=lambda t: np.full(np.shape(t), tail * math.exp(-eps)),
        fnr=lambda t: np.full(np.shape(t), 1.0 - tail),
        thresholds=np.zeros(1),
    )


def laplace_sum_model(eps: float, coordinates: int) -> ScoreModel:
    """The same spread Laplace pair seen through its likelihood-ratio score, a sum of k
    i.i.d. per-coordinate terms |z| - |z - a| (a = eps / k, z unit Laplace), taken as
    normal (central limit): mean -+ k (a - 1 + e^-a) (the KL divergence) and k times the
    term's variance. For many coordinates this test beats the corner one by far."""
    a = eps / coordinates
    kl = a - 1.0 + math.exp(-a)

    def lower_gamma(order: int) -> float:  # integral of z^order e^-z over [0, a]
        tail = {0: 1.0, 1: 1.0 + a, 2: a * a + 2.0 * a + 2.0}[order]
        return math.factorial(order) - math.exp(-a) * tail

    middle = 0.5 * (4 * lower_gamma(2) - 4 * a * lower_gamma(1) + a * a * lower_gamma(0))
    variance = a * a / 2 + a * a * math.exp(-a) / 2 + middle - kl * kl
    return gaussian_model(2 * coordinates * kl / math.sqrt(coordinates * max(variance, 1e-300)))


def claim_models(
    kind: str | None, eps: float, delta: float, coordinates: int = 1
) -> list[ScoreModel]:
    """The tight mechanism of the declared family at (eps, delta), through the tests the
    audit can run: Laplace for a pure claim with declared Laplace noise (loss over
    `coordinates`: the corner test and, for k > 1, the summed likelihood ratio), else
    Gaussian (also the proxy for undeclared noise)."""
    if kind == "laplace" and delta == 0:
        models = [laplace_model(eps, coordinates)]
        if coordinates > 1:
            models.append(laplace_sum_model(eps, coordinates))
        return models
    return [gaussian_model(gaussian_mu(eps, max(delta, 1e-12)))]


def _bounds(model: ScoreModel, n: int, delta: float, alpha: float) -> np.ndarray:
    t = model.thresholds
    return eps_lower_bound(n * model.fpr(t), n, n * model.fnr(t), n, delta, alpha)


def ideal_bound(model: ScoreModel, n: int, delta: float, alpha: float = 0.05) -> float:
    """The bound at the best threshold with the expected error counts (about the median
    bound of an audit of n draws per side on this model)."""
    return float(_bounds(model, n, delta, alpha).max())


def detection_power(
    model: ScoreModel, n: int, claim_eps: float, delta: float, alpha: float = 0.05
) -> float:
    """P(eps_lb > claim_eps) for an audit of n draws per side at the threshold best for
    this model, by simulating the binomial error counts (fixed seed)."""
    t = model.thresholds[int(np.argmax(_bounds(model, n, delta, alpha)))]
    rng = np.random.default_rng(0)
    fp = rng.binomial(n, float(model.fpr(np.array(t))), POWER_REPS)
    fn = rng.binomial(n, float(model.fnr(np.array(t))), POWER_REPS)
    return float(np.mean(eps_lower_bound(fp, n, fn, n, delta, alpha) > claim_eps))


@dataclass(frozen=True)
class AuditPlan:
    """Draws per side for the evaluation, and what they buy."""

    n_draws: int
    power: float  # chance of refuting a mechanism at `ratio` x the claimed eps
    ratio: float
    ideal: float  # median bound on a mechanism exactly at its claim


def plan_at(
    kind: str | None,
    eps: float,
    delta: float,
    n: int,
    *,
    ratio: float = 1.25,
    alpha: float = 0.05,
    coordinates: int = 1,
) -> AuditPlan:
    """What an audit of n draws per side buys for a claim of the declared family: the best
    of its tests' power and ideal bound (the ideal capped at the claim, which a mechanism
    at its claim cannot exceed but a normal approximation might)."""
    alternatives = claim_models(kind, ratio * eps, delta, coordinates)
    at_claim = claim_models(kind, eps, delta, coordinates)
    return AuditPlan(
        n,
        max(detection_power(m, n, eps, delta, alpha) for m in alternatives),
        ratio,
        min(eps, max(ideal_bound(m, n, delta, alpha) for m in at_claim)),
    )


def planned_draws(
    kind: str | None,
    eps: float,
    delta: float,
    *,
    ratio: float = 1.25,
    target: float = 0.95,
    max_draws: int = LADDER[-1],
    alpha: float = 0.05,
    coordinates: int = 1,
) -> AuditPlan:
    """The smallest n on `LADDER` (at most `max_draws`) whose audit refutes a mechanism of the
    declared family at `ratio` x its claimed eps with probability >= `target`; the largest
    allowed n when none does (then `power` says how far short it falls)."""
    allowed = [n for n in LADDER if n <= max_draws] or [max_draws]
    for n in allowed:
        plan = plan_at(kind, eps, delta, n, ratio=ratio, alpha=alpha, coordinates=coordinates)
        if plan.power >= target:
            return plan
    return plan


def claim_separation(kind: str | None, eps: float, delta: float) -> float | None:
    """How far apart the claim's worst pair is for its noise family, in the unit the test
    sees: mu (sensitivity / sigma) of the tight Gaussian mechanism, or eps itself for a pure
    claim with Laplace noise (the l1 sensitivity / b); None for other claims."""
    if kind == "gaussian":
        return gaussian_mu(eps, max(delta, 1e-12))
    if kind == "laplace" and delta == 0:
        return eps
    return None


def pair_ideal(
    kind: str | None,
    eps: float,
    delta: float,
    n: int,
    separation: float,
    *,
    coordinates: int = 1,
    alpha: float = 0.05,
) -> float | None:
    """The bound an audit of n draws per side gets (median) on ONE pair whose noiseless
    outputs are `separation` apart in the unit of `claim_separation` (mu for Gaussian
    noise, ||Delta||_1 / b over `coordinates` coordinates for Laplace), for a mechanism
    whose noise is exactly as declared: what the audit can show with the pair it found.
    It reaches `plan_at(...).ideal` when the pair is the claim's worst case and falls
    short as the pair does. Capped at the pair's own exact eps (Balle & Wang 2018 for the
    Gaussian; the separation itself for Laplace); None where `claim_separation` is."""
    if claim_separation(kind, eps, delta) is None:
        return None
    if separation <= 0:
        return 0.0
    if kind == "gaussian":
        exact = gdp_eps(separation, max(delta, 1e-12)) or 0.0
        models = [gaussian_model(separation)]
    else:
        exact = separation
        models = claim_models("laplace", separation, 0.0, coordinates)
    return min(exact, max(ideal_bound(m, n, delta, alpha) for m in models))


def gdp_mu_estimate(fpr: float, fnr: float, n: int) -> float:
    """Gaussian-DP diagnostic (Dong, Roth & Su 2022; used for audits by Nasr et al. 2023):
    the mu whose trade-off curve passes through the observed (FPR, FNR), with rates kept
    off 0 and 1 by half a count. A point estimate, never a bound."""
    lo = 0.5 / n
    fpr, fnr = min(max(fpr, lo), 1 - lo), min(max(fnr, lo), 1 - lo)
    return float(max(0.0, norm.isf(fpr) - norm.ppf(fnr)))


def gdp_eps(mu: float, delta: float) -> float | None:
    """The exact eps at `delta` of mu-GDP (the Gaussian mechanism with sensitivity / sigma =
    mu), for reading the GDP diagnostic on the claim's scale; None for a pure claim
    (delta 0), where no Gaussian mechanism has a finite eps."""
    if delta <= 0:
        return None
    if mu <= 0:
        return 0.0
    return analytic_gaussian_eps(1.0 / mu, delta, 1.0)
