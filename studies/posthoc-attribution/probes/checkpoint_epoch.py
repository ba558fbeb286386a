"""Which epoch the public code's checkpoint rule keeps, and what the classifier scores there
against the last epoch: for one attribution row whose obfuscator uses that rule, the
obfuscator and classifier are retrained exactly as the row's fit trains them (same seed,
generators and inputs; the checkpoint criterion reads the networks without drawing or
moving anything), once to the end with the criterion traced per epoch, once up to the epoch
the rule picks. The second must equal the row's cached networks; both are scored on the
2,000 test images without noise or refusals.

    BENCH_CACHE=... python studies/posthoc-attribution/probes/checkpoint_epoch.py \
        BOARD VARIANT [--step-params JSON]

BOARD and VARIANT pick the row by the attribution table's step parameters (the default is
step 6's: the full training set, no noise fine-tuning).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the probes beside this one
sys.path.insert(0, str(ROOT.parents[2]))  # the studies package

from noiseless_accuracy import accuracy, job_of  # noqa: E402
from posthoc_attribution_table import FULL_SET  # noqa: E402

from bench.core.hashing import seeded_init  # noqa: E402
from bench.plugin.protocols import FitContext  # noqa: E402
from bench.run.job import Job  # noqa: E402
from bench.run.kinds.reconstruction import fit_mechanism, job_environment  # noqa: E402
from studies.posthoc_attribution.mechanism import SWITCH_DEFAULTS  # noqa: E402
from studies.posthoc_attribution.training import train_obfuscator  # noqa: E402

STEP_6 = json.dumps({**FULL_SET, "finetune_epochs": 0})  # the attribution table's step 6
Networks = tuple[torch.nn.Module, torch.nn.Module]


def row_job(board: str, variant: str, step_params: str) -> Job:
    """The attribution row's utility job at eps 10 (its networks do not depend on eps)."""
    job = job_of(board, json.loads(step_params), variant, 10.0)
    if job is None:
        raise SystemExit(f"no utility job of {variant} with those parameters in {board}")
    return job


def obfuscator_trainer(fitted: Any, job: Job, device: torch.device) -> Callable[..., Networks]:
    """A function that retrains the row's obfuscator f and classifier h for a number of
    epochs exactly as its fit does (checkpoint rule "last"), so that a run of k epochs equals
    epoch k of a longer one; keyword overrides (e.g. alpha) change one training choice."""
    mech, p, train = fitted.mechanism, fitted.mechanism.p, fitted.splits.train
    switch = {**SWITCH_DEFAULTS, **vars(p)}  # a posthoc-ptr row (no switches): bench's values
    with torch.no_grad():
        z_train = mech.vae(train.x.to(device))
    z_std = mech._posterior_std(train.x) if switch["recipe"] == "reference-code" else None
    ctx = FitContext(job.seed, fitted.cache, False, device)

    def train_to(epochs: int, trace: list[float] | None = None, **overrides: Any) -> Networks:
        choices = {
            "alpha": p.alpha,
            "recipe": switch["recipe"],
            "classifier_kind": switch["classifier"],
            "adversary_kind": switch["adversary"],
            **overrides,
        }
        with seeded_init(ctx.seed, "posthoc-obf-init"):
            return train_obfuscator(
                z_train,
                train.x,
                train.y,
                fitted.task.num_classes,
                p.variant,
                epochs,
                ctx.generator("posthoc-obf"),
                device=device,
                z_std=z_std,
                checkpoint="last",  # epoch by epoch; the rule's pick is read off `trace`
                trace=trace,
                **choices,
            )

    return train_to


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board")
    parser.add_argument("variant")
    parser.add_argument("--step-params", default=STEP_6)
    args = parser.parse_args()
    cache = Path(os.environ.get("BENCH_CACHE", ROOT.parents[2] / ".bench" / "cache"))
    job = row_job(args.board, args.variant, args.step_params)
    with job_environment(job) as on:
        fitted = fit_mechanism(job, cache, False, on.device)
        mech, p, test = fitted.mechanism, fitted.mechanism.p, fitted.splits.test
        train_to = obfuscator_trainer(fitted, job, on.device)
        trace: list[float] = []
        f_last, h_last = train_to(p.obf_epochs, trace)
        kept = min(range(len(trace)), key=trace.__getitem__) + 1
        f_kept, h_kept = train_to(kept)
        kept_weights, row_weights = f_kept.state_dict().values(), mech.f.state_dict().values()
        same = all(torch.equal(a, b) for a, b in zip(kept_weights, row_weights, strict=True))
        with torch.no_grad():
            z_test = mech.vae(test.x.to(on.device))
            out_last, out_kept = f_last(z_test), f_kept(z_test)
    print(f"{job.label()}")
    print(f"checkpoint criterion per epoch: {', '.join(f'{v:.4g}' for v in trace)}")
    print(f"the rule keeps epoch {kept} of {p.obf_epochs}; equal to the row's cached f: {same}")
    print(f"h at epoch {kept}, no noise: {accuracy(h_kept, out_kept, test.y)}")
    print(f"h at epoch {p.obf_epochs} (last), no noise: {accuracy(h_last, out_last, test.y)}")


if __name__ == "__main__":
    main()
