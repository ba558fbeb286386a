"""The LipMIP-style baseline (interval big-M MILP, both output signs, Gurobi) on the hard
row, [8,32,32,8] at R = 0.5, with a longer limit than compare.py's 60 s: how long LipMIP
takes on the nets the region search solves (region_search.txt).

Usage (repository root, package installed):
PYTHONPATH=. python docs/reproductions/lipschitz-exact/lipmip_long.py LIMIT_S SEED ...
"""

from __future__ import annotations

import sys
import time

import numpy as np

from bench.certify.lipschitz.local import build_milp
from tests.test_local_lipschitz import random_net

SIZES, RADIUS = [8, 32, 32, 8], 0.5


def main(limit: float, seeds: list[int]) -> None:
    print(f"# lipmip-style/gurobi on {SIZES}, R = {RADIUS}, {limit:.0f} s limit")
    print("seed | status | certified upper | incumbent | seconds")
    for seed in seeds:
        net = random_net(SIZES, seed)
        center = np.random.default_rng(seed).uniform(-1, 1, SIZES[0])
        milp = build_milp(net, center, RADIUS, "l1", symmetric=False, interval_only=True)
        start = time.perf_counter()
        res = milp.solve(time_limit=limit, solver="gurobi")
        seconds = time.perf_counter() - start
        print(
            f"{seed} | {res.status} | {res.bound:.6f} | {res.incumbent} | {seconds:.1f}", flush=True
        )


if __name__ == "__main__":
    main(float(sys.argv[1]), [int(s) for s in sys.argv[2:]])
