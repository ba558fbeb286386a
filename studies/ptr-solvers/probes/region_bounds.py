"""How much layer-2 freedom is left inside each layer-1 region of the hard row, by LP.

hard_row.py fixes layer 1 to each sampled region and bounds layer 2's pre-activations over
the whole box: a median 23 to 28 layer-2 neurons stay unstable, and hundreds to thousands
of regions stay above the largest norm seen. Inside one region layer 2 is affine and the
region is a small polytope, so its exact range there is an LP. For the regions hard_row.py
leaves above, this counts the layer-2 neurons unstable in the region itself (a sign seen
at a sample point inside the region needs no LP; the other sign is asked of one LP over the
region) and the regions the coupled bound still leaves above once only those are free.
It measures the next step of an exact pattern search, not the search: only sampled regions
are visited, and layer 2 is not opened.

Usage (repository root, package installed): PYTHONPATH=. python region_bounds.py [SEED ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import highspy
import numpy as np

from bench.certify.lipschitz.coupled import CoupledBound
from bench.certify.lipschitz.relu import ReluMLP, operator_norms

sys.path.insert(0, str(Path(__file__).parent))
from hard_row import RADIUS, sampled_box


def region_lp(net: ReluMLP, c: np.ndarray, free1: np.ndarray, signs: np.ndarray) -> highspy.Highs:
    """An LP over {x in the box : each free layer-1 neuron has its region's sign}."""
    w1, b1 = net.weights[0], net.biases[0]
    lp = highspy.Highs()
    lp.setOptionValue("output_flag", False)
    n = w1.shape[1]
    lp.addVars(n, c - RADIUS, c + RADIUS)
    for j, positive in zip(free1, signs, strict=True):
        lo, hi = (-b1[j], highspy.kHighsInf) if positive else (-highspy.kHighsInf, -b1[j])
        lp.addRow(lo, hi, n, np.arange(n, dtype=np.int32), w1[j])
    return lp


def extreme(lp: highspy.Highs, cost: np.ndarray, maximise: bool) -> float:
    n = len(cost)
    lp.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    sense = highspy.ObjSense.kMaximize if maximise else highspy.ObjSense.kMinimize
    lp.changeObjectiveSense(sense)
    lp.run()
    return float(lp.getInfo().objective_function_value)


def main(seeds: list[int]) -> None:
    print(
        "seed | regions above (box bounds) | their layer-2 unstable, box -> region (median) | "
        "LPs | LP seconds | regions still above (region bounds)"
    )
    for seed in seeds:
        net, c, pre, on, free, x, z1, z2 = sampled_box(seed)
        f1 = np.flatnonzero(free[0])
        rows, which = np.unique(z1[:, f1] > 0, axis=0, return_inverse=True)
        _, first = np.unique(np.hstack([z1 > 0, z2 > 0]), axis=0, return_index=True)
        seen = float(operator_norms(net.jacobians(x[first]), "l1").max())
        coupled = CoupledBound(net)
        w1, w2, b1, b2 = net.weights[0], net.weights[1], net.biases[0], net.biases[1]
        above = still = lps = 0
        box_free, region_free, lp_seconds = [], [], 0.0
        for r, row in enumerate(rows):
            on1 = on[0].copy()
            on1[f1] = row
            a, a0 = w2 @ (on1[:, None] * w1), w2 @ (on1 * b1) + b2  # layer 2 is affine
            mid, rad = a @ c + a0, np.abs(a).sum(1) * RADIUS
            lo, hi = np.maximum(mid - rad, pre[1][0]), np.minimum(mid + rad, pre[1][1])
            free2 = (lo < 0) & (hi > 0)
            on2 = lo >= 0
            if coupled([on1, on2.astype(float)], [0 * on1, free2 * 1.0])[0] <= seen:
                continue
            above += 1
            box_free.append(int(free2.sum()))
            inside = z2[which.ravel() == r]
            pos, neg = (inside > 0).any(0), (inside <= 0).any(0)
            start = time.perf_counter()
            lp = region_lp(net, c, f1, row)
            for k in np.flatnonzero(free2 & ~(pos & neg)):
                lps += 1
                if pos[k]:  # seen positive: can it be negative in the region?
                    crosses = extreme(lp, a[k], maximise=False) + a0[k] < 0
                    on2[k] = not crosses  # else stable on in the region
                else:  # seen non-positive (or not seen): can it be positive?
                    crosses = extreme(lp, a[k], maximise=True) + a0[k] > 0
                    on2[k] = False
                free2[k] = crosses
            lp_seconds += time.perf_counter() - start
            region_free.append(int(free2.sum()))
            bound = coupled([on1, on2.astype(float)], [0 * on1, free2 * 1.0])[0]
            still += bound > seen
        print(
            f"{seed} | {above} | {int(np.median(box_free))} -> {int(np.median(region_free))} | "
            f"{lps} | {lp_seconds:.1f} | {still}",
            flush=True,
        )


if __name__ == "__main__":
    main([int(s) for s in sys.argv[1:]] or list(range(5)))
