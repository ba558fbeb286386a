"""Count the non-timing values that moved between two leaderboard.json files of one suite.

Rows are matched by (task, mechanism, params, attack, attack params), with two parameter
renames that change no number mapped first: posthoc-ptr's `time_limit` is dropped (0, no
clock, since stop 40) and `solver = "auto"` is read as "highs" (what "auto" ran on a machine
without gurobipy, before stop 44 made the solver explicit). `bench compare --exact` matches
rows by their exact parameters, so it sees such rows as missing and new.

Usage: python compare_boards.py OLD/leaderboard.json NEW/leaderboard.json [-v]
"""

from __future__ import annotations

import json
import sys
from typing import Any

TIMING = ("_s", "_ms")  # suffixes of cost metrics, which are not held to equality


def row_key(row: dict[str, Any]) -> tuple[str, ...]:
    params = dict(row["params"])
    if row["mechanism"] == "posthoc-ptr":
        params.pop("time_limit", None)
        if params.get("solver") == "auto":
            params["solver"] = "highs"
    return (
        row["task"],
        row["mechanism"],
        json.dumps(params, sort_keys=True),
        str(row["attack"]),
        json.dumps(row["attack_params"], sort_keys=True),
    )


def load_rows(path: str) -> dict[tuple[str, ...], dict[str, Any]]:
    with open(path) as f:
        return {row_key(r): r for r in json.load(f)["rows"]}


def main(old_path: str, new_path: str, verbose: bool) -> None:
    old, new = load_rows(old_path), load_rows(new_path)
    common = old.keys() & new.keys()
    compared = moved = 0
    for key in sorted(common):
        before, after = old[key]["metrics"], new[key]["metrics"]
        for metric in sorted(before.keys() & after.keys()):
            if metric.endswith(TIMING):
                continue
            compared += 1
            if before[metric]["value"] != after[metric]["value"]:
                moved += 1
                if verbose:
                    print(
                        f"{' | '.join(key)} {metric}: {before[metric]['value']} -> "
                        f"{after[metric]['value']}"
                    )
    print(
        f"rows: {len(old)} old, {len(new)} new, {len(common)} matched; "
        f"non-timing values: {moved} of {compared} moved"
    )
    print(f"only old: {len(old.keys() - new.keys())}, only new: {len(new.keys() - old.keys())}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "-v" in sys.argv[3:])
