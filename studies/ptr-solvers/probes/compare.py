"""Exact local Lipschitz constants (l_inf -> l_1) on LipMIP's shapes: a LipMIP-style MILP
(interval big-M, both output signs), bench's MILP (DeepPoly bounds, c_0 = 1) on Gurobi and
on HiGHS, and bench's activation-pattern search, one after another on one thread.

Usage (repository root, package installed; it installs gurobipy): python compare.py OUT.jsonl
Nets as in REFERENCE.md: W, b ~ U(+-1/sqrt(fan_in)), centre ~ U(-1, 1)^n, seeds 0-4."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import torch

from bench.certify.lipschitz.local import build_milp
from bench.certify.lipschitz.patterns import exact_by_patterns
from bench.certify.milp import gurobi_available
from tests.bench.certify.lipschitz.test_local_lipschitz import random_net

TIME_LIMIT, SEEDS = 60.0, range(5)
ROWS = [
    ([8, 8, 8, 8], 0.1),
    ([8, 8, 8, 8], 0.5),
    ([8, 8, 8, 8], 1.0),
    ([8, 32, 32, 8], 0.1),
    ([8, 32, 32, 8], 0.5),
]
SOLVERS = ["gurobi", "highs"] if gurobi_available() else ["highs"]
METHODS = [
    *(f"lipmip-style/{s}" for s in SOLVERS),
    *(f"bench-milp/{s}" for s in SOLVERS),
    "patterns",
]
HARD = ([8, 32, 32, 8], 0.5)  # every MILP times out here: HiGHS is left out to save 10 min


def solve(
    method: str, sizes: list[int], radius: float, seed: int, time_limit: float = TIME_LIMIT
) -> dict:
    net = random_net(sizes, seed)
    center = np.random.default_rng(seed).uniform(-1, 1, sizes[0])
    start = time.perf_counter()
    if method == "patterns":
        found = exact_by_patterns(net, center, radius, "l1", time_limit=time_limit)
        value, lower, status = found.upper, found.lower, found.status
    else:
        kind, solver = method.split("/")
        milp = build_milp(
            net,
            center,
            radius,
            "l1",
            symmetric=kind == "bench-milp",
            interval_only=kind == "lipmip-style",
        )
        res = milp.solve(time_limit=time_limit, solver=solver)
        value, lower, status = res.bound, res.incumbent, res.status
    return {
        "net": sizes,
        "R": radius,
        "seed": seed,
        "method": method,
        "seconds": round(time.perf_counter() - start, 4),
        "upper": value,
        "lower": lower,
        "status": status,
    }


def main(out: str) -> None:
    torch.set_num_threads(1)
    with open(out, "w") as fh:
        for sizes, radius in ROWS:
            for method in METHODS:
                if (sizes, radius) == HARD and method.endswith("/highs"):
                    continue
                for seed in SEEDS:
                    row = solve(method, sizes, radius, seed)
                    fh.write(json.dumps(row) + "\n")
                    fh.flush()
                    print(row, flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
