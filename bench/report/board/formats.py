"""The machine-readable leaderboard: JSON (what `bench compare` and CI read; strict, no NaN)
and CSV (one line per row x metric)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.rows import SIG_DIGITS

CSV_COLUMNS = (
    "task",
    "mechanism",
    "params",
    "attack",
    "attack_params",
    "seeds",
    "metric",
    "value",
    "ci_lo",
    "ci_hi",
    "n",
)


def leaderboard_json(
    suite: str,
    suite_version: str,
    rows: list[dict[str, Any]],
    code_version: str,
    generated_at: str,
    kind: str | None = None,
) -> str:
    """The leaderboard document as indented JSON text (strict: no NaN / inf); `kind` (the
    suite's, bench.suite.read.KINDS) is written when given: a board without it reads
    as a paper board (bench.report.board.load.board_kind)."""
    doc: dict[str, Any] = {
        "suite": suite,
        "suite_version": suite_version,
        "generated_at": generated_at,
        "code_version": code_version,
    }
    if kind is not None:
        doc["kind"] = kind
    doc["rows"] = rows
    return json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def _fmt_num(x: float) -> str:
    return f"{x:.{SIG_DIGITS}g}"


def leaderboard_csv(rows: list[dict[str, Any]]) -> str:
    """One line per row x metric, metrics in sorted name order."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in rows:
        for name in sorted(row["metrics"]):
            m = row["metrics"][name]
            writer.writerow(
                [
                    row["task"],
                    row["mechanism"],
                    canonical_json(row["params"]),
                    row["attack"] or "",
                    canonical_json(row.get("attack_params") or {}),
                    row["seeds"],
                    name,
                    _fmt_num(m["value"]),
                    _fmt_num(m["ci"][0]),
                    _fmt_num(m["ci"][1]),
                    m["n"],
                ]
            )
    return buf.getvalue()
