"""Whether a longer training of the obfuscator keeps more of the label: for one attribution
row (by default arl at step 9), the obfuscator f and classifier h are trained as the row's
fit trains them (checkpoint_epoch.py), for a multiple of the row's epochs, and the networks
of every epoch are kept. For each budget B (the row's, then the longer one), the public
code's checkpoint rule is applied to the first B epochs' criterion; on the kept epoch, and
at some epochs along the way, the report gives

- h as trained jointly with f, on f's test outputs;
- a fresh classifier of the row's kind and one of bench's kind, trained on the frozen f's
  training outputs (noiseless_accuracy.py's recipe: 20 epochs, Adam 1e-3, batch 128).

A run of k epochs equals epoch k of a longer one (same generator draws; the criterion draws
nothing), so the row's own networks are those the rule keeps within the row's budget. All
accuracies are on the 2,000 test images, without noise or refusals. The row's embedder
comes from the artifact cache (or is trained); the row's obfuscator fit is not needed.

    BENCH_CACHE=... python studies/posthoc-attribution/probes/training_budget.py \
        [BOARD VARIANT] [--step-params JSON] [--factor 2] [--every 10]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the probes beside this one
sys.path.insert(0, str(ROOT.parents[2]))  # the studies package

from checkpoint_epoch import obfuscator_trainer, row_job  # noqa: E402
from noiseless_accuracy import accuracy, retrained  # noqa: E402
from posthoc_attribution_table import STEPS  # noqa: E402

from bench.plugin.artifacts import ArtifactCache  # noqa: E402
from bench.plugin.protocols import FitContext  # noqa: E402
from bench.plugin.registry import MECHANISMS  # noqa: E402
from bench.run.job import Job  # noqa: E402
from bench.run.kinds.reconstruction import FittedJob, job_environment  # noqa: E402
from bench.suite.read import make_task  # noqa: E402
from mechanisms.posthoc import models  # noqa: E402
from mechanisms.posthoc.mechanism import default_latent, fit_embedder  # noqa: E402
from studies.posthoc_attribution import training  # noqa: E402

STEP_9 = json.dumps(STEPS[9][2])  # the attribution table's step 9
Weights = dict[str, torch.Tensor]


class EpochSnapshots(list):
    """The checkpoint criterion per epoch (what train_obfuscator's `trace` receives), and
    beside it a copy of f's and h's weights after that epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.nets: dict[str, torch.nn.Module] = {}
        self.weights: list[tuple[Weights, Weights]] = []

    def append(self, criterion: float) -> None:
        super().append(criterion)
        f, h = self.nets["f"], self.nets["h"]
        self.weights.append((copy.deepcopy(f.state_dict()), copy.deepcopy(h.state_dict())))


def embedder_only(job: Job, cache: Path, device: torch.device) -> FittedJob:
    """The job's task, splits and mechanism with only its embedder fitted (the part of the
    fit the obfuscator's training reads)."""
    task = make_task(job.task, job.task_options)
    splits = task.splits()
    store = ArtifactCache(cache, device=device)
    mech: Any = MECHANISMS.get(job.mechanism)(**job.params)
    ctx = FitContext(job.seed, store, False, device)
    mech.device = device
    mech.vae = fit_embedder(task, ctx, mech.p.latent or default_latent(task), mech.p.vae_epochs)
    return FittedJob(task, splits, store, mech, 0.0)


def trained_with_snapshots(
    fitted: FittedJob, job: Job, device: torch.device, epochs: int
) -> EpochSnapshots:
    """Train f and h for `epochs` epochs as the row's fit does, keeping every epoch's weights
    (the trained networks themselves are the snapshots' `nets`)."""
    snapshots = EpochSnapshots()
    build_f, build_h = models.obfuscator, training.classifier

    def kept(name: str, build: Any) -> Any:
        def make(*args: Any, **kwargs: Any) -> torch.nn.Module:
            snapshots.nets[name] = build(*args, **kwargs)
            return snapshots.nets[name]

        return make

    with (
        mock.patch.object(models, "obfuscator", kept("f", build_f)),
        mock.patch.object(training, "classifier", kept("h", build_h)),
    ):
        obfuscator_trainer(fitted, job, device)(epochs, snapshots)
    return snapshots


def scores(
    fitted: FittedJob,
    f: torch.nn.Module,
    h: torch.nn.Module,
    kind: str,
    embeddings: tuple[torch.Tensor, torch.Tensor],
) -> str:
    """Joint h, fresh classifier of the row's kind, fresh bench classifier: noiseless, on f's
    outputs at the (train, test) embeddings."""
    train, test = fitted.splits.train, fitted.splits.test
    with torch.no_grad():
        out_train, out_test = (f(z).cpu() for z in embeddings)
    fresh = [
        accuracy(retrained(k, out_train, train.y, fitted.task.num_classes), out_test, test.y)
        for k in (kind, "bench")
    ]
    return " | ".join([accuracy(h.cpu().eval(), out_test, test.y), *fresh])


def rule_epoch(snaps: EpochSnapshots, budget: int) -> int:
    """The epoch (from 1) the public code's checkpoint rule keeps within the first `budget`
    epochs: the one with the lowest criterion."""
    return min(range(budget), key=snaps.__getitem__) + 1


def train_and_test_embeddings(
    fitted: FittedJob, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor]:
    """The embedder's outputs on the train and test images (computed once per run)."""
    vae, splits = fitted.mechanism.vae, fitted.splits
    with torch.no_grad():
        return vae(splits.train.x.to(device)), vae(splits.test.x.to(device))


def scores_at(
    fitted: FittedJob,
    snaps: EpochSnapshots,
    epoch: int,
    embeddings: tuple[torch.Tensor, torch.Tensor],
) -> str:
    """`scores` of the networks as they were after `epoch` (from 1)."""
    f, h = snaps.nets["f"], snaps.nets["h"]
    f.load_state_dict(snaps.weights[epoch - 1][0])
    h.load_state_dict(snaps.weights[epoch - 1][1])
    kind = getattr(fitted.mechanism.p, "classifier", "bench")
    return scores(fitted, f.eval(), h.eval(), kind, embeddings)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board", nargs="?", default=STEPS[9][1])
    parser.add_argument("variant", nargs="?", default="arl")
    parser.add_argument("--step-params", default=STEP_9)
    parser.add_argument("--factor", type=int, default=2)
    parser.add_argument("--every", type=int, default=10)
    args = parser.parse_args()
    cache = Path(os.environ.get("BENCH_CACHE", ROOT.parents[2] / ".bench" / "cache"))
    job = row_job(args.board, args.variant, args.step_params)
    with job_environment(job) as on:
        fitted = embedder_only(job, cache, on.device)
        p = fitted.mechanism.p
        epochs = args.factor * p.obf_epochs
        snaps = trained_with_snapshots(fitted, job, on.device, epochs)
        embeddings = train_and_test_embeddings(fitted, on.device)

        def at(epoch: int) -> str:
            return scores_at(fitted, snaps, epoch, embeddings)

        print(job.label())
        print(f"checkpoint criterion per epoch: {', '.join(f'{v:.4g}' for v in snaps)}")
        print(
            "\n| budget (epochs) | networks | epoch | criterion | h, joint "
            f"| fresh {p.classifier} classifier | fresh bench classifier |"
        )
        print("|---|---|---|---|---|---|---|")
        for budget in sorted({p.obf_epochs, epochs}):
            kept = rule_epoch(snaps, budget)
            line = f"| {budget} | kept by the rule | {kept} | {snaps[kept - 1]:.4g} | {at(kept)} |"
            print(line, flush=True)
        for epoch in range(args.every, epochs + 1, args.every):
            line = f"| {epochs} | epoch {epoch} | {epoch} | {snaps[epoch - 1]:.4g} | {at(epoch)} |"
            print(line, flush=True)


if __name__ == "__main__":
    main()
