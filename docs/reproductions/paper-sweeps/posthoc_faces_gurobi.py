"""PTR's per-query decisions with HiGHS and with Gurobi at the same node budget.

For posthoc-faces' two MILP-heaviest settings (eps 1, obfuscators `encoder` and `n`), fits
each seed's mechanism twice, with `solver` highs and gurobi, releases the utility job's test
queries with the job's release stream, and prints, per seed, how many queries needed a
certified decision, how many each solver released, how many answers differ, how many
decisions ended undecided at the node budget (`ptr_exact` 0: treated as "L > DeltaP", so the
query gets ⊥) and how many MILPs ran. Needs gurobipy (its pip licence covers these models);
pass a warm artifact cache (the VAE and obfuscator then load, not train). Runs at the job's
thread count, so the fits are the committed board's.

Usage (repository root, package and gurobipy installed, data installed):
PYTHONPATH=. python docs/reproductions/paper-sweeps/posthoc_faces_gurobi.py CACHE_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

from bench.core.hashing import derive_seed
from bench.core.threads import pinned_threads, threads_for
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext, Release, Task
from bench.suite.read import make_task
from mechanisms.posthoc.mechanism import PosthocPTR

SETTING = {"eps": 1.0, "R": 0.1, "delta": 0.05, "vae_epochs": 100, "obf_epochs": 100}


def utility_release(
    task: Task, variant: str, solver: str, seed: int, cache: ArtifactCache
) -> Release:
    splits = task.splits()
    mech = PosthocPTR(**SETTING, variant=variant, solver=solver)
    with pinned_threads(threads_for(PosthocPTR)):  # as in the job: the same fits, from the cache
        mech.fit(task, splits, FitContext(seed, cache))
        stream = torch.Generator().manual_seed(derive_seed(seed, "release"))
        return mech.release(splits.test.x, stream)


def main(cache_dir: Path) -> None:
    cache = ArtifactCache(cache_dir)
    task = make_task("faces", {}, "posthoc_faces_gurobi")  # loaded once for all 12 fits
    for variant in ("encoder", "n"):
        for seed in range(3):
            highs = utility_release(task, variant, "highs", seed, cache)
            gurobi = utility_release(task, variant, "gurobi", seed, cache)
            decided = highs.meta["test_radius"].isfinite()
            undecided = [int((r.meta["ptr_exact"][decided] == 0).sum()) for r in (highs, gurobi)]
            milps = [int(r.meta["ptr_milps"].sum()) for r in (highs, gurobi)]
            print(
                f"{variant} seed {seed}: {int(decided.sum())} queries needed a decision; "
                f"released highs {int(highs.released.sum())}, gurobi {int(gurobi.released.sum())}; "
                f"{int((highs.released != gurobi.released).sum())} answers differ; undecided at "
                f"the node budget highs {undecided[0]}, gurobi {undecided[1]}; MILPs "
                f"highs {milps[0]}, gurobi {milps[1]}"
            )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
