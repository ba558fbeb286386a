"""Job-by-job difference of two result stores of one suite (`bench run --store`): jobs are
matched on (params without the names given, attack, seed), and every metric but the timings
(kind "cost" in bench.metrics, as `bench compare` leaves them out) is compared; differences
below 1e-6 relative are counted as floating-point noise.

    python store_diff.py OLD.sqlite NEW.sqlite [PARAM ...]   # PARAMs left out of the match
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from bench.metrics import METRICS
from bench.store.results import ResultStore


def jobs(path: str, ignore: set[str]) -> dict[tuple[Any, ...], dict[str, float]]:
    """Each stored job's metric values, keyed by (params less `ignore`, attack, seed)."""
    store = ResultStore.read_only(Path(path))
    try:
        rows = store.load(store.all_hashes())
    finally:
        store.close()
    out = {}
    for row in rows:
        kept = {k: v for k, v in row["params"].items() if k not in ignore}
        key = (json.dumps(kept, sort_keys=True), row["attack"], row["seed"])
        out[key] = {name: m.value for name, m in row["metrics"].items()}
    return out


def main(old_path: str, new_path: str, *ignore: str) -> None:
    old, new = jobs(old_path, set(ignore)), jobs(new_path, set(ignore))
    shared = [k for k in old if k in new]
    compared, noise, moved = 0, 0.0, []
    for key in shared:
        for metric, before in old[key].items():
            timing = metric in METRICS and METRICS[metric].kind == "cost"
            if timing or metric not in new[key]:
                continue
            after = new[key][metric]
            compared += 1
            rel = abs(after - before) / max(abs(before), 1e-12)
            if rel > 1e-6:
                moved.append(
                    f"  {key[0]} attack={key[1]} seed={key[2]} "
                    f"{metric}: {before:.6g} -> {after:.6g}"
                )
            else:
                noise = max(noise, rel)
    print(
        f"{len(old)} jobs in {old_path}, {len(new)} in {new_path}, {len(shared)} matched; "
        f"{compared} non-timing values compared"
    )
    print(f"values that differ by more than 1e-6 relative: {len(moved)}")
    print("\n".join(moved))
    print(f"largest relative difference among the rest: {noise:.2e}")


if __name__ == "__main__":
    main(*sys.argv[1:])
