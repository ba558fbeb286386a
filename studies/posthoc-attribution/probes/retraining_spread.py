"""How far one attribution row's noiseless scores move when its networks are trained again
under another seed, or on an embedder trained longer: for one row (by default arl at step 9)
and each requested (seed, embedder epochs), the embedder, the obfuscator f and the
classifier h are trained as the row's fit trains them (training_budget.py), the row's
checkpoint rule picks the epoch (the public code's rule, or the last epoch), and the picked
networks are scored as in training_budget.py: h as trained with f, and fresh classifiers of
the row's kind and of bench's kind on the frozen f. All accuracies are on the 2,000 test
images, without noise or refusals. The row itself is seed 0 at its own embedder epochs
(training-budget.txt, 30-epoch budget).

    BENCH_CACHE=... python studies/posthoc-attribution/probes/retraining_spread.py \
        [BOARD VARIANT] [--step-params JSON] [--runs SEED:VAE_EPOCHS ...]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the probes beside this one
sys.path.insert(0, str(ROOT.parents[2]))  # the studies package

from checkpoint_epoch import row_job  # noqa: E402
from posthoc_attribution_table import STEPS  # noqa: E402
from training_budget import (  # noqa: E402
    STEP_9,
    embedder_only,
    rule_epoch,
    scores_at,
    train_and_test_embeddings,
    trained_with_snapshots,
)

from bench.run.job import Job  # noqa: E402
from bench.run.kinds.reconstruction import job_environment  # noqa: E402


def seed_and_epochs(text: str) -> tuple[int, int]:
    """'SEED:VAE_EPOCHS' as two integers."""
    try:
        seed, vae_epochs = (int(part) for part in text.split(":"))
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected SEED:VAE_EPOCHS, got {text!r}") from err
    return seed, vae_epochs


def retrained_row(job: Job, cache: Path, seed: int, vae_epochs: int) -> str:
    """The row's networks trained at `seed` with `vae_epochs` embedder epochs, its rule's
    epoch picked within its budget, as one table line."""
    moved = dataclasses.replace(job, seed=seed, params={**job.params, "vae_epochs": vae_epochs})
    with job_environment(moved) as on:
        fitted = embedder_only(moved, cache, on.device)
        p = fitted.mechanism.p
        snaps = trained_with_snapshots(fitted, moved, on.device, p.obf_epochs)
        budget = len(snaps)
        kept = rule_epoch(snaps, budget) if p.checkpoint == "reference-code" else budget
        embeddings = train_and_test_embeddings(fitted, on.device)
        line = scores_at(fitted, snaps, kept, embeddings)
    return f"| {seed} | {vae_epochs} | {kept} | {snaps[kept - 1]:.4g} | {line} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board", nargs="?", default=STEPS[9][1])
    parser.add_argument("variant", nargs="?", default="arl")
    parser.add_argument("--step-params", default=STEP_9)
    runs = [(0, 20), (1, 2), (1, 20), (2, 2), (2, 20)]
    parser.add_argument("--runs", nargs="+", type=seed_and_epochs, default=runs)
    args = parser.parse_args()
    cache = Path(os.environ.get("BENCH_CACHE", ROOT.parents[2] / ".bench" / "cache"))
    job = row_job(args.board, args.variant, args.step_params)
    print(job.label())
    print(
        "\n| seed | embedder epochs | epoch kept | criterion | h, joint "
        f"| fresh {job.params.get('classifier', 'bench')} classifier | fresh bench classifier |"
    )
    print("|---|---|---|---|---|---|---|", flush=True)
    for seed, vae_epochs in args.runs:
        print(retrained_row(job, cache, seed, vae_epochs), flush=True)


if __name__ == "__main__":
    main()
