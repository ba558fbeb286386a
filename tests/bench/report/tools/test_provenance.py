"""Regression tracking: every leaderboard row carries its task version, data hash, code
version and suite version, and `bench compare` refuses rows measured on other task
versions or data (exit 2, one line) while comparing across code versions as before."""

from __future__ import annotations

import copy
import json
import os
import platform
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from bench.metrics.stats import scalar
from bench.report.board.provenance import IncomparableError, attach_provenance, check_comparable
from bench.report.tools.compare import compare
from bench.run.job import Job
from bench.run.publish import write_suite_leaderboard
from bench.store.results import ResultStore
from tests.conftest import cli_here


def _job(seed: int, attack: str | None = None, **versions: str) -> Job:
    fields = {"task_version": "1", "data_hash": "d1", "code_hash": "c1", **versions}
    return Job(
        task="fmnist",
        task_options={},
        task_config={"n_test": 10},
        mechanism="gauss-input",
        params={"eps": 1.0, "delta": 1e-5, "r": 0.1},
        attack=attack,
        attack_params={"epochs": 2} if attack else {},
        seed=seed,
        attack_samples=8,
        **fields,
    )


def _row(attack: str | None = None, accuracy: float = 0.8) -> dict:
    return {
        "task": "fmnist",
        "mechanism": "gauss-input",
        "params": {"delta": 1e-5, "eps": 1.0, "r": 0.1},
        "guarantee": {"notion": "ip"},
        "attack": attack,
        "attack_params": {"epochs": 2} if attack else {},
        "seeds": 2,
        "metrics": {"accuracy": {"value": accuracy, "ci": [accuracy - 0.01, accuracy + 0.01]}},
    }


def _board(**versions: str) -> dict:
    jobs = [_job(s, a, **versions) for s in (0, 1) for a in (None, "inverter")]
    rows = attach_provenance([_row(), _row("inverter")], jobs, "1")
    for row in rows:
        row["metrics"]["accuracy"]["n"] = 100
    return {
        "suite": "s",
        "suite_version": "1",
        "generated_at": "t",
        "code_version": "0.1.0+c",
        "rows": rows,
    }


def test_rows_carry_task_data_code_and_suite_versions() -> None:
    board = _board(task_version="2", data_hash="abc", code_hash="f00")
    for row in board["rows"]:
        assert row["provenance"] == {
            "task_version": "2",
            "data_hash": "abc",
            "code_version": "0.1.0+f00",
            "suite_version": "1",
            "torch_threads": "1",
            "device": "cpu",
        }


def test_summary_rows_get_their_configuration_s_provenance() -> None:
    jobs = [_job(0), _job(0, "inverter", code_hash="c2")]
    summary = {**_row("worst case"), "attack_params": {}}
    unrelated = {**_row(), "mechanism": "identity"}
    rows = attach_provenance([summary, unrelated], jobs, "1")
    assert rows[0]["provenance"]["data_hash"] == "d1"
    assert rows[0]["provenance"]["code_version"].startswith("0.1.0+")
    assert rows[0]["provenance"]["code_version"] not in ("0.1.0+c1", "0.1.0+c2")
    assert "provenance" not in rows[1]


@pytest.mark.parametrize(
    ("changed", "message"),
    [
        ({"task_version": "2"}, "task_version 1 (baseline) vs 2 (candidate)"),
        ({"data_hash": "d2"}, "data_hash d1 (baseline) vs d2 (candidate)"),
    ],
)
def test_compare_refuses_rows_of_another_task_version_or_data(changed, message) -> None:
    with pytest.raises(IncomparableError) as info:
        compare(_board(), _board(**changed))
    text = str(info.value)
    assert message in text and "(and 1 more rows)" in text and "\n" not in text


def test_compare_accepts_another_code_version_and_rows_without_provenance() -> None:
    assert compare(_board(), _board(code_hash="c2")).ok  # that is what regressions are about
    bare = _board()
    for row in bare["rows"]:
        del row["provenance"]
    check_comparable(bare, _board(data_hash="d2"))
    # and real regressions are still found across code versions
    worse = copy.deepcopy(_board(code_hash="c2"))
    worse["rows"][0]["metrics"]["accuracy"]["value"] = 0.5
    assert not compare(_board(), worse).ok


def test_cli_compare_refuses_other_data_with_one_line_and_exit_2(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    base, new_data = tmp_path / "base.json", tmp_path / "new_data.json"
    base.write_text(json.dumps(_board()))
    new_data.write_text(json.dumps(_board(data_hash="d2")))
    refused = cli_here(monkeypatch, capsys, "compare", str(base), str(new_data))
    assert refused.returncode == 2
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "data_hash d1 (baseline) vs d2 (candidate)" in lines[0]


def test_written_leaderboard_rows_carry_provenance(tmp_path: Path) -> None:
    utility = [_job(seed) for seed in (0, 1)]
    attacks = [_job(seed, "inverter", code_hash="c2") for seed in (0, 1)]
    store = ResultStore(tmp_path / "s.sqlite")
    try:
        for job in utility:
            store.write(job, {"accuracy": scalar(0.8), "fit_s": scalar(1.0)}, {"notion": "ip"}, 1.0)
        for job in attacks:
            store.write(job, {"mse": scalar(0.05)}, {"notion": "ip"}, 1.0)
        suite = SimpleNamespace(name="prov", version="7", tasks=[], kind="paper")
        paths = write_suite_leaderboard(suite, utility + attacks, store, tmp_path / "board")
    finally:
        store.close()
    rows = json.loads(paths[0].read_text())["rows"]
    assert len(rows) >= 2 and all("provenance" in row for row in rows)
    by_attack = {row["attack"]: row["provenance"] for row in rows}
    expected = {
        "task_version": "1",
        "data_hash": "d1",
        "suite_version": "7",
        "torch_threads": "1",
        "device": "cpu",
    }
    assert by_attack[None] == {**expected, "code_version": "0.1.0+c1"}
    assert by_attack["inverter"] == {**expected, "code_version": "0.1.0+c2"}
    # Every row says what it ran on (never the host name), as MTEB and lm-eval record.
    for row in rows:
        env = row["environment"]
        assert env["python"] == platform.python_version() and env["torch"] == torch.__version__
        assert env["cpus"] == str(os.cpu_count()) and "host" not in env
    # A summary row over attacks (no job of its own) gets its configuration's jobs' versions.
    for attack, prov in by_attack.items():
        if attack not in (None, "inverter"):
            assert prov["task_version"] == "1" and prov["data_hash"] == "d1"
            assert prov["code_version"] not in ("0.1.0+c1", "0.1.0+c2")
