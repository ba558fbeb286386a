"""Where mia-loo's blind rows miss AUC 0.5: the reference term alone, measured per task.

With every served answer uniform (naive-noise at eps 0), mia-loo's score is a coin's
agreement minus the record's OUT-network agreement on the same queries; the AUC of that
second term alone (members scored by minus their N_i's agreement, non-members by minus N's)
is the offset the game gives this attack on this training set. This script computes it with
the suite's own tasks, seeds, records and cached leave-one-out networks, and prints per task:
the leave-one-out accuracy of the members (N_i on x_i), N's accuracy on the non-members
drawn, and the reference term's AUC. Run from the repository with BENCH_CACHE set to the
cache the lucid-tabular run used.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch

from attacks.membership.leave_one_out import LeaveOneOutAttack, forward_stacked
from bench.metrics.membership import auc_samples
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.run.kinds.membership import attacked_records
from bench.suite.read import load_suite, make_task

SUITE = "lucid-tabular"


def main() -> None:
    cache = ArtifactCache(Path(os.environ.get("BENCH_CACHE", ".bench/cache")))
    suite = load_suite(SUITE)
    print(f"suite {SUITE} v{suite.version}: the mia-loo reference term alone, per task and seed")
    print("task    seed  LOO acc of members (N_i on x_i)  N's acc on non-members  AUC of -ref")
    for entry in suite.tasks:
        task = make_task(entry.name, dict(entry.params), SUITE)
        aucs = []
        for seed in range(suite.seeds):
            x, y, member, index = attacked_records(task, 0, seed)
            attack = LeaveOneOutAttack()
            attack.fit(None, task, task.splits().aux, FitContext(seed, cache))  # type: ignore[arg-type]
            arch, params = attack.out_networks(index)
            queries = attack.queries_with_boundary(x, y, arch, params)
            with torch.no_grad():
                own = forward_stacked(arch, params, x.unsqueeze(1)).argmax(-1).squeeze(1) == y
                reference = (
                    forward_stacked(arch, params, queries).argmax(-1) == y.unsqueeze(1)
                ).double()
            score = -reference.mean(1).numpy()
            m = member.numpy()
            auc = float(auc_samples(score[m], score[~m]).mean())
            aucs.append(auc)
            print(
                f"{entry.name:7s} {seed:4d}  {own[member].double().mean():31.3f}  "
                f"{own[~member].double().mean():22.3f}  {auc:11.3f}"
            )
        print(f"{entry.name:7s} mean AUC of -ref over seeds: {np.mean(aucs):.3f}")


if __name__ == "__main__":
    main()
