"""Confidence intervals: percentile bootstrap of a mean, and a two-level bootstrap across seeds.

Everything is deterministic given `seed` and refuses NaN, so a leaderboard rebuilt from
the same store is byte-identical.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from bench.metrics import MetricResult

# Bootstrap index matrices are drawn in chunks of at most this many entries (~32 MB).
_CHUNK = 4_000_000


def _clean(samples: Any) -> np.ndarray:
    """A 1-D float64 copy of `samples`; ValueError when empty or not finite."""
    if hasattr(samples, "detach"):
        samples = samples.detach().cpu().numpy()
    a = np.asarray(samples, dtype=np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("cannot summarise an empty set of samples")
    if np.isnan(a).any():
        raise ValueError("samples contain NaN; a metric must never produce NaN")
    if not np.isfinite(a).all():
        raise ValueError("samples contain inf; a metric must be finite")
    return a


def _check_level(level: float, n_boot: int) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")


def _resampled_means(x: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` means of size-len(x) resamples of x with replacement (chunked for memory)."""
    n = len(x)
    out = np.empty(count, dtype=np.float64)
    step = max(1, _CHUNK // n)
    for start in range(0, count, step):
        stop = min(count, start + step)
        out[start:stop] = x[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    return out


def _percentiles(boot: np.ndarray, level: float) -> tuple[float, float]:
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(boot, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_ci(
    samples: Any, *, level: float = 0.95, n_boot: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap CI of the mean of `samples`; a single sample gives (v, v)."""
    _check_level(level, n_boot)
    x = _clean(samples)
    if len(x) == 1:
        return float(x[0]), float(x[0])
    rng = np.random.default_rng(seed)
    return _percentiles(_resampled_means(x, n_boot, rng), level)


def summarize(
    samples: Any, seed: int = 0, *, level: float = 0.95, n_boot: int = 1000
) -> MetricResult:
    """Mean of per-sample values with its bootstrap CI; the samples are kept for pooling."""
    x = _clean(samples)
    ci = bootstrap_ci(x, level=level, n_boot=n_boot, seed=seed)
    return MetricResult(value=float(x.mean()), ci=ci, n=len(x), samples=x)


def scalar(value: float) -> MetricResult:
    """A single number (a timing, a population-level statement): CI (v, v), n = 1."""
    v = float(_clean([value])[0])
    return MetricResult(value=v, ci=(v, v), n=1, samples=None)


def _hierarchical_boot(
    groups: list[np.ndarray], n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap means that resample seeds, then samples within each drawn seed.

    Each (resample, slot) draws a seed index; the draws of one seed are served together
    from `_resampled_means`, so the work is vectorised per seed rather than per draw.
    """
    k = len(groups)
    picks = rng.integers(0, k, size=n_boot * k)
    means = np.empty(n_boot * k, dtype=np.float64)
    for s, x in enumerate(groups):
        slots = np.flatnonzero(picks == s)
        if slots.size:
            means[slots] = _resampled_means(x, slots.size, rng)
    return means.reshape(n_boot, k).mean(axis=1)


def aggregate_seeds(
    results: list[MetricResult], seed: int = 0, *, level: float = 0.95, n_boot: int = 1000
) -> MetricResult:
    """Combine one result per seed into one result.

    With per-sample values everywhere: value = mean of per-seed means, CI from a
    hierarchical bootstrap (seeds, then samples), n = total samples. Otherwise: value =
    mean of per-seed values, CI = bootstrap over those values (>= 2 seeds) or the single
    result's CI, n = number of seeds. The result has no samples: its value is a mean of
    means, not a mean over pooled samples.
    """
    if not results:
        raise ValueError("aggregate_seeds needs at least one result")
    _check_level(level, n_boot)
    if all(r.samples is not None for r in results):
        groups = [_clean(r.samples) for r in results]
        value = float(np.mean([g.mean() for g in groups]))
        boot = _hierarchical_boot(groups, n_boot, np.random.default_rng(seed))
        lo, hi = _percentiles(boot, level)
        return MetricResult(value, (lo, hi), sum(len(g) for g in groups), None)
    values = _clean([r.value for r in results])
    if len(values) >= 2:
        ci = bootstrap_ci(values, level=level, n_boot=n_boot, seed=seed)
    else:
        ci = (float(results[0].ci[0]), float(results[0].ci[1]))
    return MetricResult(float(values.mean()), ci, len(values), None)


__all__ = ["aggregate_seeds", "bootstrap_ci", "scalar", "summarize"]
