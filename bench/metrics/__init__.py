"""Metric names, their directions, and the value-with-CI container every metric returns.

`better` is always from the mechanism's point of view: a higher attack error (mse, l1,
l2) is better for privacy, a higher SSIM/PSNR or top-k recovery is worse. `compare` and
the leaderboard read these directions; plug-ins add their own with `register_metric`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from bench.core.errors import ConfigError, UnknownNameError

Better = Literal["higher", "lower"]
Kind = Literal["utility", "privacy", "bound", "cost", "reference"]


@dataclass(frozen=True)
class MetricSpec:
    """A metric's name, which direction is better for the mechanism, and its kind."""

    name: str
    better: Better
    kind: Kind
    description: str


@dataclass
class MetricResult:
    """A metric value with its confidence interval and sample count.

    `samples` holds the per-sample values when the value is a mean over samples, so
    that `aggregate_seeds` can recompute a CI across seeds; None for single numbers.
    """

    value: float
    ci: tuple[float, float]
    n: int
    samples: np.ndarray | None = None


_BUILTIN: tuple[MetricSpec, ...] = (
    MetricSpec("accuracy", "higher", "utility", "fraction of correct top-1 predictions"),
    MetricSpec("auc", "higher", "utility", "ROC AUC (macro one-vs-rest for multi-class)"),
    MetricSpec("mse", "higher", "privacy", "attack reconstruction MSE per dimension"),
    MetricSpec("psnr", "lower", "privacy", "attack reconstruction PSNR in dB (task data range)"),
    MetricSpec("ssim", "lower", "privacy", "attack reconstruction SSIM (task data range)"),
    MetricSpec("l1", "higher", "privacy", "attack reconstruction l1 distance per sample"),
    MetricSpec("l2", "higher", "privacy", "attack reconstruction l2 distance per sample"),
    MetricSpec("top1", "lower", "privacy", "fraction of ids/tokens recovered at rank 1"),
    MetricSpec("top5", "lower", "privacy", "fraction of ids/tokens recovered within rank 5"),
    MetricSpec("bound_mse", "higher", "bound", "claimed lower bound on per-dimension MSE"),
    MetricSpec("bound_validity", "higher", "bound", "fraction of samples respecting the claim"),
    MetricSpec("release_rate", "higher", "utility", "fraction of queries answered (not ⊥)"),
    MetricSpec(
        "modal_prediction_share",
        "lower",
        "reference",
        "share of answered queries given the most frequent predicted class (1.0: constant)",
    ),
    MetricSpec("eps_audit_lb", "lower", "privacy", "empirical lower bound on epsilon (audit)"),
    MetricSpec(
        "eps_audit_ideal",
        "higher",
        "reference",
        "the audit's power: its median eps lower bound on a mechanism exactly at the claim "
        "(below the claim: a violation smaller than the gap could not have been caught)",
    ),
    MetricSpec("audit_draws", "higher", "reference", "the audit's evaluation draws per input"),
    MetricSpec(
        "audit_pair_reach",
        "higher",
        "reference",
        "how far apart the audit's pair of inputs is, as a share of the claim's worst case "
        "(1: the pair the claim allows at most; below it the audit tests an easier pair)",
    ),
    MetricSpec(
        "eps_audit_ideal_pair",
        "higher",
        "reference",
        "the bound the audit reaches on its own pair with the noise as declared",
    ),
    MetricSpec(
        "prior_shrinkage",
        "higher",
        "reference",
        "map: covariance shrinkage of the aux prior, chosen from aux (OAS or Ledoit-Wolf)",
    ),
    MetricSpec("lambda_tv", "higher", "reference", "tv: prior weight chosen on aux queries"),
    MetricSpec("fit_s", "lower", "cost", "mechanism fit time in seconds"),
    MetricSpec("release_ms", "lower", "cost", "release time per sample in milliseconds"),
    MetricSpec("attack_s", "lower", "cost", "attack fit + reconstruct time in seconds"),
)

# One scoring rule for every mechanism: the same metrics over ALL the queried samples, a
# refused query (⊥) scored as the attacker's best prior guess (aux mean, or the most frequent
# id) and, for utility, as the server's (the training split's majority class). A mechanism
# that never refuses has `<m>_all` equal to `<m>`; the standard tracks rank on `<m>_all`.
_OVER_ALL = tuple(
    MetricSpec(
        f"{s.name}_all", s.better, s.kind, f"{s.description}, all samples (⊥ -> prior guess)"
    )
    for s in _BUILTIN
    if s.name in ("accuracy", "mse", "psnr", "ssim", "l1", "l2", "top1", "top5")
)

# Baselines a row is read against, not measurements of the mechanism: the utility of the best
# constant predictor (utility rows) and the attack score of the data-independent prior guess
# on the attacked samples (attack rows). A row at or below them learnt or leaked nothing.
_REFERENCE = (
    MetricSpec(
        "chance",
        "higher",
        "reference",
        "utility of the best constant predictor on the same labels (majority class; AUC 0.5)",
    ),
    *(
        MetricSpec(
            f"{s.name}_prior",
            s.better,
            "reference",
            f"{s.description}, of the prior guess (aux mean or modal id) on the same samples",
        )
        for s in _BUILTIN
        if s.name in ("mse", "ssim", "top1")
    ),
)

# Accelerator jobs only (bench.core.device): whether torch ran an op without a deterministic
# kernel, so the row's numbers may move between reruns; `bench compare` then applies its
# tolerance instead of exact equality. CPU jobs never report it (they are deterministic).
NONDETERMINISTIC_OPS = MetricSpec(
    "nondeterministic_ops",
    "lower",
    "reference",
    "accelerator jobs: share of seeds in which an op without a deterministic kernel ran "
    "(0: the numbers are reproducible on the same device kind)",
)

METRICS: dict[str, MetricSpec] = {
    spec.name: spec for spec in (*_BUILTIN, *_OVER_ALL, *_REFERENCE, NONDETERMINISTIC_OPS)
}


def register_metric(spec: MetricSpec) -> MetricSpec:
    """Add a plug-in metric; re-registering the identical spec is a no-op."""
    known = METRICS.get(spec.name)
    if known is not None and known != spec:
        raise ConfigError(f"metric {spec.name!r} is already registered with a different spec")
    if spec.better not in ("higher", "lower"):
        raise ConfigError(f"metric {spec.name!r}: better must be 'higher' or 'lower'")
    if spec.kind not in ("utility", "privacy", "bound", "cost", "reference"):
        raise ConfigError(
            f"metric {spec.name!r}: kind must be utility/privacy/bound/cost/reference"
        )
    METRICS[spec.name] = spec
    return spec


def metric_spec(name: str) -> MetricSpec:
    """The spec of metric `name`; an unknown name is a one-line `UnknownNameError`."""
    try:
        return METRICS[name]
    except KeyError:
        known = ", ".join(sorted(METRICS))
        raise UnknownNameError(f"unknown metric {name!r}; known metrics: {known}") from None


__all__ = [
    "METRICS",
    "NONDETERMINISTIC_OPS",
    "MetricResult",
    "MetricSpec",
    "metric_spec",
    "register_metric",
]
