"""Whether the classifier trained jointly with an adversarially trained obfuscator fails
because it cannot keep up with it: for one attribution row, the obfuscator f and the
classifier h are retrained exactly as the row's fit trains them (checkpoint_epoch.py), up to
a few epochs k, and at each k

- h_k on f_k, as trained jointly;
- h_k trained one more epoch alone on the frozen f_k (the row's own learning rate and batch
  size, a fresh Adam state): how far h_k is from what f_k's output allows;
- when epoch k - 1 is also asked for, how far f moved in its k-th epoch: mean
  ||f_k(z) - f_(k-1)(z)|| over mean ||f_k(z)|| on the test embeddings, and h_k's accuracy on
  f_(k-1)'s outputs.

If h gained most of what f's output allows in one epoch alone while joint training leaves
it near chance, and f moved far in each epoch, h would be chasing a moving target. The same
is measured with only the ARL weight alpha changed (--alpha), to tell whether that weight
decides. All accuracies are on the 2,000 test images, without noise or refusals.

    BENCH_CACHE=... python studies/posthoc-attribution/probes/classifier_lag.py \
        BOARD VARIANT [--step-params JSON] [--epochs 1 2 3] [--alpha 0.9]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the probes beside this one
sys.path.insert(0, str(ROOT.parents[2]))  # the studies package

from checkpoint_epoch import STEP_6, obfuscator_trainer, row_job  # noqa: E402
from noiseless_accuracy import accuracy, train_classifier  # noqa: E402

from bench.run.kinds.reconstruction import fit_mechanism, job_environment  # noqa: E402
from studies.posthoc_attribution.training import REFERENCE_LR  # noqa: E402


def relative_move(new: torch.Tensor, old: torch.Tensor) -> float:
    """Mean distance between two output sets over the new set's mean norm."""
    return float((new - old).norm(dim=1).mean() / new.norm(dim=1).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("board")
    parser.add_argument("variant")
    parser.add_argument("--step-params", default=STEP_6)
    parser.add_argument("--epochs", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--alpha", type=float, nargs="*", default=[0.9])
    args = parser.parse_args()
    cache = Path(os.environ.get("BENCH_CACHE", ROOT.parents[2] / ".bench" / "cache"))
    job = row_job(args.board, args.variant, args.step_params)
    print(job.label())
    print(
        "| alpha | epoch k | h_k on f_k (joint) | h_k + 1 epoch alone on frozen f_k "
        "| f's move in epoch k | h_k on f_(k-1) |"
    )
    print("|---|---|---|---|---|---|")
    with job_environment(job) as on:
        fitted = fit_mechanism(job, cache, False, on.device)
        mech, p = fitted.mechanism, fitted.mechanism.p
        train, test = fitted.splits.train, fitted.splits.test
        lr = REFERENCE_LR if getattr(p, "recipe", "bench") == "reference-code" else 1e-3
        train_to = obfuscator_trainer(fitted, job, on.device)
        with torch.no_grad():
            z_train = mech.vae(train.x.to(on.device))
            z_test = mech.vae(test.x.to(on.device))
        for alpha in [p.alpha, *args.alpha]:
            before = None
            for k in sorted(set(args.epochs)):
                f, h = train_to(k, alpha=alpha)
                with torch.no_grad():
                    out_test, out_train = f(z_test).cpu(), f(z_train).cpu()
                joint = accuracy(h, out_test, test.y)
                moved, on_before = "", ""
                if before is not None and before[0] == k - 1:
                    moved = f"{relative_move(out_test, before[1]):.3f}"
                    on_before = accuracy(h, before[1], test.y)
                before = (k, out_test)
                alone = accuracy(train_classifier(h, out_train, train.y, 1, lr), out_test, test.y)
                cells = f"{joint} | {alone} | {moved} | {on_before}"
                print(f"| {alpha:g} | {k} | {cells} |", flush=True)


if __name__ == "__main__":
    main()
