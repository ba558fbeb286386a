"""The LipMIP-style baseline (interval big-M MILP, both output signs, Gurobi) on the hard
row, [8,32,32,8] at R = 0.5, with a longer limit than compare.py's 60 s: how long LipMIP
takes on the nets the region search solves (region_search.txt). One net is compare.py's
`solve` with the longer limit (its seconds include building the model).

Usage (repository root, package installed):
PYTHONPATH=. python studies/ptr-solvers/probes/lipmip_long.py LIMIT_S SEED ...
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from compare import solve

SIZES, RADIUS = [8, 32, 32, 8], 0.5


def main(limit: float, seeds: list[int]) -> None:
    print(f"# lipmip-style/gurobi on {SIZES}, R = {RADIUS}, {limit:.0f} s limit")
    print("seed | status | certified upper | incumbent | seconds")
    for seed in seeds:
        row = solve("lipmip-style/gurobi", SIZES, RADIUS, seed, time_limit=limit)
        print(
            f"{seed} | {row['status']} | {row['upper']:.6f} | {row['lower']} | "
            f"{row['seconds']:.1f}",
            flush=True,
        )


if __name__ == "__main__":
    main(float(sys.argv[1]), [int(s) for s in sys.argv[2:]])
