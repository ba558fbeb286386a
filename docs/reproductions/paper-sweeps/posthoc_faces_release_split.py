"""Where a posthoc-faces attack job spends the time outside its attack.

Runs the two attack jobs (inverter, optimization) of one posthoc-faces setting and prints
the time of the release of the attacked queries, which each job computes on its own, beside
the job's total and its `attack_s`. Pass a warm artifact cache (the fits are then loaded,
not trained), so what is left is the release and the attack.

Usage (repository root, package installed, data installed):
PYTHONPATH=. python docs/reproductions/paper-sweeps/posthoc_faces_release_split.py CACHE_DIR [SEED]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import bench.run.kinds.reconstruction as evaluate
from bench.run.plan import expand
from bench.suite.read import load_suite

# the slowest setting of profile-posthoc-faces-2026-11-27a.txt
SETTING = {"eps": 1.0, "variant": "encoder"}


def main(cache: Path, seed: int) -> None:
    jobs = [
        job
        for job in expand(load_suite("posthoc-faces"), mechanism="posthoc-ptr")
        if job.seed == seed
        and job.attack is not None
        and all(job.params.get(k) == v for k, v in SETTING.items())
    ]
    release = evaluate._release

    def timed_release(*args, **kwargs):
        start = time.perf_counter()
        out = release(*args, **kwargs)
        print(f"  release of {len(args[1])} queries: {time.perf_counter() - start:.1f} s")
        return out

    evaluate._release = timed_release
    for job in jobs:
        start = time.perf_counter()
        metrics = evaluate.run_job(job, cache).metrics
        total = time.perf_counter() - start
        print(f"{job.attack}: job {total:.1f} s, attack_s {metrics['attack_s'].value:.1f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 2)
