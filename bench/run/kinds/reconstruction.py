"""Run one job: fit the mechanism, release, then measure utility or run one attack.

Every output crossing a component boundary is checked here (shapes, finiteness, the
released mask), so a faulty mechanism or attack fails its job with a one-line
`MechanismOutputError` instead of writing garbage into the store.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.certify.audit.core import audit_mechanism
from bench.certify.audit.registry import DEFAULT_COST
from bench.core.device import DeviceRun, is_accelerator, job_device, to_cpu
from bench.core.errors import ConfigError, MechanismOutputError
from bench.core.hashing import derive_seed, digest, seeded_init
from bench.core.threads import pinned_threads
from bench.metrics import NONDETERMINISTIC_OPS, MetricResult
from bench.metrics.reconstruction import l1, l2, mse, psnr, ssim
from bench.metrics.stats import scalar, summarize
from bench.metrics.utility import accuracy, auc
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import Attack, FitContext, Mechanism, Release, Splits, Task
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.run.job import Job
from bench.run.queries import RepeatedQueries
from bench.suite.read import make_task

DISCRETE = frozenset({"ids", "text"})
N_EXAMPLES = 8  # reconstructions kept per attack job for the leaderboard's grids
N_SENTENCES = 3  # reconstructed sentences kept per attack job of a text task
# Privacy audit on leaderboard rows (bench.certify.audit.core): the size `bench validate`
# plans, from the claim (95% power against 1.25x its eps) within the same cost budget, so a
# board's audit cell says what validate would; each row reports the draws, the bound the
# audit could reach on a mechanism exactly at its claim, and how close its pair comes to the
# claim's worst case.
AUDIT_COST = DEFAULT_COST


@dataclass
class JobOutcome:
    """What a finished job hands the store: metrics and the mechanism's declared claim."""

    metrics: dict[str, MetricResult]
    guarantee: dict[str, Any]
    duration_s: float
    examples: dict[str, np.ndarray] | None = None  # first originals + reconstructions


def _check_release(release: Release, n: int, who: str) -> None:
    if not isinstance(release, Release):
        raise MechanismOutputError(
            f"{who}: release() must return a Release, got {type(release).__name__}"
        )
    if len(release.values) != n or release.released.shape != (n,):
        raise MechanismOutputError(
            f"{who}: release of {n} inputs has values {tuple(release.values.shape)} and "
            f"released mask {tuple(release.released.shape)}; both need {n} rows"
        )
    if release.released.dtype != torch.bool:
        raise MechanismOutputError(f"{who}: Release.released must be a bool tensor")
    kept = release.values[release.released]
    if kept.is_floating_point() and not torch.isfinite(kept).all():
        raise MechanismOutputError(f"{who}: release values contain NaN or inf")


def _check_tensor(t: torch.Tensor, shape: tuple[int, ...], who: str) -> None:
    if not isinstance(t, torch.Tensor) or tuple(t.shape) != shape:
        got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        raise MechanismOutputError(f"{who}: expected shape {shape}, got {got}")
    if not torch.isfinite(t).all():
        raise MechanismOutputError(f"{who}: output contains NaN or inf")


def _release(mech: Mechanism, x: torch.Tensor, seed: int, who: str) -> tuple[Release, float]:
    """Release `x` with the job's release stream; returns the release (on the CPU, where it
    is scored and attacked from) and ms per sample."""
    gen = torch.Generator().manual_seed(derive_seed(seed, "release"))
    start = time.perf_counter()
    release = mech.release(x, gen)
    if isinstance(release, Release):
        release = release.cpu()
    elapsed_ms = 1000 * (time.perf_counter() - start) / max(1, len(x))
    _check_release(release, len(x), who)
    return release, elapsed_ms


def utility_metrics(
    task: Task,
    mech: Mechanism,
    release: Release,
    y: torch.Tensor,
    who: str,
    prior_label: int | None = None,
) -> dict[str, MetricResult]:
    """Utility over released samples, the release rate, and, with the server's prior label
    (`prior_label`: the training split's majority class), `accuracy_all`: accuracy over every
    query with a refused one (⊥) answered by that label, the one scoring rule every
    mechanism is ranked by."""
    scores = to_cpu(mech.predict(release))
    _check_tensor(scores, (len(y), task.num_classes), f"{who}: predict()")
    kept = release.released
    out = {"release_rate": summarize(kept.double().numpy())}
    if prior_label is not None:
        predicted = torch.where(kept, scores.argmax(1), torch.full_like(y, prior_label))
        out["accuracy_all"] = summarize((predicted == y).double().numpy())
    if kept.any():
        out["accuracy"] = summarize(accuracy(scores[kept], y[kept]))
        out["chance"] = scalar(chance_level(task.utility_metric, y[kept]))
        # 1.0 marks a constant predictor: a row that only looks like a result.
        modal = torch.bincount(scores[kept].argmax(1)).max()
        out["modal_prediction_share"] = scalar(float(modal) / int(kept.sum()))
        if task.utility_metric == "auc":
            out["auc"] = scalar(auc(scores[kept], y[kept]))
    return out


def chance_level(utility_metric: str, y: torch.Tensor) -> float:
    """What the best input-independent predictor scores on these labels: the majority
    class's share for accuracy, 0.5 for AUC (a constant score ranks nothing). A row whose
    utility is not above it has learnt nothing a reader can use."""
    if utility_metric == "auc":
        return 0.5
    return float(torch.bincount(y.long()).max()) / max(1, len(y))


def reconstruction_metrics(
    task: Task, x: torch.Tensor, x_hat: torch.Tensor
) -> dict[str, MetricResult]:
    """Per-sample reconstruction errors of continuous inputs, each with a bootstrap CI."""
    lo, hi = task.data_range
    out = {
        "mse": summarize(mse(x, x_hat)),
        "l1": summarize(l1(x, x_hat)),
        "l2": summarize(l2(x, x_hat)),
    }
    if task.modality == "image":
        out["psnr"] = summarize(psnr(x, x_hat, hi - lo))
        out["ssim"] = summarize(ssim(x, x_hat, hi - lo))
    return out


def recovery_metrics(
    x: torch.Tensor, ranks: torch.Tensor, public_ids: tuple[int, ...] = ()
) -> dict[str, MetricResult]:
    """Discrete inputs: per-sample fraction of ids recovered at rank 1 and within rank 5,
    over the positions whose id is private (not in `public_ids`, e.g. a tokenizer's [CLS],
    [SEP] and [PAD], which every input carries and the attacker knows)."""
    hits = ranks == x.unsqueeze(-1)
    counted = ~torch.isin(x, torch.tensor(public_ids, dtype=x.dtype))
    counted = counted.reshape(len(x), -1).float()
    total = counted.sum(1).clamp_min(1.0)
    top1 = (hits[..., 0].reshape(len(x), -1).float() * counted).sum(1) / total
    top5 = (hits[..., :5].any(-1).reshape(len(x), -1).float() * counted).sum(1) / total
    return {"top1": summarize(top1.double().numpy()), "top5": summarize(top5.double().numpy())}


# Headline attack metrics also scored for the prior guess (`<metric>_prior` on attack rows).
PRIOR_BASELINE = ("mse", "ssim", "top1")


def prior_guess(task: Task, aux: torch.Tensor) -> torch.Tensor:
    """The attacker's best data-independent guess: the aux mean (minimises expected MSE),
    or for discrete inputs the most frequent id at each position."""
    if task.modality in DISCRETE:
        return torch.mode(aux, dim=0).values
    return aux.float().mean(0)


def ranks_ids(attack: Attack) -> bool:
    """Whether the attack ranks discrete candidates (overrides Attack.ranked)."""
    return type(attack).ranked is not Attack.ranked


class _EmbeddingView:
    """A discrete task seen through its embeddings: continuous ("vector") modality."""

    modality = "vector"

    def __init__(self, task: Task) -> None:
        self.data_range = task.data_range


def attack_metrics(
    task: Task,
    attack: Attack,
    release: Release,
    x: torch.Tensor,
    aux: torch.Tensor,
    embeddings: torch.Tensor | None = None,
) -> tuple[dict[str, MetricResult], torch.Tensor]:
    """Reconstruct, check the output, and score it over released samples and over all
    samples with the prior guess for ⊥ (`<m>_all`: the one scoring rule, equal to `<m>` for
    a mechanism that answered every query). On a discrete task, an attack that does not
    rank ids is scored in the `embeddings` table's space."""
    who = f"attack {attack.name}"
    if task.modality in DISCRETE and embeddings is not None and not ranks_ids(attack):
        # A continuous attack on a discrete task reconstructs the embeddings: score it
        # against the true embeddings (the space dFIL bounds speak about).
        x, aux = embeddings[x], embeddings[aux]
        task = _EmbeddingView(task)  # type: ignore[assignment]
    if task.modality in DISCRETE:
        ranks = to_cpu(attack.ranked(release, 5))
        _check_tensor(ranks[..., 0].float(), tuple(x.shape), f"{who}: ranked()")
        x_hat = ranks[..., 0]
        public_ids = tuple(getattr(task, "public_ids", ()))

        def score(a: torch.Tensor, b: torch.Tensor) -> dict[str, MetricResult]:
            return recovery_metrics(a, b, public_ids)

        outputs = ranks
    else:
        x_hat = to_cpu(attack.reconstruct(release))
        _check_tensor(x_hat, tuple(x.shape), f"{who}: reconstruct()")

        def score(a: torch.Tensor, b: torch.Tensor) -> dict[str, MetricResult]:
            return reconstruction_metrics(task, a, b)

        outputs = x_hat
    kept = release.released
    metrics: dict[str, MetricResult] = {}
    guess = prior_guess(task, aux)
    if task.modality in DISCRETE:
        guess = guess.unsqueeze(-1).expand(outputs.shape[1:])
    if kept.any():
        metrics.update(score(x[kept], outputs[kept]))
        # The no-information baseline on the same samples: the data-independent prior guess
        # (an attack that does not beat it has learnt nothing from the release).
        blind = guess.to(outputs.dtype).expand(int(kept.sum()), *outputs.shape[1:])
        baseline = score(x[kept], blind)
        metrics.update({f"{k}_prior": baseline[k] for k in PRIOR_BASELINE if k in baseline})
    mask = kept.view(-1, *([1] * (outputs.ndim - 1)))
    filled = torch.where(mask, outputs, guess.to(outputs.dtype))
    metrics.update({f"{k}_all": v for k, v in score(x, filled).items()})
    return metrics, x_hat


@contextmanager
def job_environment(job: Job) -> Iterator[DeviceRun]:
    """Run the body as `job` runs anywhere: torch pinned to the job's own thread count, its
    global RNG seeded from the job's config, on the job's device (the DeviceRun yielded)."""
    global_seed = int(digest(job.config()), 16)  # the config, not the code: stable across edits
    with (
        pinned_threads(job.threads),
        job_device(job.device) as on,
        seeded_init(global_seed, "job-global-rng"),
    ):
        yield on


class CostClock:
    """Seconds since it was made, with cached artifacts counted at their recorded build time:
    a job's cost as if built from scratch, the same whatever the cache held."""

    def __init__(self, cache: ArtifactCache) -> None:
        self.cache, self.start = cache, time.perf_counter()
        self.inside, self.built = cache.seconds_inside, cache.build_seconds

    def seconds(self) -> float:
        cached = (self.cache.seconds_inside - self.inside) - (self.cache.build_seconds - self.built)
        return time.perf_counter() - self.start - cached


@dataclass
class FittedJob:
    """A job's task and splits, its artifact cache, and its mechanism fitted on the training
    split in `fit_s` seconds (CostClock)."""

    task: Task
    splits: Splits
    cache: ArtifactCache
    mechanism: Mechanism
    fit_s: float


def fit_mechanism(job: Job, cache_root: Path, progress: bool, device: torch.device) -> FittedJob:
    """Build the job's task and fit its mechanism: the first half of every job."""
    task = make_task(job.task, job.task_options)
    splits = task.splits()
    cache = ArtifactCache(cache_root, device=device)
    mech: Mechanism = MECHANISMS.get(job.mechanism)(**job.params)
    clock = CostClock(cache)
    mech.fit(task, splits, FitContext(job.seed, cache, progress, device))
    return FittedJob(task, splits, cache, mech, clock.seconds())


def run_job(job: Job, cache_root: Path, progress: bool = False) -> JobOutcome:
    """Execute `job` from scratch (cached artifacts aside) and return its metrics, with
    torch pinned to the job's own thread count and its global RNG seeded from the job's
    config, whatever process, executor or job order runs it (bench.core.threads), on the job's
    device (bench.core.device). On an accelerator the row also says whether an op without a
    deterministic kernel ran (`nondeterministic_ops`, 0 or 1), so `bench compare` holds it
    to its tolerance rather than to exact equality."""
    with job_environment(job) as on:
        outcome = _run_job(job, cache_root, progress, on.device)
    if is_accelerator(on.device):
        outcome.metrics[NONDETERMINISTIC_OPS.name] = scalar(float(on.nondeterministic))
    return outcome


def _run_job(job: Job, cache_root: Path, progress: bool, device: torch.device) -> JobOutcome:
    start = time.perf_counter()
    fitted = fit_mechanism(job, cache_root, progress, device)
    task, splits, cache, mech = fitted.task, fitted.splits, fitted.cache, fitted.mechanism
    who = f"mechanism {job.mechanism}"

    if job.attack is None:
        release, release_ms = _release(mech, splits.test.x, job.seed, who)
        prior_label = int(torch.bincount(splits.train.y.long()).argmax())
        metrics = utility_metrics(task, mech, release, splits.test.y, who, prior_label)
        metrics["fit_s"] = scalar(fitted.fit_s)
        metrics["release_ms"] = scalar(release_ms)
        metrics.update(mech.claim_metrics(task, splits))
        if job.seed == 0:  # one audit per setting: each is a 95% test, seeds would multiply
            audit = audit_mechanism(mech, task, job.seed, max_cost=AUDIT_COST)
            if audit.audited:
                metrics["eps_audit_lb"] = scalar(float(audit.eps_lb or 0.0))
                metrics["eps_audit_ideal"] = scalar(float(audit.eps_ideal or 0.0))
                metrics["audit_draws"] = scalar(float(audit.n_draws))
                if audit.pair_reach is not None and audit.eps_ideal_pair is not None:
                    metrics["audit_pair_reach"] = scalar(float(audit.pair_reach))
                    metrics["eps_audit_ideal_pair"] = scalar(float(audit.eps_ideal_pair))
        return JobOutcome(metrics, mech.guarantee().to_dict(), time.perf_counter() - start)

    attack = ATTACKS.get(job.attack)(**job.attack_params)
    queries = int(attack.params["queries"])
    if queries > 1 and not mech.repeatable_queries:
        raise ConfigError(
            f"attack {job.attack} asks {queries} queries per input, but mechanism "
            f"{job.mechanism} does not allow repeated queries; use queries = 1"
        )
    # The attacker sees (and trains on) what it would really get: one release, or the
    # mean of `queries` releases of the same input.
    queried = RepeatedQueries(mech, queries) if queries > 1 else mech
    head = splits.test.head(job.attack_samples).x
    inputs_gen = torch.Generator().manual_seed(derive_seed(job.seed, "attack-inputs"))
    target_x = to_cpu(mech.attack_inputs(head, inputs_gen))
    _check_tensor(target_x, tuple(head.shape), f"{who}: attack_inputs()")
    release, _ = _release(queried, target_x, job.seed, who)  # type: ignore[arg-type]
    clock = CostClock(cache)
    attack_ctx = FitContext(derive_seed(job.seed, "attack"), cache, progress, device)
    attack.fit(queried, task, splits.aux, attack_ctx)  # type: ignore[arg-type]
    table = to_cpu(mech.embedding_table())
    metrics, x_hat = attack_metrics(task, attack, release, target_x, splits.aux.x, table)
    # Attack cost as if built from scratch (a learned prior cached by another job counts at
    # its recorded build time), like fit_s.
    metrics["attack_s"] = scalar(clock.seconds())
    metrics.update({name: scalar(value) for name, value in attack.tuned().items()})
    # Bounds speak about what the attack reconstructed: embeddings, for a continuous attack
    # on a discrete task.
    x_true = target_x if table is None or ranks_ids(attack) else table[target_x]
    bounds = mech.bound_metrics(attack, x_true, x_hat, release)
    metrics.update(bounds)
    metrics["release_rate"] = summarize(release.released.double().numpy())
    examples = _examples(task, target_x, x_hat)
    guarantee = mech.guarantee().to_dict()
    basis = mech.bound_basis(attack) if bounds else {}
    if basis:  # which bound the row checks, and whether it holds by theorem for this attack
        guarantee["bound"] = basis
    return JobOutcome(metrics, guarantee, time.perf_counter() - start, examples)


def _examples(task: Task, x: torch.Tensor, x_hat: torch.Tensor) -> dict[str, np.ndarray] | None:
    """The first few originals and reconstructions of an image task, for grid figures, or
    the token ids of a text task's first sentences (shown decoded in the leaderboard)."""
    if task.modality == "text":
        if x_hat.is_floating_point():  # embeddings from a continuous attack: no sentences
            return None
        n = min(N_SENTENCES, len(x))
        return {"x": x[:n].numpy().astype(np.int64), "x_hat": x_hat[:n].numpy().astype(np.int64)}
    if task.modality != "image":
        return None
    n = min(N_EXAMPLES, len(x))
    return {
        "x": x[:n].numpy().astype(np.float16),
        "x_hat": x_hat[:n].detach().numpy().astype(np.float16),
    }
