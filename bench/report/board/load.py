"""Read a leaderboard JSON back, validated against the schema (one-line errors)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.suite.read import DEFAULT_KIND, KINDS

ROW_KEYS = ("task", "mechanism", "params", "guarantee", "attack", "seeds", "metrics")


TOP_KEYS = ("suite", "suite_version", "generated_at", "code_version", "rows")


def _is_num(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _metric_problem(m: Any) -> str | None:
    """What is wrong with one metric entry, or None."""
    if not isinstance(m, dict):
        return "must be an object with value, ci, n"
    if not _is_num(m.get("value")):
        return "value must be a finite number"
    ci = m.get("ci")
    if not (isinstance(ci, list) and len(ci) == 2 and all(_is_num(c) for c in ci)):
        return "ci must be [lo, hi] finite numbers"
    n = m.get("n")
    if not (isinstance(n, int) and not isinstance(n, bool) and n >= 1):
        return "n must be a positive integer"
    return None


def _row_problem(row: Any) -> str | None:
    """What is wrong with one row (as "field: problem"), or None."""
    if not isinstance(row, dict):
        return "is not an object"
    missing = [k for k in ROW_KEYS if k not in row]
    if missing:
        return f"lacks keys {missing}"
    checks = [
        ("task", isinstance(row["task"], str)),
        ("mechanism", isinstance(row["mechanism"], str)),
        ("params", isinstance(row["params"], dict)),
        ("guarantee", isinstance(row["guarantee"], dict) and "notion" in row["guarantee"]),
        ("attack", row["attack"] is None or isinstance(row["attack"], str)),
        ("attack_params", isinstance(row.get("attack_params", {}), dict)),
        (
            "seeds",
            isinstance(row["seeds"], int)
            and not isinstance(row["seeds"], bool)
            and row["seeds"] >= 1,
        ),
        ("metrics", isinstance(row["metrics"], dict)),
    ]
    bad = next((field for field, ok in checks if not ok), None)
    if bad:
        return f"has an invalid {bad!r}"
    for name, m in row["metrics"].items():
        problem = _metric_problem(m)
        if problem:
            return f"metric {name!r}: {problem}"
    return None


def validate_leaderboard(doc: Any, source: str) -> dict[str, Any]:
    """`doc` if it follows the leaderboard schema, else a one-line BenchError naming `source`."""
    if not isinstance(doc, dict):
        raise BenchError(f"leaderboard {source}: top level must be a JSON object")
    missing = [k for k in TOP_KEYS if k not in doc]
    if missing:
        raise BenchError(f"leaderboard {source}: missing top-level keys {missing}")
    bad = [k for k in TOP_KEYS[:4] if not isinstance(doc[k], str)]
    if bad:
        raise BenchError(f"leaderboard {source}: {bad} must be strings")
    if doc.get("kind", DEFAULT_KIND) not in KINDS:
        raise BenchError(f"leaderboard {source}: 'kind' must be one of {', '.join(KINDS)}")
    if not isinstance(doc["rows"], list):
        raise BenchError(f"leaderboard {source}: 'rows' must be a list")
    for i, row in enumerate(doc["rows"]):
        problem = _row_problem(row)
        if problem:
            raise BenchError(f"leaderboard {source}: rows[{i}] {problem}")
    return doc


def board_kind(doc: dict[str, Any]) -> str:
    """What a board is (bench.suite.read.KINDS): its document's `kind`, and "paper" for
    a board written before boards said."""
    return str(doc.get("kind") or DEFAULT_KIND)


def load_leaderboard(path: Path | str) -> dict[str, Any]:
    """Read and validate a leaderboard JSON; any problem is a one-line BenchError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise BenchError(f"cannot read leaderboard {path}: {reason}") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(
            f"leaderboard {path} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    return validate_leaderboard(doc, str(path))
