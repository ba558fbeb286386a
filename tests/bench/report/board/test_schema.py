"""The leaderboard JSON Schema (bench/report/board/schemas/): every committed leaderboard follows
it, and it refuses what the loader refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report.board.schema_check import schema_text
from tests.conftest import ROOT

jsonschema = pytest.importorskip("jsonschema")

COMMITTED = sorted((ROOT / "leaderboards").glob("*/leaderboard.json"))


def _validator():
    text = schema_text()
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("board", COMMITTED, ids=lambda p: p.parent.name)
def test_every_committed_leaderboard_follows_the_schema(board: Path) -> None:
    errors = sorted(_validator().iter_errors(json.loads(board.read_text())), key=str)
    assert not errors, f"{board}: {errors[0].message} at {list(errors[0].absolute_path)}"


def test_the_schema_refuses_a_metric_without_a_ci_and_an_unknown_row_key() -> None:
    doc = json.loads(COMMITTED[0].read_text())
    row = doc["rows"][0]
    name = next(iter(row["metrics"]))
    del row["metrics"][name]["ci"]
    assert not _validator().is_valid(doc)
    doc = json.loads(COMMITTED[0].read_text())
    doc["rows"][0]["colour"] = "red"
    assert not _validator().is_valid(doc)


def test_the_typed_row_names_exactly_the_schemas_row_keys() -> None:
    # The TypedDicts the code builds rows with and the schema the files are checked against
    # must not drift: a key added to one is added to the other.
    from bench.report.board.row import Metric, Provenance, Row

    defs = json.loads(schema_text())["$defs"]
    for typed, name in ((Row, "row"), (Metric, "metric"), (Provenance, "provenance")):
        schema = defs[name]
        assert set(typed.__annotations__) == set(schema["properties"]), name
        assert set(typed.__required_keys__) == set(schema["required"]), name


def test_the_schema_allows_every_environment_field_rows_record() -> None:
    # attach_environment copies ENVIRONMENT_KEYS from each job's machine record into the
    # row; the schema closes the environment object, so each of those keys must be in it.
    from bench.report.board.provenance import ENVIRONMENT_KEYS
    from bench.store.results import machine_info

    defs = json.loads(schema_text())["$defs"]
    environment = defs["row"]["properties"]["environment"]["properties"]
    assert set(ENVIRONMENT_KEYS) == set(environment)
    assert set(ENVIRONMENT_KEYS) <= set(machine_info()) | {"cpu_model", "cpu_features"}


def test_the_schema_allows_the_three_board_kinds_and_no_other() -> None:
    doc = {k: v for k, v in json.loads(COMMITTED[0].read_text()).items() if k != "kind"}
    assert _validator().is_valid(doc)  # a board written before boards said: a paper board
    for kind in ("track", "paper", "study"):
        assert _validator().is_valid({**doc, "kind": kind})
    assert not _validator().is_valid({**doc, "kind": "benchmark"})
