"""Dry-run estimates from a committed board when the store has never run the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.report.tools.estimate import (
    UNKNOWN_PLUGIN,
    WORST_CASE,
    PlannedJob,
    board_job_seconds,
    board_total_seconds,
    committed_job_seconds,
    job_seeds,
    plan_lines,
    row_job_seconds,
    row_times,
    setting_key,
)
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
    assert "timed from the committed board of smoke" in result.output
    assert f"boards: {ROOT / 'leaderboards'} (the checkout)" in result.output
    assert "none yet" not in result.output and not store.exists()
    assert max(len(line) for line in result.output.splitlines()) <= 100


def test_a_fit_every_setting_shares_counts_once() -> None:
    """Leave-one-out networks (600 s) built once per seed and used by two settings and an
    attack: their rows record 600 s each, a run spends it once."""
    doc = {
        "rows": [
            {"task": "t", "mechanism": "a", "attack": None, "seeds": 3,
             "metrics": {"fit_s": _m(600.0)}},
            {"task": "t", "mechanism": "b", "attack": None, "seeds": 3,
             "metrics": {"fit_s": _m(600.2)}},
            {"task": "t", "mechanism": "b", "attack": "mia-loo", "seeds": 3,
             "metrics": {"attack_s": _m(601.0)}},
            {"task": "t", "mechanism": "c", "attack": None, "seeds": 3,
             "metrics": {"fit_s": _m(900.0)}},  # another artifact
            {"task": "u", "mechanism": "a", "attack": None, "seeds": 3,
             "metrics": {"fit_s": _m(600.0)}},  # another task: its own networks
        ]
    }  # fmt: skip
    seconds = [round(s, 3) for _, s in row_job_seconds(doc)]
    assert seconds == [600.0, 0.2, 1.0, 900.0, 600.0]
    times = row_times(doc)  # the shared part, and which rows share it
    assert [(round(t.own, 3), t.shared, t.first) for t in times[:3]] == [
        (0.0, 600.0, True), (0.2, 600.0, False), (1.0, 600.0, False)
    ]  # fmt: skip
    assert times[0].group == times[1].group == times[2].group != times[4].group
    assert board_total_seconds(doc) == pytest.approx(3 * (600 + 0.2 + 1 + 900 + 600))


def test_every_committed_board_times_a_whole_run() -> None:
    for path in sorted((ROOT / "leaderboards").glob("*/leaderboard.json")):
        doc = json.loads(path.read_text())
        total = board_total_seconds(doc)
        assert total is not None and total > 0, path
        assert total <= sum(s * int(r.get("seeds") or 1) for r, s in _raw(doc)) + 1e-6, path


def _raw(doc: dict):
    from bench.report.tools.estimate import _recorded_seconds

    for row in doc["rows"]:
        if row.get("attack") != WORST_CASE and (seconds := _recorded_seconds(row)) is not None:
            yield row, seconds


def test_the_worst_case_label_is_the_boards() -> None:
    from bench.report.board.labels import WORST_CASE as LABEL

    assert WORST_CASE == LABEL


def test_jobs_are_timed_from_their_suites_board_else_any_board(tmp_path: Path) -> None:
    """A job of a kind its suite's board times: that board's mean; else a row of another
    board with the same setting on the same data, else that kind's mean over the boards; a
    plug-in's job: no estimate (the dry run says "unknown until the first job")."""
    row = {"task": "t", "mechanism": "m", "params": {"eps": 1.0}, "attack": None,
           "attack_params": {}, "seeds": 1, "provenance": {"data_hash": "d"},
           "metrics": {"fit_s": _m(7.0)}}  # fmt: skip
    other = {**row, "params": {"eps": 2.0}, "metrics": {"fit_s": _m(9.0)}}
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "leaderboard.json").write_text(json.dumps({"rows": [row, other]}))
    same = PlannedJob("h1", "t", "m", None, setting_key("t", "m", {"eps": 1.0}, None, {}, "d"))
    kind = PlannedJob("h2", "t", "m", None, setting_key("t", "m", {"eps": 3.0}, None, {}, "d"))
    plugin = PlannedJob("h3", "t", "my-plugin", None, "x", plugin=True)
    none = PlannedJob("h4", "t", "zz", None, "y")
    got = {h: seed.total for h, seed in job_seeds([same, kind, plugin, none], tmp_path).items()}
    assert got == {"h1": 7.0, "h2": 8.0}
    lines = plan_lines("s", [kind, plugin], [kind, plugin], {}, tmp_path / "s", tmp_path)
    assert any(UNKNOWN_PLUGIN in line for line in lines)
    assert any("same kind" in line for line in lines)
    assert lines[-2] == "  timed from other suites' committed boards"
