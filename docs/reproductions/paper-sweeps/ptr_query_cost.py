"""Per-query cost of PTR's test on one posthoc-mnist job, by local Lipschitz method: the job's
fitted obfuscator, DeltaP, region certificate, test embeddings and drawn test noise, decided
once with each method (a fresh certifier per query, as the release makes them), so that the
two methods answer the same queries against the same DeltaP.

    python docs/reproductions/paper-sweeps/ptr_query_cost.py SUITE SEED QUERIES METHOD...

SUITE is a suite name or file with one posthoc-ptr setting; the fit comes from the artifact
cache ($BENCH_CACHE, else .bench/cache) when a run of the suite built it.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch

import mechanisms.posthoc.ptr as ptr_module
from bench.run.publish import expand_suite
from bench.core.hashing import derive_seed
from bench.plugin.protocols import NoiseModel
from bench.run.kinds.reconstruction import fit_mechanism, job_environment
from mechanisms.posthoc.ptr import Certifier, phi_noise_scale, ptr_test


def main(suite: str, seed: int, queries: int, methods: list[str]) -> None:
    _, jobs = expand_suite(suite)
    job = next(j for j in jobs if j.seed == seed and j.attack is None)
    print(job.label())
    searches: list[tuple[str, str, float]] = []
    exact_search = ptr_module.local_lipschitz

    def timed_search(*args, **kwargs):  # the certifier's exact searches, with their time
        start = time.perf_counter()
        result = exact_search(*args, **kwargs)
        searches.append((result.method, result.status, time.perf_counter() - start))
        return result

    ptr_module.local_lipschitz = timed_search
    cache = Path(os.environ.get("BENCH_CACHE", ".bench/cache"))
    with job_environment(job) as on:
        fitted = fit_mechanism(job, cache, False, on.device)
    mech = fitted.mechanism
    x = fitted.splits.test.x[:queries]
    # the test noise as the utility job's release draws it (bench.run.kinds.reconstruction: its release stream)
    gen = torch.Generator().manual_seed(derive_seed(job.seed, "release"))
    with torch.no_grad():
        z = mech.vae(x).double().numpy()
    scale = phi_noise_scale(mech.p.eps, mech.p.R)
    noise = NoiseModel("laplace", scale).sample((len(x),), gen).double().numpy()
    print(
        f"DeltaP {mech.delta_p:.4f}; region certificate over the training embeddings: "
        f"L <= {mech.region.lipschitz:.4f}, {'covers' if mech.region.feasible else 'infeasible'}"
    )
    for method in methods:
        cfg = dataclasses.replace(mech.cfg, method=method)
        searches.clear()
        seconds, released, exact = [], 0, 0
        for row, drawn in zip(z, noise, strict=True):
            start = time.perf_counter()
            decision = ptr_test(Certifier(mech.relu_net, row, cfg, mech.region), float(drawn))
            seconds.append(time.perf_counter() - start)
            released += decision.released
            exact += decision.exact
        s = np.asarray(seconds)
        kinds = ", ".join(
            f"{m} {st}: {n}"
            for (m, st), n in sorted(Counter((m, st) for m, st, _ in searches).items())
        )
        print(
            f"{method}: {len(s)} queries, {s.sum():.1f} s in all, median {np.median(s):.3f} s, "
            f"mean {s.mean():.3f} s, max {s.max():.2f} s; released {released}, decided exactly "
            f"{exact}; {len(searches)} exact searches ({kinds})"
        )


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:])
