"""A leaderboard JSON checked against the published JSON Schema (schemas/), so that `bench
compare` never reads a board another tool would reject: the first violation, one line."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError


def schema_text() -> str:
    """The leaderboard JSON Schema, as shipped with the package."""
    return (
        resources.files("bench.report.board") / "schemas" / "leaderboard.schema.json"
    ).read_text()


@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(schema_text())
    return jsonschema.Draft202012Validator(schema)


def check_schema(doc: Any, source: Path | str) -> None:
    """Nothing when `doc` follows the leaderboard schema; else a one-line BenchError naming
    the file, where in it the first violation is, and what it is."""
    import jsonschema

    try:
        error = jsonschema.exceptions.best_match(_validator().iter_errors(doc))
    except RecursionError:
        raise BenchError(f"leaderboard {source} nests too deeply to be a leaderboard") from None
    if error is None:
        return
    where = "/".join(str(p) for p in error.absolute_path) or "(top level)"
    message = " ".join(error.message.split())
    if len(message) > 200:
        message = message[:197] + "..."
    raise BenchError(
        f"leaderboard {source} does not follow the leaderboard JSON Schema at {where}: "
        f"{message}; rewrite it with `bench leaderboard`"
    )
