"""Read a leaderboard JSON back, validated against the schema (one-line errors).

Every board bench reads (`bench compare`, `bench leaderboard --refresh`, `bench status`, the
warm rerun) goes through `load_leaderboard`: the path must be a regular file (a FIFO or a
character device would block or never end) of at most MAX_BOARD_BYTES, UTF-8 JSON nested at
most MAX_DEPTH levels (deeper documents exhaust the parsers' recursion), of the leaderboard
schema; anything else is refused in one line before any of it is used.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.suite.read import DEFAULT_KIND, KINDS

MAX_BOARD_BYTES = 64 * 1024 * 1024  # the largest committed board is a few MB
MAX_DEPTH = 64  # a board nests about 6 levels deep

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


def read_board_bytes(path: Path | str, limit: int | None = None) -> bytes:
    """The bytes of a board file: a regular file of at most `limit` bytes (default
    MAX_BOARD_BYTES; opened without blocking, so a FIFO is refused rather than waited on);
    else a one-line BenchError."""
    path = Path(path)
    limit = MAX_BOARD_BYTES if limit is None else limit
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError) as e:
        reason = getattr(e, "strerror", None) or str(e)
        raise BenchError(f"cannot read leaderboard {path}: {reason}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, socket or device"
        raise BenchError(f"leaderboard {path} is {kind}, not a regular file")
    with os.fdopen(fd, "rb") as file:
        try:
            data = file.read(limit + 1)
        except OSError as e:
            raise BenchError(f"cannot read leaderboard {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise BenchError(
            f"leaderboard {path} is larger than {limit // (1024 * 1024)} MiB; not a leaderboard"
        )
    return data


def _depth_exceeds(doc: Any, limit: int) -> bool:
    """Whether `doc` nests lists and objects more than `limit` levels deep (iteratively)."""
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth > limit:
                return True
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)
    return False


def parse_board(data: bytes, source: str) -> Any:
    """A board file's bytes as JSON (not yet validated); a one-line BenchError for text
    that is not UTF-8, not JSON, or nested deeper than MAX_DEPTH."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise BenchError(f"leaderboard {source} is not UTF-8 text (a binary file?)") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BenchError(
            f"leaderboard {source} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}"
        ) from None
    except RecursionError:
        raise BenchError(f"leaderboard {source} nests too deeply to be a leaderboard") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise BenchError(f"leaderboard {source} is not usable JSON: {e}") from None
    if _depth_exceeds(doc, MAX_DEPTH):
        raise BenchError(
            f"leaderboard {source} nests more than {MAX_DEPTH} levels deep; not a leaderboard"
        )
    return doc


def load_leaderboard(path: Path | str) -> dict[str, Any]:
    """Read and validate a leaderboard JSON (`read_board_bytes`, `parse_board`,
    `validate_leaderboard`); any problem is a one-line BenchError."""
    doc = parse_board(read_board_bytes(path), str(path))
    return validate_leaderboard(doc, str(path))
