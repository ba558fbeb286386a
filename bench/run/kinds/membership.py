"""Membership-inference jobs against label-only mechanisms: one attack (its contract is
bench.plugin.membership) on members and held-out non-members.

The game (Yeom et al. 2018; Carlini et al. 2022): the mechanism is fitted on the task's
training split; the attacker gets m training records drawn at random per seed (members) and
m records of the same distribution that no split holds, with the members' count of each
label (non-members; the held-out test split where the task has no unused records), shuffled
together with their true labels, and scores each; the scores give the ROC AUC and the TPR at
a low FPR (bench.metrics.membership).
The attacker sees the mechanism only through `LabelAccess`: labels of the records it asks
about, answered by `Mechanism.release` exactly as the mechanism serves any user, so a
repeated query of the same record gets the answer the mechanism remembered.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from bench.core.device import to_cpu
from bench.core.errors import ConfigError, MechanismOutputError
from bench.core.hashing import derive_seed
from bench.metrics import MetricResult
from bench.metrics.membership import (
    FPR_LEVELS,
    MIN_NONMEMBERS,
    auc_samples,
    ceiling,
    ceiling_test,
    dp_membership_bound,
    threshold_at_fpr,
)
from bench.metrics.stats import scalar, summarize
from bench.plugin.membership import LabelAccess
from bench.plugin.protocols import (
    DataSplit,
    FitContext,
    Guarantee,
    Splits,
    Task,
)
from bench.plugin.registry import ATTACKS
from bench.run.job import Job
from bench.run.kinds.reconstruction import CostClock, JobOutcome, fit_mechanism, job_environment


@runtime_checkable
class HasPopulation(Protocol):
    """A task that can hand out records of its training distribution which no split holds."""

    def population(self) -> DataSplit | None: ...


def nonmember_pool(task: Task, splits: Splits) -> DataSplit:
    """Where non-members are drawn: the task's unused records of the training distribution
    when it has them (exchangeable with the members, so a membership-blind score has the
    same distribution on both sides), else the held-out test split."""
    population = task.population() if isinstance(task, HasPopulation) else None
    return population if population is not None and len(population) > 0 else splits.test


def attacked_records(
    task: Task, records: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """(x, y, member, train_index): `records` training records drawn at random for the seed
    (0: all of them) and, from `nonmember_pool`, as many non-members with the same count of
    each label, interleaved in a seeded order. Matching the label counts puts every
    membership-blind score on the prior line exactly: a score that depends on the record's
    label alone (a constant predictor's correctness) has the same distribution on both
    sides, so its AUC is 0.5 and its TPR equals its FPR."""
    splits = task.splits()
    n_train = len(splits.train)
    m = n_train if records == 0 else min(records, n_train)
    members = (
        torch.randperm(
            n_train, generator=torch.Generator().manual_seed(derive_seed(seed, "mia-members"))
        )[:m]
        .sort()
        .values
    )
    member_y = splits.train.y[members]
    pool = nonmember_pool(task, splits)
    draw = torch.Generator().manual_seed(derive_seed(seed, "mia-nonmembers"))
    chosen = []
    for label in member_y.unique().tolist():
        need = int((member_y == label).sum())
        candidates = (pool.y == label).nonzero().squeeze(1)
        if len(candidates) < need:
            raise ConfigError(
                f"membership inference needs {need} held-out records of label {label} to match "
                f"the members, the non-member pool has {len(candidates)}; lower the attack's "
                "`records`"
            )
        chosen.append(candidates[torch.randperm(len(candidates), generator=draw)[:need]])
    held_out = torch.cat(chosen)
    x = torch.cat([splits.train.x[members], pool.x[held_out]])
    y = torch.cat([member_y, pool.y[held_out]])
    member = torch.cat([torch.ones(m, dtype=torch.bool), torch.zeros(m, dtype=torch.bool)])
    train_index = torch.cat([members, torch.full((m,), -1)])
    order = torch.randperm(
        2 * m, generator=torch.Generator().manual_seed(derive_seed(seed, "mia-order"))
    )
    return x[order], y[order], member[order], train_index[order]


def claim_of(guarantee: Guarantee) -> tuple[float, float] | None:
    """(eps, delta) a DP claim over training records puts on this game, else None
    (bench.metrics.membership.dp_membership_bound): only those claims get a ceiling."""
    return dp_membership_bound(guarantee.claim())


def membership_metrics(
    scores: np.ndarray, member: np.ndarray, claim: tuple[float, float] | None, seed: int
) -> dict[str, MetricResult]:
    """AUC and TPR at the low FPRs the non-member count allows, each with per-record samples
    for the seed-level bootstrap, the prior line, and the claim's ceiling at 1% FPR with the
    exact test of it (bench.metrics.membership.ceiling_test, its split drawn from `seed`)."""
    members, nonmembers = scores[member], scores[~member]
    out: dict[str, MetricResult] = {
        "mia_auc": summarize(auc_samples(members, nonmembers)),
        "mia_auc_prior": scalar(0.5),
        "mia_records": scalar(float(len(members))),
    }
    for suffix, alpha in FPR_LEVELS:
        if len(nonmembers) < MIN_NONMEMBERS[suffix]:
            continue
        c, _, _ = threshold_at_fpr(members, nonmembers, alpha)
        out[f"mia_tpr_at_{suffix}_fpr"] = summarize((members >= c).astype(np.float64))
        if suffix == "1pct":
            out["mia_tpr_at_1pct_fpr_prior"] = scalar(alpha)
            if claim is not None:
                eps, delta = claim
                out["mia_ceiling_1pct_fpr"] = scalar(ceiling(eps, delta, alpha))
                split = np.random.default_rng(derive_seed(seed, "mia-ceiling-split"))
                tpr_low, limit = ceiling_test(members, nonmembers, eps, delta, alpha, split)
                out["mia_ceiling_beaten"] = scalar(float(tpr_low > limit))
    return out


def run_membership_job(job: Job, cache_root: Path, progress: bool = False) -> JobOutcome:
    """One membership-inference job, pinned as `bench.run.kinds.reconstruction.run_job` pins a
    job."""
    with job_environment(job) as on:
        return _run(job, cache_root, progress, on.device)


def _run(job: Job, cache_root: Path, progress: bool, device: torch.device) -> JobOutcome:
    start = time.perf_counter()
    fitted = fit_mechanism(job, cache_root, progress, device)
    task, cache, mech = fitted.task, fitted.cache, fitted.mechanism
    attack = ATTACKS.get(job.attack)(**job.attack_params)
    x, y, member, train_index = attacked_records(task, attack.p.records, job.seed)
    clock = CostClock(cache)
    attack.fit(mech, task, fitted.splits.aux, FitContext(job.seed, cache, progress, device))
    access = LabelAccess(mech, torch.Generator().manual_seed(derive_seed(job.seed, "release")))
    scores = to_cpu(attack.score(access, x, y, train_index))
    if tuple(scores.shape) != (len(x),) or not torch.isfinite(scores).all():
        raise MechanismOutputError(
            f"attack {job.attack}: score() must return {len(x)} finite scores, got "
            f"{tuple(scores.shape)}"
        )
    guarantee = mech.guarantee()
    metrics = membership_metrics(
        scores.double().numpy(), member.numpy(), claim_of(guarantee), job.seed
    )
    metrics["attack_s"] = scalar(clock.seconds())
    metrics["mia_queries"] = scalar(access.queries / len(x))
    return JobOutcome(metrics, guarantee.to_dict(), time.perf_counter() - start)
