"""`bench compare --exact` of two leaderboard.json files of one suite, after two parameter
renames that change no number: posthoc-ptr's `time_limit` is dropped (0: no clock, the
default since 2026-11-26) and `solver = "auto"` is read as "highs" (what "auto" ran on a
machine without gurobipy, before the solver was made explicit on 2026-11-27). Without them
`bench compare` matches rows by their exact parameters and sees the renamed rows as missing
and added.

Usage: python compare_boards.py OLD/leaderboard.json NEW/leaderboard.json
Prints bench.report.tools.compare's report and exits 1 when it fails, as `bench compare` does:
every non-timing metric's value and CI are held to equality, timing metrics to the 50% cost
tolerance. Timings differ between hosts and between cold and warm caches, so a re-run can
fail on them alone; the records it wrote are about the non-timing count.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from bench.report.tools.compare import compare


def renamed(board: dict[str, Any]) -> dict[str, Any]:
    """`board` with the parameter renames of the module docstring applied to its rows."""
    rows = []
    for row in board["rows"]:
        params = dict(row["params"])
        if row["mechanism"] == "posthoc-ptr":
            params.pop("time_limit", None)
            if params.get("solver") == "auto":
                params["solver"] = "highs"
        rows.append({**row, "params": params})
    return {**board, "rows": rows}


def main(old_path: str, new_path: str) -> int:
    with open(old_path) as old, open(new_path) as new:
        report = compare(renamed(json.load(old)), renamed(json.load(new)), exact=True)
    print(report.format())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
