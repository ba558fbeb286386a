"""The region search (bench.certify.lipschitz.regions.exact_by_regions) on the hard row,
[8,32,32,8] at R = 0.5, l_inf -> l_1, 60 s per net, one net after another on one thread.

Usage (repository root, package installed):
OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python studies/ptr-solvers/probes/region_search.py
[--time-limit S] [--floor F] [SEED ...]; with --check, it compares itself with the pattern
search on smaller shapes instead. `--floor F` hands the search an attained value F to start
from (an experiment: how much a better early lower bound would save). One BLAS thread: the
node bound is a few small matrix products, and BLAS threads competing for two cores make
each one many times slower.
"""

from __future__ import annotations

import sys

import numpy as np

from bench.certify.lipschitz.patterns import exact_by_patterns
from bench.certify.lipschitz.regions import exact_by_regions
from tests.bench.certify.lipschitz.test_local_lipschitz import random_net

SIZES, RADIUS, TIME_LIMIT = [8, 32, 32, 8], 0.5, 60.0
CHECKS = [([8, 8, 8, 8], 0.5), ([8, 8, 8, 8], 1.0), ([4, 12, 10, 3], 0.7), ([6, 16, 16, 5], 0.4)]
CHECKS += [([8, 32, 32, 8], 0.1)]


def net_and_centre(sizes: list[int], seed: int) -> tuple:
    """compare.py's nets: W, b ~ U(+-1/sqrt(fan_in)), centre ~ U(-1, 1)^n."""
    return random_net(sizes, seed), np.random.default_rng(seed).uniform(-1, 1, sizes[0])


def main(seeds: list[int], time_limit: float, floor: float) -> None:
    start = f", floor {floor}" if floor else ""
    limit = f"{time_limit:.0f} s limit{start}"
    print(f"# region_search.py: {SIZES}, R = {RADIUS}, l_inf -> l_1, {limit}")
    print("seed | upper (certified) | lower (attained) | exact | nodes | LPs | seconds")
    for seed in seeds:
        net, c = net_and_centre(SIZES, seed)
        r = exact_by_regions(net, c, RADIUS, time_limit=time_limit, floor=floor)
        print(
            f"{seed} | {r.upper:.6f} | {r.lower:.6f} | {r.exact} | {r.nodes} | {r.lps} | "
            f"{r.seconds:.1f}",
            flush=True,
        )


def check() -> None:
    """Both searches on smaller shapes (3 seeds each), where the pattern search is exact."""
    print("net, R, seed | region search | pattern search | both exact | agree to 1e-5")
    for (sizes, radius), seed in ((row, seed) for row in CHECKS for seed in range(3)):
        net, c = net_and_centre(sizes, seed)
        mine = exact_by_regions(net, c, radius, time_limit=TIME_LIMIT)
        ref = exact_by_patterns(net, c, radius, "l1", time_limit=TIME_LIMIT)
        agree = abs(mine.upper - ref.upper) <= 1e-5 * ref.upper
        print(
            f"{sizes}, {radius}, {seed} | {mine.upper:.6f} | {ref.upper:.6f} | "
            f"{mine.exact and ref.exact} | {agree}",
            flush=True,
        )


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--check" in args:
        check()
    else:
        options = {"--time-limit": TIME_LIMIT, "--floor": 0.0}
        for name in options:
            if name in args:
                at = args.index(name)
                options[name] = float(args[at + 1])
                del args[at : at + 2]
        main([int(s) for s in args] or list(range(5)), options["--time-limit"], options["--floor"])
