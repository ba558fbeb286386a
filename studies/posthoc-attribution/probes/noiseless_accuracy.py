"""How much of an attribution row's accuracy the release's noise costs: for each row of the
attribution table (posthoc_attribution_table.py beside this script) on a board at the current
code, the accuracy of the same job's obfuscator and classifier on the same 2,000 test
images without noise and without PTR's refusals, beside the row's accuracy at eps 10 and
the paper's Table 1 value. The networks come from the artifact cache the boards were made
with (set BENCH_CACHE to it), so the row's own networks are not retrained; a row whose fit
is not in the cache is trained here, and --skip BOARD leaves a board's rows out instead.

At eps 10 Posthoc's release adds Laplace noise of scale DeltaP R / eps per coordinate (R =
0.2), so a row whose accuracy equals its noiseless accuracy lost nothing to the release: the
rest of its gap to the paper lies in the trained networks. To tell the obfuscator f from
the classifier h, two fresh classifiers are also trained on f's noiseless training outputs
(f frozen, 20 epochs, Adam 1e-3, batch 128): one of the row's own kind, and bench's ReLU
classifier. If they reach no higher than h, f's output itself keeps no more of the label.

    BENCH_CACHE=... python studies/posthoc-attribution/probes/noiseless_accuracy.py \
        [--eps 10] [--skip BOARD ...]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))  # the studies package
sys.path.insert(0, str(Path(__file__).resolve().parent))  # the table script beside this one

from posthoc_attribution_table import (  # noqa: E402
    MECHANISMS,
    VARIANTS,
    all_rows,
    carried,
    find,
    matches,
    paper,
    suite_file,
    utility_rows,
)

from bench.metrics.stats import summarize  # noqa: E402
from bench.run.job import Job  # noqa: E402
from bench.run.kinds.reconstruction import fit_mechanism, job_environment  # noqa: E402
from bench.run.publish import expand_suite  # noqa: E402
from studies.posthoc_attribution.training import classifier  # noqa: E402

RETRAIN_EPOCHS = 20


def job_of(board: str, own: dict[str, Any], variant: str, eps: float) -> Job | None:
    """The suite's utility job with the row's parameters (defaults filled in)."""
    _, jobs = expand_suite(suite_file(board))
    for job in jobs:
        if (
            job.attack is None
            and job.mechanism in MECHANISMS
            and matches(job.params, own, variant, eps)
        ):
            return job
    return None


def accuracy(h: torch.nn.Module, out: torch.Tensor, y: torch.Tensor) -> str:
    """Accuracy [95% bootstrap CI] of classifier h on outputs `out` with labels y."""
    with torch.no_grad():
        correct = (h(out).argmax(1).cpu() == y).double().numpy()
    result = summarize(correct)
    return f"{result.value:.3f} [{result.ci[0]:.3f}, {result.ci[1]:.3f}]"


def train_classifier(
    h: torch.nn.Module, out: torch.Tensor, y: torch.Tensor, epochs: int, lr: float
) -> torch.nn.Module:
    """Classifier h trained `epochs` epochs on frozen obfuscator outputs (batch 128, a fresh
    Adam at `lr`, batches drawn from a generator seeded 0); returned in evaluation mode."""
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(h.parameters(), lr=lr)
    h.train()
    for _ in range(epochs):
        order = torch.randperm(len(out), generator=gen)
        for start in range(0, len(out), 128):
            idx = order[start : start + 128]
            loss = torch.nn.functional.cross_entropy(h(out[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return h.eval()


def retrained(kind: str, out: torch.Tensor, y: torch.Tensor, classes: int) -> torch.nn.Module:
    """A fresh classifier of `kind` trained on the frozen obfuscator's noiseless outputs."""
    torch.manual_seed(0)
    h = classifier(out.shape[1], classes, kind=kind)
    return train_classifier(h, out, y, RETRAIN_EPOCHS, lr=1e-3)


def noiseless_accuracies(job: Job, cache: Path) -> list[str]:
    """On the job's test split, without noise and refusals: the job's own h, then fresh
    classifiers of the row's kind and of bench's kind on the frozen f."""
    with job_environment(job) as on:
        fitted = fit_mechanism(job, cache, False, on.device)
        mech, train, test = fitted.mechanism, fitted.splits.train, fitted.splits.test
        with torch.no_grad():
            out_train = mech.f(mech.vae(train.x.to(on.device))).cpu()
            out_test = mech.f(mech.vae(test.x.to(on.device))).cpu()
        classes = fitted.task.num_classes
        kinds = [job.params.get("classifier", "bench"), "bench"]
        return [accuracy(mech.h.cpu(), out_test, test.y)] + [
            accuracy(retrained(kind, out_train, train.y, classes), out_test, test.y)
            for kind in kinds
        ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", type=float, default=10.0)
    parser.add_argument("--skip", nargs="*", default=[], metavar="BOARD")
    args = parser.parse_args()
    cache = Path(os.environ.get("BENCH_CACHE", ROOT / ".bench" / "cache"))
    ref = paper()
    eps = f"eps {args.eps:g}"
    print(f"Noiseless accuracy of each attribution row's networks, against its accuracy at {eps}")
    print("(2,000 test images; 95% bootstrap CIs)\n")
    print(
        f"| step | variant | paper, {eps} | row, {eps} | noiseless, h "
        f"| noiseless, h retrained ({RETRAIN_EPOCHS} epochs) | noiseless, bench's h retrained |"
    )
    print("|---|---|---|---|---|---|---|")
    for index, group in all_rows():
        label, board, own = group[index]
        if board in args.skip:
            continue
        rows = utility_rows(board)
        for variant in VARIANTS:
            if carried(index, variant, group):
                continue
            row = find(rows, own, variant, args.eps)
            job = job_of(board, own, variant, args.eps)
            if row is None or job is None:
                continue
            at_eps = row["metrics"]["accuracy"]["value"]
            cells = " | ".join(noiseless_accuracies(job, cache))
            line = (
                f"| {label} | {variant} | {ref[(variant, args.eps)]:.3f} | {at_eps:.3f} | {cells} |"
            )
            print(line, flush=True)


if __name__ == "__main__":
    main()
