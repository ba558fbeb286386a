"""Why posthoc-ptr on MNIST sits at chance where the paper reports 0.43-0.92: the release
noise against the spread of what it hides.

For each seed and obfuscator variant of a posthoc suite, fit posthoc-ptr exactly as the
suite's jobs do (same parameters, same thread count, so every artifact comes from the run's
cache), then print DeltaP, the Laplace scale b = DeltaP R / eps of the released values at
each eps, the per-coordinate standard deviation of the obfuscator's outputs on the test
split, and their ratio. Laplace noise of scale b has standard deviation sqrt(2) b.

    BENCH_CACHE=<the run's cache> python scale.py posthoc-mnist > mnist.txt
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

from bench.core.threads import pinned_threads
from bench.data.locations import cache_dir
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS
from bench.run.plan import expand
from bench.suite.read import load_suite, make_task


def main(suite_name: str) -> None:
    suite = load_suite(suite_name)
    entry = suite.tasks[0]
    task = make_task(entry.name, entry.params, suite.source)
    splits = task.splits()
    jobs = [j for j in expand(suite) if j.mechanism == "posthoc-ptr" and j.attack is None]
    settings = sorted(
        {(j.seed, j.params["variant"], j.params["R"]) for j in jobs}, key=lambda s: (s[2], s)
    )
    eps_grid = sorted({j.params["eps"] for j in jobs})
    params_of = {(j.seed, j.params["variant"], j.params["R"]): j.params for j in jobs}
    cache = ArtifactCache(cache_dir(Path(".bench/results.sqlite")))
    print(
        f"suite {suite_name}: eps {eps_grid}; columns: seed variant R DeltaP out_std "
        + " ".join(f"b@eps{e:g}" for e in eps_grid)
        + " noise_std/out_std@eps_max"
    )
    for seed, variant, radius in settings:
        params = dict(params_of[(seed, variant, radius)])
        mech = MECHANISMS.get("posthoc-ptr")(**params)
        with pinned_threads(jobs[0].threads):
            mech.fit(task, splits, FitContext(seed, cache, False))
            with torch.no_grad():
                out = mech.f(mech.vae(splits.test.x))
        out_std = float(out.std(0).mean())
        scales = [mech.delta_p * radius / e for e in eps_grid]
        ratio = math.sqrt(2) * scales[-1] / out_std
        print(
            f"{seed} {variant} {radius:g} {mech.delta_p:.3f} {out_std:.3f} "
            + " ".join(f"{b:.3f}" for b in scales)
            + f" {ratio:.1f}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "posthoc-mnist")
