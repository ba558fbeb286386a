"""DeltaP of each posthoc-ptr setting of a suite, on one seed's fitted networks, calibrated
with the exact search (`auto`) and with the node-limited MILP (`milp`): the same networks and
the same training embeddings, so any difference is the method's, not the host's.

    python docs/reproductions/host-check/deltap_by_method.py SUITE SEED

The fits come from the artifact cache ($BENCH_CACHE, else .bench/cache) when a run of the
suite built them (one utility job per obfuscator variant; eps does not change the fit).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

import numpy as np
import torch

from bench.run.publish import expand_suite
from bench.run.kinds.reconstruction import fit_mechanism, job_environment
from bench.run.job import Job


def settings(suite: str, seed: int) -> list[Job]:
    """The seed's posthoc-ptr utility jobs, one per fit (the first eps of each variant)."""
    _, jobs = expand_suite(suite)
    seen, out = set(), []
    for job in jobs:
        if job.mechanism != "posthoc-ptr" or job.attack is not None or job.seed != seed:
            continue
        fit = tuple(sorted((k, str(v)) for k, v in job.params.items() if k != "eps"))
        if fit not in seen:
            seen.add(fit)
            out.append(job)
    return out


def main(suite: str, seed: int) -> None:
    cache = Path(os.environ.get("BENCH_CACHE", ".bench/cache"))
    for job in settings(suite, seed):
        with job_environment(job) as on:
            fitted = fit_mechanism(job, cache, False, on.device)
        mech = fitted.mechanism
        with torch.no_grad():
            z = mech.vae(fitted.splits.train.x[: mech.p.n_calib])
        line = [f"{job.params['variant']:8s} seed {seed}"]
        values = {}
        for method in ("auto", "milp"):
            mech.p = dataclasses.replace(mech.p, lipschitz_method=method)
            calib = mech._calibrate(z, mech.p.R)
            values[method] = calib["values"]
            line.append(
                f"{method}: DeltaP {calib['delta_p']:.4f} "
                f"({calib['exact_fraction']:.0%} of constants exact)"
            )
        gap = np.abs(values["auto"] - values["milp"])
        line.append(f"constants equal {int((gap == 0).sum())} of {len(gap)}")
        line.append(f"max |auto - milp| {gap.max():.3g}")
        print("; ".join(line), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
