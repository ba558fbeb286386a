"""Auditing a claim over neighbouring training sets (notions dp and idp) by refitting.

The input-pair audit (core.py) tests claims over inputs; a mechanism that claims (eps,
delta)-DP, or eps-iDP, with respect to its training data is not tested by it at all. For
such a claim the mechanism fitted on two neighbouring training sets must give outputs that
no test tells apart beyond eps. This audit builds one such pair from the validation task's
training split D and a canary record (x_c, y_c), x_c the corner of the data range farthest
from the training mean, as the claim's `distance` defines neighbours:

- "training-set/add-remove" and "training-set/leave-one-out": D + (x_c, y_c) and D (the
  canary removed: a neighbour under add/remove DP, and the leave-one-out neighbour an iDP
  claim for the set it is fitted on covers);
- "…/replace-one" (records or labels): D + (x_c, y_c) and D + (x_c, y_c'), the canary's
  label replaced.

It fits the mechanism many times on each side, each fit with its own seed and an empty
artifact cache (so no fit can reuse another's model), and records its releases on fixed
probe queries (the canary, test inputs and uniform points of the data range). Selection
fits choose the test, the projection onto the difference of the two sides' mean releases
and its threshold (thresholds.best_threshold); evaluation fits, disjoint from them, give its
false-positive and false-negative counts, and bounds.eps_lower_bound turns those into a 95%
lower bound on eps. The claim fails when that bound exceeds it.

A passing bound says little here: no noise model tells how strong a violation this many
fits would have caught. So this audit refutes or is inconclusive, never a pass
(`TrainingSetAudit.inconclusive`). It runs only for mechanisms cheap enough to fit
`fits_needed` times within its time budget (the first fit is timed); a costlier one, such
as a network trained with DP-SGD, is inconclusive with that reason.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench.certify.audit.bounds import eps_detectable, eps_lower_bound
from bench.certify.audit.result import AuditResult, Progress, audit_generator, no_progress
from bench.certify.audit.thresholds import best_threshold
from bench.core.hashing import derive_seed
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.notions import known_notion, notion_spec
from bench.plugin.protocols import DataSplit, FitContext, Mechanism, Release, Splits, Task

N_SELECT = 50  # fits per side that choose the test
N_EVAL = 250  # fits per side the bound is computed from
MAX_VALUES = 1 << 16  # release values recorded per fit (probes x values per release)
MAX_PROBES = 256  # probe queries per fit
BUDGET_S = 120.0  # the audit's time budget, judged from its first fit
STATISTIC = "projection on the mean release difference"


@dataclass(frozen=True)
class TrainingSetAudit(AuditResult):
    """An audit of a claim over training sets: `n_draws` is the evaluation fits per side,
    `n_select` the selection fits; a result that did not refute the claim is inconclusive
    (`inconclusive`), whatever its bound."""

    neighbours: str = ""

    @property
    def inconclusive(self) -> str | None:
        """Why this result is no evidence for the claim (None when it refuted it)."""
        if not self.passed:
            return None
        if not self.audited:
            return self.reason
        return (
            f"refitting on neighbouring training sets ({self.neighbours}) found eps_lb "
            f"{self.eps_lb:.3g} <= the claimed {self.claimed_eps:g} from {self.n_draws} fits a "
            "side, but no noise model says how strong a violation that many fits would catch"
        )

    def verdict(self) -> str:
        if not self.audited:
            return f"not audited: {self.reason}"
        relation = "<=" if self.passed else ">"
        return (
            f"eps_lb {self.eps_lb:.3g} {relation} claimed eps {self.claimed_eps:.4g} "
            f"over neighbouring training sets"
        )

    def summary(self) -> str:
        if not self.audited:
            return self.verdict()
        return (
            f"{self.verdict()}{'' if self.passed else ' (FAIL)'} at {self.confidence:.0%} "
            f"confidence; {self.neighbours}; 2 x {self.n_select} selection fits, 2 x "
            f"{self.n_draws} evaluation fits, the {self.statistic} test (FPR {self.fpr:.2g}, "
            f"FNR {self.fnr:.2g}); perfect-test ceiling {self.eps_detectable:.3g}; "
            f"{self.seconds:.1f} s"
        )


def applies(notion: str) -> bool:
    """Whether a claim of this notion is over neighbouring training sets (its NotionSpec's
    neighbours), the claims this audit refits for."""
    return known_notion(notion) and notion_spec(notion).neighbours == "training set"


def fits_needed(n_select: int = N_SELECT, n_eval: int = N_EVAL) -> int:
    """Fits the audit makes: selection and evaluation, on each side."""
    return 2 * (n_select + n_eval)


@dataclass(frozen=True)
class _Pair:
    """Two neighbouring training sets and how they differ."""

    d0: DataSplit
    d1: DataSplit
    neighbours: str


def _canary(task: Task, train: DataSplit) -> torch.Tensor:
    """The corner of the data range farthest from the training mean, coordinate-wise."""
    lo, hi = task.data_range
    mean = train.x.float().mean(0)
    corner = torch.where(mean < (lo + hi) / 2, torch.full_like(mean, hi), torch.full_like(mean, lo))
    return corner.to(train.x.dtype)


def neighbouring_sets(task: Task, train: DataSplit, distance: str | None) -> _Pair:
    """The pair of training sets the claim's `distance` calls neighbours (module docstring)."""
    x_c = _canary(task, train).unsqueeze(0)
    labels = torch.bincount(train.y.long(), minlength=task.num_classes)
    y_c = int(labels.argmin())  # the canary joins the rarest class: its pull is largest

    def plus(label: int) -> DataSplit:
        y = torch.cat([train.y, train.y.new_tensor([label])])
        return DataSplit(torch.cat([train.x, x_c]), y)

    if str(distance or "").endswith("replace-one"):
        other = (y_c + 1) % max(task.num_classes, 2)
        return _Pair(plus(y_c), plus(other), "a canary record's label replaced")
    return _Pair(plus(y_c), train, "a canary record added and removed")


def probe_queries(task: Task, canary: torch.Tensor, seed: int, per_query: int) -> torch.Tensor:
    """The fixed queries every fit answers: the canary, the test inputs, then uniform points
    of the data range, at most MAX_PROBES and MAX_VALUES / `per_query` of them."""
    test = task.splits().test.x
    n = max(1, min(MAX_PROBES, MAX_VALUES // max(1, per_query)))
    lo, hi = task.data_range
    gen = audit_generator(seed, "training-set-probes")
    uniform = lo + (hi - lo) * torch.rand((n, *test.shape[1:]), generator=gen)
    return torch.cat([canary.unsqueeze(0), test[: n - 1], uniform.to(test.dtype)])[:n]


def _observe(release: Release) -> np.ndarray:
    """A release as one flat float64 vector: its values where released (0 where ⊥ or not
    finite), then the released mask."""
    values = release.values.reshape(len(release.values), -1).double()
    kept = release.released.reshape(-1, 1).double()
    values = torch.nan_to_num(values * kept, nan=0.0, posinf=0.0, neginf=0.0)
    return torch.cat([values.reshape(-1), kept.reshape(-1)]).numpy()


def _fit_and_release(
    make: Callable[[], Mechanism],
    task: Task,
    train: DataSplit,
    queries: torch.Tensor,
    seed: int,
) -> np.ndarray:
    """A fresh mechanism fitted on `train` (seed `seed`, an empty artifact cache), and its
    release of `queries` with a generator of the same seed, observed."""
    base = task.splits()
    splits = Splits(train, base.aux, base.test)
    root = Path(tempfile.mkdtemp(prefix="bench-training-audit-"))
    try:
        mech = make()
        mech.fit(task, splits, FitContext(seed, ArtifactCache(root)))
        with torch.no_grad():
            release = mech.release(queries.clone(), torch.Generator().manual_seed(seed))
        return _observe(release.cpu())
    finally:
        shutil.rmtree(root, ignore_errors=True)


class _Fits:
    """The audit's fits, each observed on the same queries, counted to `progress`."""

    def __init__(
        self,
        make: Callable[[], Mechanism],
        task: Task,
        queries: torch.Tensor,
        seed: int,
        progress: Progress,
        total: int,
    ) -> None:
        self.make, self.task, self.queries, self.seed = make, task, queries, seed
        self.progress, self.total, self.done = progress, total, 0
        self.kept: dict[tuple[int, int], np.ndarray] = {}

    def one(self, side: int, train: DataSplit, i: int) -> np.ndarray:
        """Fit `i` of `side` (its seed a function of the audit seed, the side and i)."""
        if (side, i) in self.kept:
            return self.kept.pop((side, i))
        fit_seed = derive_seed(self.seed, f"training-set-audit/{side}/{i}") & 0x7FFF_FFFF
        observed = _fit_and_release(self.make, self.task, train, self.queries, fit_seed)
        self.done += 1
        self.progress(self.done, self.total)
        return observed

    def many(self, side: int, train: DataSplit, lo: int, hi: int) -> np.ndarray:
        """Fits lo..hi-1 of `side`, one observation per row."""
        return np.stack([self.one(side, train, i) for i in range(lo, hi)])

    def timed(self, side: int, train: DataSplit) -> float:
        """Seconds the first fit of `side` takes (kept for when it is asked for)."""
        start = time.perf_counter()
        self.kept[(side, 0)] = self.one(side, train, 0)
        return time.perf_counter() - start


def audit_training_sets(
    make: Callable[[], Mechanism],
    task: Task,
    seed: int,
    *,
    n_select: int = N_SELECT,
    n_eval: int = N_EVAL,
    budget_s: float = BUDGET_S,
    confidence: float = 0.95,
    progress: Progress = no_progress,
) -> TrainingSetAudit:
    """Audit the training-set claim of the mechanism `make()` builds (module docstring), on
    `task`; deterministic given `seed` (which fits run, and so whether it runs at all,
    depends on the first fit's time against `budget_s`)."""
    start = time.perf_counter()
    probe = make()
    g = probe.guarantee()
    name = getattr(type(probe), "name", type(probe).__name__)
    eps = g.params.get("eps")
    delta = float(g.params.get("delta", 0.0) or 0.0)
    claimed = None if eps is None else float(eps)

    def result(**fields: Any) -> TrainingSetAudit:
        fields.setdefault("audited", True)
        fields.setdefault("passed", True)
        return TrainingSetAudit(
            name, g.notion, claimed, delta, None, seconds=time.perf_counter() - start, **fields
        )

    why = _untestable(g.notion, claimed, delta, n_eval, confidence)
    if why is not None:
        return result(audited=False, reason=why)
    pair = neighbouring_sets(task, task.splits().train, g.distance)
    per_query = max(int(np.prod(task.splits().test.x.shape[1:])), task.num_classes) + 1
    queries = probe_queries(task, pair.d0.x[-1], seed, per_query)
    total = fits_needed(n_select, n_eval)
    fits = _Fits(make, task, queries, seed, progress, total)
    per_fit = fits.timed(0, pair.d0)
    if per_fit * total > budget_s:
        return result(
            audited=False,
            reason=(
                f"refitting {name} on neighbouring training sets takes {per_fit:.1f} s a fit; "
                f"the {total} fits this audit needs (about {per_fit * total / 60:.0f} min) "
                f"exceed its {budget_s:.0f} s budget"
            ),
        )
    sel0, sel1 = fits.many(0, pair.d0, 0, n_select), fits.many(1, pair.d1, 0, n_select)
    direction = sel1.mean(0) - sel0.mean(0)  # the test: project on it, large means d1
    alpha = 1.0 - confidence
    threshold, _ = best_threshold(sel0 @ direction, sel1 @ direction, delta, alpha, n_eval)
    e0 = fits.many(0, pair.d0, n_select, n_select + n_eval) @ direction
    e1 = fits.many(1, pair.d1, n_select, n_select + n_eval) @ direction
    false_pos, false_neg = int((e0 > threshold).sum()), int((e1 <= threshold).sum())
    bound = float(eps_lower_bound(false_pos, n_eval, false_neg, n_eval, delta, alpha))
    return result(
        passed=bound <= claimed,
        eps_lb=bound,
        eps_detectable=eps_detectable(n_eval, n_eval, delta, alpha),
        confidence=confidence,
        n_pairs=1,
        n_select=n_select,
        n_draws=n_eval,
        pair="neighbouring training sets",
        statistic=STATISTIC,
        threshold=threshold,
        fpr=false_pos / n_eval,
        fnr=false_neg / n_eval,
        neighbours=pair.neighbours,
    )


def _untestable(
    notion: str, eps: float | None, delta: float, n_eval: int, confidence: float
) -> str | None:
    """Why this audit cannot test the claim, or None."""
    if not applies(notion):
        return f"notion {notion!r} is not a claim over training sets"
    if eps is None or not (eps >= 0 and math.isfinite(eps)):
        return f"the {notion} claim declares no finite eps"
    if not 0 <= delta < 1:
        return f"delta {delta} is not in [0, 1)"
    ceiling = eps_detectable(n_eval, n_eval, delta, 1.0 - confidence)
    if eps >= ceiling:
        return (
            f"the claimed eps {eps:g} is at or above {ceiling:.3g}, the most {n_eval} fits a "
            "side can ever refute"
        )
    return None
