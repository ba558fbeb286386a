"""What a user calling `local_lipschitz` with its defaults gets on LipMIP's five rows: the
method it picks, its time and whether it finished exactly, 5 nets per row, 60 s limit,
one net after another on one thread, each timed as the whole call; medians (time-outs at
the limit) beside the LipMIP-style baseline's (Gurobi, from results.jsonl).

Usage (repository root, package installed):
OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python studies/ptr-solvers/probes/default_method.py
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

from bench.certify.lipschitz.local import local_lipschitz

sys.path.insert(0, str(Path(__file__).parent))
from region_search import net_and_centre

TIME_LIMIT = 60.0
ROWS = [([8, 8, 8, 8], 0.1), ([8, 8, 8, 8], 0.5), ([8, 8, 8, 8], 1.0)]
ROWS += [([8, 32, 32, 8], 0.1), ([8, 32, 32, 8], 0.5)]
RESULTS = Path(__file__).parents[1] / "records" / "results.jsonl"


def baseline_median(sizes: list[int], radius: float) -> float:
    """The LipMIP-style MILP's median seconds on Gurobi (time-outs counted at the limit)."""
    rows = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    times = [
        r["seconds"]
        for r in rows
        if r["net"] == sizes and r["R"] == radius and r["method"] == "lipmip-style/gurobi"
    ]
    return statistics.median(times)


def main() -> None:
    print("net, R | seed | method | status | exact | upper | seconds")
    summary = []
    for sizes, radius in ROWS:
        times = []
        for seed in range(5):
            net, center = net_and_centre(sizes, seed)
            start = time.perf_counter()
            found = local_lipschitz(net, center, radius, "l1", time_limit=TIME_LIMIT)
            seconds = time.perf_counter() - start  # the whole call, cheap bounds included
            times.append(TIME_LIMIT if found.status == "time_limit" else seconds)
            print(
                f"{sizes}, {radius} | {seed} | {found.method} | {found.status} | {found.exact} | "
                f"{found.upper:.6f} | {seconds:.3f}",
                flush=True,
            )
        summary.append((sizes, radius, statistics.median(times), baseline_median(sizes, radius)))
    print("net, R | bench default, median s | LipMIP-style Gurobi, median s (results.jsonl)")
    for sizes, radius, mine, base in summary:
        print(f"{sizes}, {radius} | {mine:.3f} | {base:.3f}")


if __name__ == "__main__":
    main()
