"""Privacy audit: an empirical lower bound on eps for a mechanism's declared claim.

For an (eps, delta, r) claim (notions ip, reconstruction: inputs within distance r; ldp:
any two inputs) the audit
1. plans its size from the claim (`power.py`): the draws per side that refute a mechanism
   of the declared noise family at 1.25x its claimed eps in >= 95% of seeds, capped by a
   cost budget counted in deterministic units (never in seconds, so the same audit gives
   the same numbers on every machine);
2. builds input pairs the claim covers (`pairs.py`): random directions at exactly the
   radius, and worst-case pairs that maximise ||Enc(x1) - Enc(x0)|| (gradient ascent from
   the encoder's most stretched direction and from a random one, over several anchors,
   the anchor moving too: the claim covers every input of the data range), or the corners
   of the data range and real pairs for LDP;
3. selection: releases each side of each pair `n_select` times (`releases.py`) and
   scores every draw with each distinguisher — the projection onto Enc(x1) - Enc(x0)
   (the likelihood ratio, hence by the Neyman-Pearson lemma the most powerful test, for
   additive Gaussian noise), the exact log-likelihood ratio under a declared Laplace noise
   model, or, without an encoder, the projection onto the difference of empirical release
   means; it keeps the (pair, distinguisher, threshold) whose error rates promise the
   largest bound at the evaluation's size;
4. evaluation: releases the chosen pair `n_draws` more times per side, counting as it
   draws the chosen test's false positives / false negatives, and turns the counts into
   eps_lb (`bounds.py`: the hypothesis-testing characterisation of (eps, delta)-DP,
   Kairouz et al. 2015, with exact Clopper-Pearson bounds at 95%). Selection and
   evaluation use disjoint draws, so the search in step 3 costs no confidence: eps_lb is a
   valid 95% lower bound for any correct mechanism.

Releases come from the mechanism's own `release()`, or, for an input on which that release
is checked to be its encoder's output plus its declared noise, from that sum with one
encoder pass (`releases.py`: what the check proves and what it cannot). They are drawn in
blocks whose generators are derived from the seed by index, each block reduced at once to
its scores (selection) or counts (evaluation), by a pool of worker threads (`draws.py`):
the numbers are the same for any number of workers and any work-unit size, and no worker
holds more than one block of releases (what is kept is the selection's scores and the
evaluation's two counts).

The audit fails when eps_lb exceeds the claimed eps, i.e. the claim is refuted at 95%
confidence. A passing audit is evidence, not proof: it only ever lower-bounds eps. Each
result reports its power so a reader can tell "passed" from "could not have failed":
`eps_ideal`, the bound this size of audit gets on a mechanism exactly at its claim,
`power`, its chance of refuting one at 1.25x the claim, and, for a declared noise model,
`pair_reach` (how far apart the evaluated pair's noiseless outputs are, as a fraction of
the claim's worst case) and `eps_ideal_pair` (the bound the audit gets on that pair if
the noise is as declared); a Gaussian-DP estimate (mu and its eps) is a diagnostic beside
the bound, never a replacement for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from bench.certify.audit.bounds import eps_detectable, eps_lower_bound
from bench.certify.audit.draws import (
    CHUNK_RELEASES,
    Stream,
    block_rows,
    default_workers,
    run_streams,
)
from bench.certify.audit.pairs import (
    WORST_ANCHORS,
    InputPair,
    domain_pairs,
    parse_norm,
    radius_pairs,
)
from bench.certify.audit.power import (
    AuditPlan,
    claim_separation,
    gdp_eps,
    gdp_mu_estimate,
    pair_ideal,
    plan_at,
    planned_draws,
)
from bench.certify.audit.registry import DEFAULT_COST, AuditOptions, registered_audit
from bench.certify.audit.releases import Described, Draw, Releases
from bench.certify.audit.result import (
    AuditResult,
    Progress,
    audit_generator,
    draw_counter,
    no_progress,
    result_builder,
)
from bench.certify.audit.thresholds import best_threshold
from bench.core.device import host_view
from bench.core.threads import pinned_threads
from bench.plugin.notions import Claim
from bench.plugin.protocols import Mechanism, NoiseModel, Task

CONTINUOUS_MODALITIES = frozenset({"image", "tabular", "vector"})

# A distinguisher: flattened float releases (m, D) -> (m,) scores, larger under x1.
Scorer = Callable[[torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Projection:
    """The distinguisher y -> y . direction (a Scorer), kept as its direction so a described
    Gaussian release's score can be drawn from its law (releases.Described.projections)."""

    direction: torch.Tensor

    def __call__(self, y: torch.Tensor) -> torch.Tensor:
        return y @ self.direction


SELECT_FRACTION = 16  # selection draws per pair and side: n_draws / 16 (at least MIN_SELECT)
MIN_SELECT = 50_000  # ... and exactly this many where the threshold comes from fitted normals
LR_DECIMALS = 9  # the Laplace log-likelihood ratio is rounded here (its atoms stay atoms)
EXACT_LR_COORDINATES = 64  # ... when its pair differs in at most this many coordinates
# Cost units of one Laplace release coordinate: NoiseModel.sample draws it as a float64
# uniform and takes a logarithm, and the likelihood ratio scores it; a Laplace release of
# a 784-pixel image was measured at 3.4x a Gaussian one (about 5.8 units a coordinate),
# so 5, which keeps ldp-image's planned size where the budget put it before (3M a side).
LAPLACE_UNITS = 5
_generator = audit_generator


# ----------------------------------------------------------------------------- draws


def _masked(scores: torch.Tensor, kept: torch.Tensor) -> np.ndarray:
    """float64 scores, -inf where nothing was released (⊥) or the score is not finite:
    still a fixed function of the output, so the test stays valid. (NumPy: on a block's
    few hundred scores its calls cost a microsecond where torch's cost ten.)"""
    s = scores.detach().cpu().numpy().astype(np.float64)
    bad = ~(kept.cpu().numpy() & np.isfinite(s))
    if bad.any():
        s[bad] = -math.inf
    return s


def _scored(
    draw: Draw, scorers: dict[str, Scorer], m: int, gen: torch.Generator
) -> dict[str, np.ndarray]:
    """Every scorer's float64 scores on m releases from `draw`: a lone projection of a
    described Gaussian release drawn from its law (releases.py), else scored on the drawn
    releases (-inf where ⊥ or not finite)."""
    if len(scorers) == 1 and isinstance(draw, Described):
        ((name, only),) = scorers.items()
        if isinstance(only, Projection):
            direct = draw.projections(m, gen, only.direction)
            if direct is not None:
                return {name: direct.numpy()}
    y, kept = draw(m, gen)
    return {name: _masked(score(y), kept) for name, score in scorers.items()}


def score_stream(
    purpose: str,
    draw: Draw,
    n: int,
    block: int,
    scorers: dict[str, Scorer],
) -> Stream[dict[str, np.ndarray]]:
    """n releases, each block reduced to every distinguisher's scores (selection)."""

    def scores(m: int, gen: torch.Generator) -> dict[str, np.ndarray]:
        return _scored(draw, scorers, m, gen)

    return Stream(purpose, n, block, scores)


def count_stream(
    purpose: str,
    draw: Draw,
    n: int,
    block: int,
    scorer: Scorer,
    threshold: float,
    above: bool,
) -> Stream[int]:
    """n releases, each block reduced to how many of its scores are > `threshold` (`above`;
    x0's false positives) or <= it (x1's false negatives): the evaluation keeps counts only."""

    def count(m: int, gen: torch.Generator) -> int:
        s = _scored(draw, {"s": scorer}, m, gen)["s"]
        return int(np.count_nonzero(s > threshold if above else s <= threshold))

    return Stream(purpose, n, block, count)


def sum_stream(
    purpose: str,
    draw: Draw,
    n: int,
    block: int,
) -> Stream[tuple[torch.Tensor, int]]:
    """n releases, each block reduced to the float64 sum of its released rows (non-finite
    values as 0) and their count: a mean release without holding the releases."""

    def total(m: int, gen: torch.Generator) -> tuple[torch.Tensor, int]:
        y, kept = draw(m, gen)
        y = torch.nan_to_num(y[kept].double(), nan=0.0, posinf=0.0, neginf=0.0)
        return y.sum(0), len(y)

    return Stream(purpose, n, block, total)


def _mean(blocks: list[tuple[torch.Tensor, int]]) -> torch.Tensor:
    """The mean row of a sum_stream's blocks (summed in block order), empty when none."""
    count = sum(k for _, k in blocks)
    if count == 0:
        return torch.zeros(0)
    total = blocks[0][0]
    for part, _ in blocks[1:]:
        total = total + part
    return (total / count).float()


def release_scores(
    mechanism: Mechanism,
    x: torch.Tensor,
    n: int,
    seed: int,
    scorers: dict[str, Scorer],
    *,
    purpose: str = "scores",
    block: int | None = None,
    workers: int = 1,
    chunk: int = CHUNK_RELEASES,
    counted: Callable[[int], None] | None = None,
    described: bool = False,
) -> dict[str, np.ndarray]:
    """Each distinguisher's float64 score on n releases of the single input `x`, drawn in
    blocks (generators from `seed` and `purpose` by block index); -inf where ⊥ or not
    finite. The same numbers for any `workers` and `chunk`. Through `release()`, or with
    `described` its checked description where it has one (releases.py)."""
    if block is None:
        block = block_rows(2 * x.numel())
    releases = Releases(mechanism, block, seed, described)
    stream = score_stream(purpose, releases.source(x), n, block, scorers)
    (blocks,) = run_streams([stream], seed, workers=workers, chunk=chunk, counted=counted)
    releases.check_unmodified()
    return {name: np.concatenate([b[name] for b in blocks]) for name in scorers}


# ---------------------------------------------------------------------- distinguishers


def _laplace_ratio(m0: torch.Tensor, m1: torch.Tensor, scale: float) -> Scorer:
    """The Laplace log-likelihood ratio log p(y | m1) - log p(y | m0) =
    (|y - m0|_1 - |y - m1|_1) / b, summed over the coordinates where m0 and m1 differ only
    (every other term is exactly 0).

    On a few coordinates (at most EXACT_LR_COORDINATES, e.g. an l1 vertex pair) it is
    computed in float64 and rounded to LR_DECIMALS, so its atoms (y beyond [m0_j, m1_j] on
    every differing coordinate, where the ratio is exactly +-||Delta||_1 / b) stay single
    values no threshold splits by float rounding. On many (an LDP corner pair: every
    pixel), where no atom carries mass, each term is the clamp
    sign(d_j) clamp(2 y_j - m0_j - m1_j, -|d_j|, |d_j|) (d = m1 - m0; the same piecewise
    linear function) in float32, three passes over the release instead of eight in
    float64. Either way a fixed function of the release, as the bound requires."""
    index = torch.nonzero(m0 != m1).squeeze(1)
    if len(index) <= EXACT_LR_COORDINATES:
        a, b = m0[index].double(), m1[index].double()

        def exact(y: torch.Tensor) -> torch.Tensor:
            z = y[:, index].double()
            s = ((z - a).abs().sum(1) - (z - b).abs().sum(1)) / scale
            return torch.round(s, decimals=LR_DECIMALS)

        return exact
    whole = len(index) == len(m0)
    d = (m1 - m0)[index]
    sign, width, centre = torch.sign(d), d.abs(), (m0 + m1)[index]

    def clamped(y: torch.Tensor) -> torch.Tensor:
        z = y if whole else y[:, index]
        t = torch.addcmul(-sign * centre, z, 2 * sign)  # sign (2 y - m0 - m1)
        t = torch.minimum(torch.maximum(t, -width), width)
        return t.sum(1, dtype=torch.float64) / scale

    return clamped


def _noise_ratio(noise: NoiseModel, m0: torch.Tensor, m1: torch.Tensor) -> Scorer:
    """log p(y | m1) - log p(y | m0) under a declared non-Gaussian noise model."""
    if noise.kind == "laplace":
        return _laplace_ratio(m0, m1, noise.scale)
    return lambda y: noise.neg_log_likelihood(y, m0) - noise.neg_log_likelihood(y, m1)


def _noiseless(mechanism: Mechanism, pair: InputPair) -> torch.Tensor | None:
    """(2, D) flattened encoder outputs of the pair's inputs, or None without an encoder."""
    encoder = host_view(mechanism.encoder())  # scores are computed on the CPU
    if encoder is None:
        return None
    with torch.no_grad():
        return encoder(torch.stack([pair.x0, pair.x1])).reshape(2, -1).float()


@torch.no_grad()
def distinguishers(
    mechanism: Mechanism,
    pair: InputPair,
    release_dim: int,
    direction: torch.Tensor | None = None,
) -> dict[str, Scorer]:
    """The tests to try on `pair`, each a score that is larger under x1.

    With an encoder whose output matches the release: "projection" onto m1 - m0 (m = Enc(x);
    for additive Gaussian noise the log-likelihood ratio is an increasing affine function
    of it, so by the Neyman-Pearson lemma its thresholds are the most powerful tests), and
    for a declared non-Gaussian noise model its exact "likelihood-ratio". Otherwise
    "mean-difference": projection onto `direction`, the difference of empirical release
    means estimated from draws kept apart from the selection ones."""
    out: dict[str, Scorer] = {}
    means = _noiseless(mechanism, pair)
    if means is not None and means.shape[1] == release_dim:
        m0, m1 = means[0], means[1]
        v = m1 - m0
        if torch.count_nonzero(v) > 0:
            out["projection"] = Projection(v)
            noise = mechanism.noise()
            if noise is not None and noise.kind != "gaussian":
                out["likelihood-ratio"] = _noise_ratio(noise, m0, m1)
    usable = direction is not None and len(direction) == release_dim
    if not out and usable and torch.count_nonzero(direction) > 0:
        out["mean-difference"] = lambda y: y @ direction
    return out


def _needs_direction(mechanism: Mechanism, pair: InputPair, release_dim: int) -> bool:
    """Whether `pair` gets the mean-difference test (no encoder output to project on)."""
    return not distinguishers(mechanism, pair, release_dim)


# ---------------------------------------------------------------------------- claims


def _unaudited(name: str, claim: Claim, reason: str) -> AuditResult:
    return AuditResult(
        name,
        claim.notion,
        claim.eps,
        claim.delta,
        claim.radius,
        audited=False,
        passed=True,
        reason=reason,
    )


def input_pairs_test(claim: Claim) -> bool:
    """Whether input pairs can test the claim: an (eps, delta) indistinguishability of the
    releases of two inputs (its notion's neighbours are inputs and its level is eps), any two
    for LDP, two within the radius for IP and reconstruction privacy."""
    spec = claim.spec
    return spec.neighbours == "inputs" and spec.level.param == "eps"


def _skip_reason(task: Task, claim: Claim) -> str | None:
    """Why this claim cannot be audited here, or None."""
    notion, eps, delta, radius = claim.notion, claim.eps, claim.delta, claim.radius
    spec = claim.spec
    if spec.neighbours == "training set":
        return (
            f"notion {notion!r} is a claim over neighbouring training sets; this audit "
            "tests claims over inputs"
        )
    if not input_pairs_test(claim):
        why = spec.unaudited or "it makes no (eps, delta) claim over inputs"
        return f"notion {notion!r}: {why}"
    if eps is None or not (eps > 0 and math.isfinite(eps)):
        return f"the {notion} claim declares no finite positive eps"
    if not 0 <= delta < 1:
        return f"delta {delta} is not in [0, 1)"
    if task.modality not in CONTINUOUS_MODALITIES:
        return f"inputs of modality {task.modality!r} are not a continuous range"
    if spec.radius:
        if radius is None or not radius > 0:
            return f"the {notion} claim declares no positive radius"
        if parse_norm(claim.distance) is None:
            return f"distance {claim.distance!r} is not an input-space l1 / l2 / linf distance"
    return None


def audit_pairs_for(
    mechanism: Mechanism, task: Task, claim: Claim, seed: int, n_random: int, n_worst: int
) -> list[InputPair]:
    """The input pairs the claim covers, anchored at real test inputs chosen by `seed` (a
    radius claim's worst-case search climbs from WORST_ANCHORS of them, at least
    n_worst)."""
    radius, distance, within_radius = claim.radius, claim.distance, claim.spec.radius
    test_x = task.splits().test.x
    gen = _generator(seed, "pairs")
    encoder = host_view(mechanism.encoder())  # the pair search runs on the CPU
    if within_radius:
        searched = max(n_worst, WORST_ANCHORS) if encoder is not None and n_worst > 0 else n_worst
        k = n_random + searched
    else:
        k = 2 * (n_random + n_worst)
    anchors = test_x[torch.randperm(len(test_x), generator=gen)[:k] % len(test_x)].float()
    if len(anchors) < k:  # a tiny test split: reuse inputs
        anchors = anchors.repeat((k + len(anchors) - 1) // len(anchors), *[1] * (anchors.dim() - 1))
        anchors = anchors[:k]
    box = tuple(float(b) for b in task.data_range)
    noise = mechanism.noise()
    output_p = 1.0 if noise is not None and noise.kind == "laplace" else 2.0
    if within_radius:
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


# ---------------------------------------------------------------------------- sizing


def _cost_per_draw(
    mechanism: Mechanism, x: torch.Tensor, release_dim: int, described: bool = False
) -> int:
    """Deterministic cost units of one release: input and release coordinates (a Laplace
    one counted LAPLACE_UNITS times) plus, for a release through `release()`, the encoder's
    weights (a proxy for its multiply-adds); a `described` release (releases.py) passes
    through no encoder."""
    encoder = None if described else mechanism.encoder()
    weights = sum(p.numel() for p in encoder.parameters()) if encoder is not None else 0
    noise = mechanism.noise()
    per_value = LAPLACE_UNITS if noise is not None and noise.kind == "laplace" else 1
    return int(x.numel() + per_value * release_dim + weights)


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
    claim: Claim,
    pairs: list[InputPair],
    release_dim: int,
    *,
    n_draws: int | None,
    max_cost: float,
    ratio: float,
    target_power: float,
    alpha: float,
    fitted: bool = False,
    described: bool = False,
) -> AuditPlan:
    """Evaluation draws per side: `n_draws` if given, else planned from the claim and capped
    so the whole audit (selection on every pair, twice as much without an encoder, plus
    the evaluation) stays within `max_cost` units; `fitted`: selection is MIN_SELECT draws
    per pair and side (selection_size), else a SELECT_FRACTION of the evaluation's;
    `described`: the releases skip the encoder (_cost_per_draw)."""
    eps, delta = claim.eps, claim.delta
    noise = mechanism.noise()
    kind = noise.kind if noise is not None else None
    k = _loss_coordinates(mechanism, pairs) if kind == "laplace" else 1
    if n_draws is not None:
        return plan_at(kind, eps, delta, n_draws, ratio=ratio, alpha=alpha, coordinates=k)
    per_draw = _cost_per_draw(mechanism, pairs[0].x0, release_dim, described)
    sides = 2 * len(pairs) * (1 if mechanism.encoder() is not None else 2)
    if fitted:
        cap = int((max_cost / per_draw - sides * MIN_SELECT) / 2)
    else:
        cap = int(max_cost / (per_draw * (2 + sides / SELECT_FRACTION)))
    return planned_draws(
        kind,
        eps,
        delta,
        ratio=ratio,
        target=target_power,
        max_draws=max(MIN_SELECT, cap),
        coordinates=k,
    )


def pair_power_fields(
    mechanism: Mechanism, claim: Claim, pair: InputPair, n: int, alpha: float
) -> dict[str, float | None]:
    """`pair_reach` and `eps_ideal_pair` of the evaluated pair (power.pair_ideal): the
    pair's noiseless outputs' distance in the declared noise's unit (||Delta||_2 / sigma, or
    ||Delta||_1 / b for a pure claim with Laplace noise) as a fraction of the claim's worst
    case, and the bound an audit of n draws per side gets on it. None without an encoder
    or a declared noise model."""
    eps, delta = claim.eps, claim.delta
    noise, means = mechanism.noise(), _noiseless(mechanism, pair)
    kind = None if noise is None else noise.kind
    worst = claim_separation(kind, eps, delta)
    if noise is None or means is None or worst is None:
        return {"pair_reach": None, "eps_ideal_pair": None}
    gap = (means[1] - means[0]).double()
    p = 2 if noise.kind == "gaussian" else 1
    separation = float(torch.linalg.vector_norm(gap, ord=p)) / noise.scale
    k = max(1, int((gap.abs() > 1e-9 * float(gap.abs().max().clamp_min(1e-30))).sum()))
    ideal = pair_ideal(kind, eps, delta, n, separation, coordinates=k, alpha=alpha)
    return {"pair_reach": separation / worst, "eps_ideal_pair": ideal}


# ----------------------------------------------------------------------------- audit


def selection_size(n_eval: int, n_select: int | None, fitted: bool) -> int:
    """Selection draws per pair and side: `n_select` if given; MIN_SELECT when every pair is
    tested by the projection of declared Gaussian noise (`fitted`); else n_eval /
    SELECT_FRACTION, at least MIN_SELECT.

    Why the fitted case needs no more: its threshold comes from normals fitted to the
    selection scores (thresholds._gaussian_threshold), i.e. from each side's mean and
    standard deviation only, which 50,000 draws already pin to 0.5% of a standard
    deviation; more draws would not move the threshold, only cost releases. At (2, 1e-5)
    with 5M evaluation draws a side, the expected bound at the chosen threshold is 1.7459
    from 50,000 selection draws and 1.7463 from 312,500 (20 simulated selections each), so
    the power against 1.25x the claim is the same. Tests whose threshold is searched among
    observed scores (Laplace likelihood ratio, mean difference, a release with ⊥) need
    their tail populated, hence the sixteenth."""
    if n_select is not None:
        return n_select
    if fitted:
        return MIN_SELECT
    return max(MIN_SELECT, n_eval // SELECT_FRACTION)


@dataclass(frozen=True)
class _Choice:
    """The test selection picked: pair index, distinguisher, threshold, promised bound."""

    bound: float
    index: int
    statistic: str
    threshold: float
    scorer: Scorer


def _select(
    mechanism: Mechanism,
    pairs: list[InputPair],
    scorers: list[dict[str, Scorer]],
    releases: Releases,
    seed: int,
    n_sel: int,
    n_eval: int,
    delta: float,
    alpha: float,
    draw_options: dict,
) -> _Choice | None:
    """Selection (module docstring, step 3): every pair's selection draws scored by each of
    its distinguishers, and the (pair, distinguisher, threshold) promising the largest
    bound at the evaluation's size (thresholds.best_threshold)."""
    noise = mechanism.noise()
    gaussian_noise = noise is not None and noise.kind == "gaussian"
    block = releases.block
    streams, owners = [], []
    for i, pair in enumerate(pairs):
        if not scorers[i]:
            continue
        for side, x in enumerate((pair.x0, pair.x1)):
            streams.append(
                score_stream(f"sel/{i}/{side}", releases.source(x), n_sel, block, scorers[i])
            )
            owners.append(i)
    results = run_streams(streams, seed, **draw_options)
    best: _Choice | None = None
    for j in range(0, len(streams), 2):
        i = owners[j]
        for stat, scorer in scorers[i].items():
            s0 = np.concatenate([b[stat] for b in results[j]])
            s1 = np.concatenate([b[stat] for b in results[j + 1]])
            gaussian = stat == "projection" and gaussian_noise
            threshold, bound = best_threshold(s0, s1, delta, alpha, n_eval, gaussian)
            if best is None or bound > best.bound:
                best = _Choice(bound, i, stat, threshold, scorer)
    return best


def _directions(
    mechanism: Mechanism,
    pairs: list[InputPair],
    wanted: list[bool],
    releases: Releases,
    seed: int,
    n: int,
    draw_options: dict,
) -> list[torch.Tensor | None]:
    """For each pair that gets the mean-difference test, the difference of its two mean
    releases over n draws per side of their own (never the selection draws)."""
    streams = []
    for i, pair in enumerate(pairs):
        if wanted[i]:
            for side, x in enumerate((pair.x0, pair.x1)):
                streams.append(sum_stream(f"dir/{i}/{side}", releases.source(x), n, releases.block))
    results = iter(run_streams(streams, seed, **draw_options))
    out: list[torch.Tensor | None] = []
    for i in range(len(pairs)):
        if not wanted[i]:
            out.append(None)
            continue
        m0, m1 = _mean(next(results)), _mean(next(results))
        out.append(m1 - m0 if len(m0) == len(m1) else m0[:0])
    return out


def _evaluate(
    choice: _Choice, pair: InputPair, releases: Releases, seed: int, n_eval: int, draw_options: dict
) -> tuple[int, int]:
    """Evaluation (module docstring, step 4): the chosen test's false positives on n_eval
    fresh releases of x0 and false negatives on n_eval of x1, counted as they are drawn."""
    t, block = choice.threshold, releases.block
    streams = [
        count_stream("eval/0", releases.source(pair.x0), n_eval, block, choice.scorer, t, True),
        count_stream("eval/1", releases.source(pair.x1), n_eval, block, choice.scorer, t, False),
    ]
    fp_blocks, fn_blocks = run_streams(streams, seed, **draw_options)
    return sum(fp_blocks), sum(fn_blocks)


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
    workers: int | None = None,
    progress: Progress = no_progress,
) -> AuditResult:
    """Audit a FITTED mechanism's declared claim on `task` (module docstring); deterministic
    given `seed`. `n_draws` fixes the evaluation size (default: planned from the claim for
    `target_power` against `ratio` x the claimed eps, within `max_cost` units);
    `n_select` the selection draws per pair and side (default n_draws / 16); `chunk` the
    releases per work unit and `workers` the threads drawing them (default: torch's thread
    count), neither of which changes any number; `progress` is told the releases drawn of
    those planned (direction, selection and evaluation draws)."""
    workers = default_workers() if workers is None else max(1, int(workers))
    family = registered_audit(type(mechanism))
    claim = mechanism.guarantee().claim()
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
            workers,
        )
        with pinned_threads(1):  # the same floats for every thread count (draws.py)
            return family.audit(mechanism, task, seed, claim, options)
    with pinned_threads(1):  # the same floats for every thread count (draws.py)
        return _audit_inputs(
            mechanism,
            task,
            seed,
            claim,
            AuditOptions(
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
                workers,
            ),
        )


def _audit_inputs(
    mechanism: Mechanism, task: Task, seed: int, claim: Claim, options: AuditOptions
) -> AuditResult:
    """The input-pair audit of `claim` (module docstring)."""
    start = time.perf_counter()
    name = getattr(type(mechanism), "name", type(mechanism).__name__)
    reason = _skip_reason(task, claim)
    if reason is not None:
        return _unaudited(name, claim, reason)
    eps, delta = claim.eps, claim.delta
    alpha = 1.0 - options.confidence
    pairs = audit_pairs_for(mechanism, task, claim, seed, options.n_random, options.n_worst)
    probe = mechanism.release(pairs[0].x0.unsqueeze(0).clone(), _generator(seed, "probe"))
    release_dim = int(probe.values[0].numel())
    noise = mechanism.noise()
    wanted = [_needs_direction(mechanism, pair, release_dim) for pair in pairs]
    fitted = noise is not None and noise.kind == "gaussian" and not any(wanted)
    releases = Releases(mechanism, block_rows(pairs[0].x0.numel() + release_dim), seed, True)
    described = releases.describes(pairs[0].x0)
    plan = plan_audit(
        mechanism,
        claim,
        pairs,
        release_dim,
        n_draws=options.n_draws,
        max_cost=options.max_cost,
        ratio=options.ratio,
        target_power=options.target_power,
        alpha=alpha,
        fitted=fitted and options.n_select is None,
        described=described,
    )
    n_eval = plan.n_draws
    n_sel = selection_size(n_eval, options.n_select, fitted)
    power_fields = {
        "eps_ideal": plan.ideal,
        "power": plan.power,
        "ratio": options.ratio,
        "n_select": n_sel,
        "n_pairs": len(pairs),
        "confidence": options.confidence,
        "eps_detectable": eps_detectable(n_eval, n_eval, delta, alpha),
        "workers": options.workers,
    }

    total = 2 * n_sel * (len(pairs) + sum(wanted)) + 2 * n_eval
    draw_options = {
        "workers": options.workers,
        "chunk": options.chunk or CHUNK_RELEASES,
        "counted": draw_counter(options.progress, total),
    }
    directions = _directions(mechanism, pairs, wanted, releases, seed, n_sel, draw_options)
    scorers = [
        distinguishers(mechanism, pair, release_dim, direction)
        for pair, direction in zip(pairs, directions, strict=True)
    ]
    drawn = 2 * n_sel * (sum(map(bool, scorers)) + sum(wanted)) + 2 * n_eval
    draw_options["counted"].total = drawn  # pairs without a test get no selection draws
    choice = _select(
        mechanism, pairs, scorers, releases, seed, n_sel, n_eval, delta, alpha, draw_options
    )
    result = result_builder(mechanism, claim, start)
    if choice is None:  # every pair releases identically distributed outputs (or nothing)
        releases.check_unmodified()
        return result(
            eps_lb=0.0,
            reason="no pair gives the distinguishers any signal",
            releases=2 * n_sel * sum(wanted),
            release_path=releases.path(),
            **power_fields,
        )

    pair = pairs[choice.index]
    false_pos, false_neg = _evaluate(choice, pair, releases, seed, n_eval, draw_options)
    releases.check_unmodified()
    eps_lb = float(eps_lower_bound(false_pos, n_eval, false_neg, n_eval, delta, alpha))
    mu = gdp_mu_estimate(false_pos / n_eval, false_neg / n_eval, n_eval)
    return result(
        passed=eps_lb <= eps,  # type: ignore[operator]
        eps_lb=eps_lb,
        n_draws=n_eval,
        pair=f"{pair.describe()} (pair {choice.index + 1} of {len(pairs)})",
        statistic=choice.statistic,
        threshold=choice.threshold,
        fpr=false_pos / n_eval,
        fnr=false_neg / n_eval,
        mu_gdp=mu,
        eps_gdp=gdp_eps(mu, delta),
        seconds=time.perf_counter() - start,
        releases=drawn,
        release_path=releases.path(),
        **pair_power_fields(mechanism, claim, pair, n_eval, alpha),
        **power_fields,
    )


__all__ = ["DEFAULT_COST", "AuditResult", "audit_mechanism", "release_scores"]
