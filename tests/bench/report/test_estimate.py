"""Dry-run estimates from a committed board when the store has never run the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report.tools.estimate import board_job_seconds, committed_job_seconds
from tests.conftest import ROOT


def _m(value: float, n: int = 1) -> dict:
    return {"value": value, "ci": [value, value], "n": n}


DOC = {
    "rows": [
        # a utility job: 10 s of fit plus 200 releases (400 over 2 seeds) at 5 ms each
        {"task": "t", "mechanism": "m", "attack": None, "seeds": 2,
         "metrics": {"fit_s": _m(10.0), "release_ms": _m(5.0), "release_rate": _m(1.0, 400)}},
        {"task": "t", "mechanism": "m", "attack": "inverter", "seeds": 2,
         "metrics": {"attack_s": _m(3.0)}},
        {"task": "t", "mechanism": "m", "attack": "worst case", "seeds": 2, "metrics": {}},
    ]
}  # fmt: skip


def test_each_kind_is_timed_from_its_rows_stage_timings() -> None:
    assert board_job_seconds(DOC) == {
        ("t", "m", "utility"): pytest.approx(11.0),
        ("t", "m", "inverter"): 3.0,
    }


def test_a_missing_or_broken_board_gives_no_estimate(tmp_path: Path) -> None:
    assert committed_job_seconds(tmp_path) == {}
    (tmp_path / "leaderboard.json").write_text("{not json")
    assert committed_job_seconds(tmp_path) == {}
    (tmp_path / "leaderboard.json").write_text(json.dumps(DOC))
    assert committed_job_seconds(tmp_path)[("t", "m", "inverter")] == 3.0


def test_dry_run_without_a_store_estimates_from_the_committed_board(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    from typer.testing import CliRunner

    from bench.cli.app import app

    monkeypatch.chdir(ROOT)
    store = tmp_path / "none.sqlite"
    result = CliRunner().invoke(
        app, ["run", "--suite", "smoke", "--dry-run", "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    assert (
        "timed from the committed board" in result.output and "leaderboards/smoke" in result.output
    )
    assert "none yet" not in result.output and not store.exists()
