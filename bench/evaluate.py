"""Run one job: fit the mechanism, release, then measure utility or run one attack.

Every output crossing a component boundary is checked here (shapes, finiteness, the
released mask), so a faulty mechanism or attack fails its job with a one-line
`MechanismOutputError` instead of writing garbage into the store.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from bench.cache import ArtifactCache
from bench.errors import MechanismOutputError
from bench.hashing import derive_seed
from bench.jobs import Job
from bench.metrics import MetricResult
from bench.metrics.reconstruction import l1, l2, mse, psnr, ssim
from bench.metrics.stats import scalar, summarize
from bench.metrics.utility import accuracy, auc
from bench.protocols import FitContext, Mechanism, Release, Task
from bench.registry import ATTACKS, MECHANISMS
from bench.suite import make_task


@dataclass
class JobOutcome:
    """What a finished job hands the store: metrics and the mechanism's declared claim."""

    metrics: dict[str, MetricResult]
    guarantee: dict[str, Any]
    duration_s: float


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
    """Release `x` with the job's release stream; returns the release and ms per sample."""
    gen = torch.Generator().manual_seed(derive_seed(seed, "release"))
    start = time.perf_counter()
    release = mech.release(x, gen)
    elapsed_ms = 1000 * (time.perf_counter() - start) / max(1, len(x))
    _check_release(release, len(x), who)
    return release, elapsed_ms


def utility_metrics(
    task: Task, mech: Mechanism, release: Release, y: torch.Tensor, who: str
) -> dict[str, MetricResult]:
    """Utility over released samples, plus the release rate (⊥ answers are not scored)."""
    scores = mech.predict(release)
    _check_tensor(scores, (len(y), task.num_classes), f"{who}: predict()")
    kept = release.released
    out = {"release_rate": summarize(kept.double().numpy())}
    if kept.any():
        out["accuracy"] = summarize(accuracy(scores[kept], y[kept]))
        if task.utility_metric == "auc":
            out["auc"] = scalar(auc(scores[kept], y[kept]))
    return out


def reconstruction_metrics(
    task: Task, x: torch.Tensor, x_hat: torch.Tensor
) -> dict[str, MetricResult]:
    """Per-sample reconstruction errors, each summarised with a bootstrap CI."""
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


def run_job(job: Job, cache_root: Path, progress: bool = False) -> JobOutcome:
    """Execute `job` from scratch (cached artifacts aside) and return its metrics."""
    start = time.perf_counter()
    task = make_task(job.task, job.task_options)
    splits = task.splits()
    cache = ArtifactCache(cache_root)
    mech: Mechanism = MECHANISMS.get(job.mechanism)(**job.params)
    who = f"mechanism {job.mechanism}"

    t0 = time.perf_counter()
    mech.fit(task, splits, FitContext(job.seed, cache, progress))
    # Fit cost as if built from scratch: cached artifacts count at their recorded build time.
    fit_s = time.perf_counter() - t0 - cache.seconds_inside + cache.build_seconds

    if job.attack is None:
        release, release_ms = _release(mech, splits.test.x, job.seed, who)
        metrics = utility_metrics(task, mech, release, splits.test.y, who)
        metrics["fit_s"] = scalar(fit_s)
        metrics["release_ms"] = scalar(release_ms)
    else:
        target = splits.test.head(job.attack_samples)
        release, _ = _release(mech, target.x, job.seed, who)
        attack = ATTACKS.get(job.attack)(**job.attack_params)
        t0 = time.perf_counter()
        attack.fit(
            mech, task, splits.aux, FitContext(derive_seed(job.seed, "attack"), cache, progress)
        )
        x_hat = attack.reconstruct(release)
        attack_s = time.perf_counter() - t0
        _check_tensor(x_hat, tuple(target.x.shape), f"attack {job.attack}: reconstruct()")
        kept = release.released
        metrics = {"release_rate": summarize(kept.double().numpy()), "attack_s": scalar(attack_s)}
        if kept.any():
            metrics.update(reconstruction_metrics(task, target.x[kept], x_hat[kept]))
    return JobOutcome(metrics, mech.guarantee().to_dict(), time.perf_counter() - start)
