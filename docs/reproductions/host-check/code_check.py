"""Whether a board's differences come from the host or from the code: a few of its settings
are re-run at the committed board's own code on this host (the "check" board), and every
metric of each check row is set beside the committed board's and the re-run's. A check row
that differs from the committed board but not from the re-run puts the move on the host.

    python docs/reproductions/host-check/code_check.py COMMITTED RERUN CHECK [CHECK ...] \
        [--ignore-param NAME ...]

Rows are matched by task, mechanism, parameters and attack; --ignore-param leaves a
parameter out of the match (one the older board predates). Timings and the check's
worst-case rows (a check runs fewer attacks, so its worst case is another) are left out.
A last paragraph counts the point values that differ between the committed board and the
re-run inside and outside the checked settings, with the largest relative moves outside.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

TIMINGS = ("_ms", "_s")
Key = tuple[str, str, str, str]


def rows(path: Path, ignored: set[str]) -> dict[Key, dict[str, Any]]:
    """The board's rows by (task, mechanism, parameters, attack)."""
    out: dict[Key, dict[str, Any]] = {}
    for row in json.loads(path.read_text())["rows"]:
        params = {k: v for k, v in row["params"].items() if k not in ignored}
        key = (row["task"], row["mechanism"], json.dumps(params, sort_keys=True))
        out[(*key, row.get("attack") or "-")] = row
    return out


def value(row: dict[str, Any], metric: str) -> float | None:
    return (row["metrics"].get(metric) or {}).get("value")


def point_moves(
    committed: dict[Key, dict[str, Any]], rerun: dict[Key, dict[str, Any]]
) -> list[tuple[Key, str, float, float]]:
    """Every (row, metric, committed value, re-run value) whose point value differs."""
    moves = []
    for key, old in committed.items():
        for m in old["metrics"]:
            a, b = value(old, m), value(rerun[key], m)
            if not m.endswith(TIMINGS) and a != b:
                moves.append((key, m, a, b))
    return moves


def summary(moves: list[tuple[Key, str, float, float]], settings: set[Key]) -> None:
    inside = [mv for mv in moves if mv[0][:3] in settings]
    outside = [mv for mv in moves if mv[0][:3] not in settings]
    print(
        "# Point values (not CI bounds) that differ between the committed board and the "
        f"re-run: {len(inside)} in the checked settings, {len(outside)} in the other settings; "
        "the largest relative moves among the others:"
    )
    ranked = sorted((abs(b - a) / abs(a), key, m, a, b) for key, m, a, b in outside if a)
    for rel, key, m, a, b in ranked[::-1][:6]:
        label = f"{key[0]} / {key[1]} {json.loads(key[2])} / {key[3]}"
        print(f"  {label}: {m} committed {a:.6g}, re-run {b:.6g} ({rel:.1%})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("committed", type=Path)
    parser.add_argument("rerun", type=Path)
    parser.add_argument("checks", type=Path, nargs="+")
    parser.add_argument("--ignore-param", action="append", default=[], metavar="NAME")
    args = parser.parse_args()
    ignored = set(args.ignore_param)
    committed, rerun = rows(args.committed, ignored), rows(args.rerun, ignored)
    check = {k: r for p in args.checks for k, r in rows(p, ignored).items() if k[3] != "worst case"}
    for key, row in check.items():
        old, new = committed[key], rerun[key]
        names = [m for m in row["metrics"] if not m.endswith(TIMINGS)]
        from_old = [m for m in names if value(row, m) != value(old, m)]
        from_new = [m for m in names if value(row, m) != value(new, m)]
        print(
            f"{key[0]} / {key[1]} {json.loads(key[2])} / {key[3]}: {len(names)} metrics; "
            f"differ from the committed board: {', '.join(from_old) or 'none'}; "
            f"differ from the re-run: {', '.join(from_new) or 'none'}"
        )
        for m in sorted(set(from_old) | set(from_new)):
            print(
                f"  {m}: check {value(row, m):.6g}, committed {value(old, m):.6g}, "
                f"re-run {value(new, m):.6g}"
            )
    summary(point_moves(committed, rerun), {key[:3] for key in check})


if __name__ == "__main__":
    main()
