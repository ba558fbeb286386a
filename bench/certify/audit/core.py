"""Privacy audit: an empirical lower bound on eps for a mechanism's declared claim.

For an (eps, delta, r) claim (notions ip, reconstruction: inputs within distance r; ldp:
any two inputs) the audit
1. plans its size from the claim (`power.py`): the draws per side that refute a mechanism
   of the declared noise family at 1.25x its claimed eps in >= 95% of seeds, capped by a
   cost budget counted in deterministic units (never in seconds, so the same audit gives
   the same numbers on every machine);
2. builds input pairs the claim covers (`pairs.py`): random and worst-case directions at
   exactly the radius (for output noise the worst case is found by gradient ascent on the
   encoder, since its Lipschitz constant may be what is wrong), or the corners of the data
   range and real pairs for LDP;
3. selection: releases each side of each pair `n_select` times (`Mechanism.release`, seeded
   generators, vectorised in chunks) and scores every draw with each distinguisher — the
   projection onto Enc(x1) - Enc(x0) (the Neyman-Pearson test for additive Gaussian
   noise), the exact log-likelihood ratio under a declared non-Gaussian noise model
   (Laplace), or, without an encoder, the projection onto the difference of empirical
   release means; it keeps the (pair, distinguisher, threshold) whose error rates promise
   the largest bound at the evaluation's size;
4. evaluation: releases the chosen pair `n_draws` more times per side and turns the chosen
   test's false-positive / false-negative counts into eps_lb (`bounds.py`, Clopper-
   Pearson at 95%). Selection and evaluation use disjoint draws, so the search in step 3
   costs no confidence: eps_lb is a valid 95% lower bound for any correct mechanism.

The audit fails when eps_lb exceeds the claimed eps, i.e. the claim is refuted at 95%
confidence. A passing audit is evidence, not proof: it only ever lower-bounds eps. Each
result reports its power so a reader can tell "passed" from "could not have failed":
`eps_ideal`, the bound this size of audit gets on a mechanism exactly at its claim, and
`power`, its chance of refuting one at 1.25x the claim; a Gaussian-DP estimate (mu and its
eps) is a diagnostic beside the bound, never a replacement for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator

import numpy as np
import torch

from bench.certify.audit.bounds import eps_detectable, eps_lower_bound
from bench.certify.audit.pairs import InputPair, domain_pairs, parse_norm, radius_pairs
from bench.certify.audit.power import (
    AuditPlan,
    gdp_eps,
    gdp_mu_estimate,
    plan_at,
    planned_draws,
)
from bench.certify.audit.registry import DEFAULT_COST, AuditOptions, registered_audit
from bench.certify.audit.result import (
    AuditResult,
    Progress,
    audit_generator,
    draw_counter,
    no_progress,
)
from bench.certify.audit.thresholds import best_threshold
from bench.core.device import host_view
from bench.core.errors import MechanismOutputError
from bench.plugin.protocols import Mechanism, Task

AUDITED_NOTIONS = frozenset({"ip", "ldp", "reconstruction"})
TRAINING_SET_NOTIONS = frozenset({"dp", "idp"})  # neighbouring training sets, not inputs
RADIUS_NOTIONS = frozenset({"ip", "reconstruction"})
CONTINUOUS_MODALITIES = frozenset({"image", "tabular", "vector"})

Scorer = Callable[[torch.Tensor], torch.Tensor]
CHUNK_VALUES = 1 << 22  # input + release values per release call: memory stays ~20 MB
SELECT_FRACTION = 16  # selection draws per pair and side: n_draws / 16 (at least MIN_SELECT)
MIN_SELECT = 50_000
_generator = audit_generator


def _flat_releases(
    mechanism: Mechanism, x: torch.Tensor, n: int, gen: torch.Generator, chunk: int
) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield (values flattened to (m, D) float, released mask) for `n` releases of `x`.
    One input batch serves every chunk; release() must not modify it (a contract check),
    and a mechanism that does is refused rather than audited on corrupted inputs."""
    batch = x.expand(min(chunk, n), *x.shape).clone()
    for start in range(0, n, chunk):
        m = min(chunk, n - start)
        release = mechanism.release(batch[:m], gen)
        yield release.values.reshape(m, -1).float(), release.released.bool()
    if not torch.equal(batch, x.expand_as(batch)):
        raise MechanismOutputError(
            "release() modified its input in place; the audit needs it unchanged"
        )


@torch.no_grad()
def release_scores(
    mechanism: Mechanism,
    x: torch.Tensor,
    n: int,
    gen: torch.Generator,
    scorers: dict[str, Scorer],
    chunk: int = 4096,
    counted: Callable[[int], None] | None = None,
) -> dict[str, np.ndarray]:
    """Each distinguisher's score on `n` releases of the single input `x`. A ⊥ answer or a
    non-finite score gets -inf: still a fixed function of the output, so the test is valid.
    `counted` is told each chunk's release count (progress only)."""
    parts: dict[str, list[np.ndarray]] = {name: [] for name in scorers}
    for y, kept in _flat_releases(mechanism, x, n, gen, chunk):
        if counted is not None:
            counted(len(y))
        for name, score in scorers.items():
            s = score(y).double()
            s = torch.where(kept & torch.isfinite(s), s, torch.tensor(-math.inf, dtype=s.dtype))
            parts[name].append(s.numpy())
    return {name: np.concatenate(p) for name, p in parts.items()}


@torch.no_grad()
def _mean_release(
    mechanism: Mechanism, x: torch.Tensor, n: int, gen: torch.Generator, chunk: int
) -> torch.Tensor:
    """Mean flattened release of `x` over the released, finite draws of `n`."""
    total: torch.Tensor | float = 0.0
    count = 0
    for y, kept in _flat_releases(mechanism, x, n, gen, chunk):
        y = torch.nan_to_num(y[kept].double(), nan=0.0, posinf=0.0, neginf=0.0)
        total = total + y.sum(0)
        count += len(y)
    if count == 0:
        return torch.zeros(0, dtype=torch.float64)
    return (total / count).float()  # type: ignore[operator]


@torch.no_grad()
def distinguishers(
    mechanism: Mechanism,
    pair: InputPair,
    release_dim: int,
    direction_draws: Callable[[], torch.Tensor] | None = None,
) -> dict[str, Scorer]:
    """The tests to try on `pair`, each a score that is larger under x1.

    With an encoder whose output matches the release: "projection" onto m1 - m0 (m = Enc(x),
    the likelihood-ratio test for additive Gaussian noise), and for a declared non-Gaussian
    noise model its exact "likelihood-ratio" log p(y | m1) - log p(y | m0). Otherwise
    "mean-difference": projection onto the difference of empirical release means, which
    `direction_draws` estimates from draws kept apart from the selection ones."""
    out: dict[str, Scorer] = {}
    encoder = host_view(mechanism.encoder())  # scores are computed on the CPU
    if encoder is not None:
        means = encoder(torch.stack([pair.x0, pair.x1])).reshape(2, -1).float()
        if means.shape[1] == release_dim:
            m0, m1 = means[0], means[1]
            v = m1 - m0
            if torch.count_nonzero(v) > 0:
                out["projection"] = lambda y: y @ v
            noise = mechanism.noise()
            if noise is not None and noise.kind != "gaussian":
                out["likelihood-ratio"] = lambda y: (
                    noise.neg_log_likelihood(y, m0) - noise.neg_log_likelihood(y, m1)
                )
    if not out and direction_draws is not None:
        v = direction_draws()
        if len(v) == release_dim and torch.count_nonzero(v) > 0:
            out["mean-difference"] = lambda y: y @ v
    return out


def _claim(mechanism: Mechanism) -> tuple[str, float | None, float, float | None, str | None]:
    """(notion, eps, delta, radius, distance) of the declared guarantee."""
    g = mechanism.guarantee()
    p = g.params
    eps = p.get("eps")
    radius = p.get("radius")
    return (
        g.notion,
        None if eps is None else float(eps),
        float(p.get("delta", 0.0) or 0.0),
        None if radius is None else float(radius),
        g.distance,
    )


def _unaudited(name: str, claim: tuple, reason: str) -> AuditResult:
    notion, eps, delta, radius, _ = claim
    return AuditResult(name, notion, eps, delta, radius, audited=False, passed=True, reason=reason)


def _skip_reason(task: Task, claim: tuple) -> str | None:
    """Why this claim cannot be audited here, or None."""
    notion, eps, delta, radius, distance = claim
    if notion in TRAINING_SET_NOTIONS:
        return (
            f"notion {notion!r} is a claim over neighbouring training sets; this audit "
            "tests claims over inputs"
        )
    if notion not in AUDITED_NOTIONS:
        return f"notion {notion!r} makes no (eps, delta) indistinguishability claim"
    if eps is None or not (eps > 0 and math.isfinite(eps)):
        return f"the {notion} claim declares no finite positive eps"
    if not 0 <= delta < 1:
        return f"delta {delta} is not in [0, 1)"
    if task.modality not in CONTINUOUS_MODALITIES:
        return f"inputs of modality {task.modality!r} are not a continuous range"
    if notion in RADIUS_NOTIONS:
        if radius is None or not radius > 0:
            return f"the {notion} claim declares no positive radius"
        if parse_norm(distance) is None:
            return f"distance {distance!r} is not an input-space l1 / l2 / linf distance"
    return None


def audit_pairs_for(
    mechanism: Mechanism, task: Task, claim: tuple, seed: int, n_random: int, n_worst: int
) -> list[InputPair]:
    """The input pairs the claim covers, anchored at real test inputs chosen by `seed`."""
    notion, _, _, radius, distance = claim
    test_x = task.splits().test.x
    gen = _generator(seed, "pairs")
    k = (n_random + n_worst) * (1 if notion in RADIUS_NOTIONS else 2)
    anchors = test_x[torch.randperm(len(test_x), generator=gen)[:k] % len(test_x)].float()
    if len(anchors) < k:  # a tiny test split: reuse inputs
        anchors = anchors.repeat((k + len(anchors) - 1) // len(anchors), *[1] * (anchors.dim() - 1))
    box = tuple(float(b) for b in task.data_range)
    noise = mechanism.noise()
    output_p = 1.0 if noise is not None and noise.kind == "laplace" else 2.0
    encoder = host_view(mechanism.encoder())  # the pair search runs on the CPU
    if notion in RADIUS_NOTIONS:
        norm = parse_norm(distance)
        return radius_pairs(
            anchors,
            radius,
            norm,
            box,
            encoder,
            output_p,
            n_random,
            n_worst,
            gen,  # type: ignore[arg-type]
        )
    return domain_pairs(anchors, box, encoder, output_p, n_random, n_worst)  # type: ignore[arg-type]


def _cost_per_draw(mechanism: Mechanism, x: torch.Tensor, release_dim: int) -> int:
    """Deterministic cost units of one release: input and release coordinates plus the
    encoder's weights (a proxy for its multiply-adds)."""
    encoder = mechanism.encoder()
    weights = sum(p.numel() for p in encoder.parameters()) if encoder is not None else 0
    return int(x.numel() + release_dim + weights)


def _loss_coordinates(mechanism: Mechanism, pairs: list[InputPair]) -> int:
    """The most release coordinates any pair's noiseless outputs differ in (1 without an
    encoder): how widely a Laplace claim's privacy loss is spread (power.laplace_model)."""
    encoder = host_view(mechanism.encoder())
    if encoder is None:
        return 1
    with torch.no_grad():
        x0 = torch.stack([p.x0 for p in pairs])
        x1 = torch.stack([p.x1 for p in pairs])
        gap = (encoder(x1) - encoder(x0)).flatten(1).abs()
    return max(1, int((gap > 1e-9 * gap.amax(1, keepdim=True).clamp_min(1e-30)).sum(1).max()))


def plan_audit(
    mechanism: Mechanism,
    claim: tuple,
    pairs: list[InputPair],
    release_dim: int,
    *,
    n_draws: int | None,
    max_cost: float,
    ratio: float,
    target_power: float,
    alpha: float,
) -> AuditPlan:
    """Evaluation draws per side: `n_draws` if given, else planned from the claim and capped
    so the whole audit (selection on every pair, twice as much without an encoder, plus
    the evaluation) stays within `max_cost` units."""
    _, eps, delta, _, _ = claim
    noise = mechanism.noise()
    kind = noise.kind if noise is not None else None
    k = _loss_coordinates(mechanism, pairs) if kind == "laplace" else 1
    if n_draws is not None:
        return plan_at(kind, eps, delta, n_draws, ratio=ratio, alpha=alpha, coordinates=k)
    selection = 2 * len(pairs) * (1 if mechanism.encoder() is not None else 2) / SELECT_FRACTION
    cost = _cost_per_draw(mechanism, pairs[0].x0, release_dim) * (2 + selection)
    cap = max(MIN_SELECT, int(max_cost / cost))
    return planned_draws(
        kind, eps, delta, ratio=ratio, target=target_power, max_draws=cap, coordinates=k
    )


def audit_mechanism(
    mechanism: Mechanism,
    task: Task,
    seed: int,
    *,
    n_draws: int | None = None,
    n_select: int | None = None,
    max_cost: float = DEFAULT_COST,
    ratio: float = 1.25,
    target_power: float = 0.95,
    n_random: int = 2,
    n_worst: int = 1,
    confidence: float = 0.95,
    chunk: int | None = None,
    progress: Progress = no_progress,
) -> AuditResult:
    """Audit a FITTED mechanism's declared claim on `task` (module docstring); deterministic
    given `seed`. `n_draws` fixes the evaluation size (default: planned from the claim for
    `target_power` against `ratio` x the claimed eps, within `max_cost` units);
    `n_select` the selection draws per pair and side (default n_draws / 16); `chunk` the
    releases per call (default: about CHUNK_VALUES input and release values); `progress`
    is told the releases drawn of those planned (selection and evaluation)."""
    start = time.perf_counter()
    name = getattr(type(mechanism), "name", type(mechanism).__name__)
    claim = _claim(mechanism)
    family = registered_audit(type(mechanism))
    if family is not None and family.applies(claim):  # the family's own test (registry.py)
        options = AuditOptions(
            n_draws,
            n_select,
            max_cost,
            ratio,
            target_power,
            n_random,
            n_worst,
            confidence,
            chunk,
            progress,
        )
        return family.audit(mechanism, task, seed, claim, options)
    reason = _skip_reason(task, claim)
    if reason is not None:
        return _unaudited(name, claim, reason)
    notion, eps, delta, radius, _ = claim
    alpha = 1.0 - confidence
    pairs = audit_pairs_for(mechanism, task, claim, seed, n_random, n_worst)
    probe = mechanism.release(pairs[0].x0.unsqueeze(0).clone(), _generator(seed, "probe"))
    release_dim = int(probe.values[0].numel())
    if chunk is None:
        chunk = max(256, CHUNK_VALUES // (pairs[0].x0.numel() + release_dim))
    plan = plan_audit(
        mechanism,
        claim,
        pairs,
        release_dim,
        n_draws=n_draws,
        max_cost=max_cost,
        ratio=ratio,
        target_power=target_power,
        alpha=alpha,
    )
    n_eval = plan.n_draws
    n_sel = n_select if n_select is not None else max(MIN_SELECT, n_eval // SELECT_FRACTION)
    power_fields = {
        "eps_ideal": plan.ideal,
        "power": plan.power,
        "ratio": ratio,
        "n_select": n_sel,
        "n_pairs": len(pairs),
        "confidence": confidence,
        "eps_detectable": eps_detectable(n_eval, n_eval, delta, alpha),
    }

    noise = mechanism.noise()
    gaussian_noise = noise is not None and noise.kind == "gaussian"
    counted = draw_counter(progress, 2 * n_sel * len(pairs) + 2 * n_eval)
    best: tuple[float, int, str, float, Scorer] | None = None
    for i, pair in enumerate(pairs):

        def direction(i: int = i, pair: InputPair = pair) -> torch.Tensor:
            m0 = _mean_release(mechanism, pair.x0, n_sel, _generator(seed, f"dir/{i}/0"), chunk)
            m1 = _mean_release(mechanism, pair.x1, n_sel, _generator(seed, f"dir/{i}/1"), chunk)
            return m1 - m0 if len(m0) == len(m1) else m0[:0]

        scorers = distinguishers(mechanism, pair, release_dim, direction)
        if not scorers:
            continue
        gen0, gen1 = _generator(seed, f"sel/{i}/0"), _generator(seed, f"sel/{i}/1")
        s0 = release_scores(mechanism, pair.x0, n_sel, gen0, scorers, counted=counted)
        s1 = release_scores(mechanism, pair.x1, n_sel, gen1, scorers, counted=counted)
        for stat, scorer in scorers.items():
            gaussian = stat == "projection" and gaussian_noise
            threshold, bound = best_threshold(s0[stat], s1[stat], delta, alpha, n_eval, gaussian)
            if best is None or bound > best[0]:
                best = (bound, i, stat, threshold, scorer)
    if best is None:  # every pair releases identically distributed outputs (or nothing)
        return AuditResult(
            name,
            notion,
            eps,
            delta,
            radius,
            audited=True,
            passed=True,
            eps_lb=0.0,
            seconds=time.perf_counter() - start,
            reason="no pair gives the distinguishers any signal",
            **power_fields,
        )

    _, i, stat, threshold, scorer = best
    pair = pairs[i]
    chosen = {stat: scorer}
    e0 = release_scores(
        mechanism, pair.x0, n_eval, _generator(seed, "eval/0"), chosen, counted=counted
    )
    e1 = release_scores(
        mechanism, pair.x1, n_eval, _generator(seed, "eval/1"), chosen, counted=counted
    )
    false_pos = int((e0[stat] > threshold).sum())
    false_neg = int((e1[stat] <= threshold).sum())
    eps_lb = float(eps_lower_bound(false_pos, n_eval, false_neg, n_eval, delta, alpha))
    mu = gdp_mu_estimate(false_pos / n_eval, false_neg / n_eval, n_eval)
    return AuditResult(
        name,
        notion,
        eps,
        delta,
        radius,
        audited=True,
        passed=eps_lb <= eps,  # type: ignore[operator]
        eps_lb=eps_lb,
        n_draws=n_eval,
        pair=f"{pair.describe()} (pair {i + 1} of {len(pairs)})",
        statistic=stat,
        threshold=threshold,
        fpr=false_pos / n_eval,
        fnr=false_neg / n_eval,
        mu_gdp=mu,
        eps_gdp=gdp_eps(mu, delta),
        seconds=time.perf_counter() - start,
        **power_fields,
    )


__all__ = ["DEFAULT_COST", "AuditResult", "audit_mechanism"]
