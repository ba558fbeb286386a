"""The warm-rerun plan (bench.run.warm): its key moves with every input the job list is
computed from, a rerun with nothing to do prints what the full run prints without importing
torch, and any change to the store or the page sends the run the full way."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bench.run import warm as plan_cache
from bench.run.plan import expand
from bench.run.warm import load_plan, plan_key
from bench.suite.read import load_suite
from tests.conftest import TINY_SUITE, cli_env, tiny_run_args

SUITE_WITH_PATH = TINY_SUITE.replace('name = "fmnist"', 'name = "fmnist"\ndata_root = "local"', 1)


@pytest.fixture
def inputs(tmp_path, monkeypatch) -> Path:
    """A suite naming a local data directory, and a data directory with one file."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCH_DATA", str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.bin").write_bytes(b"1234")
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "b.bin").write_bytes(b"5678")
    (tmp_path / "s.toml").write_text(SUITE_WITH_PATH)
    return tmp_path


def _key(**kwargs) -> str | None:
    return plan_key("s.toml", kwargs.get("seeds"), kwargs.get("device"))


def test_the_key_is_stable_and_moves_with_every_input(inputs, monkeypatch) -> None:
    first = _key()
    assert first is not None and first == _key()
    changes = {
        "seeds": lambda: None,
        "device": lambda: None,
        "data file rewritten": lambda: (inputs / "data" / "a.bin").write_bytes(b"12345"),
        "data file added": lambda: (inputs / "data" / "c.bin").write_bytes(b""),
        "option path's file touched": lambda: os.utime(inputs / "local" / "b.bin", ns=(1, 1)),
        "suite file edited": lambda: (inputs / "s.toml").write_text(SUITE_WITH_PATH + "\n"),
        "BENCH_ variable": lambda: monkeypatch.setenv("BENCH_CPU_ISA", "native"),
    }
    monkeypatch.setenv("BENCH_CACHE", str(inputs / "c"))  # where plans live: not a key input
    assert _key() == first
    seen = {first}
    arguments = {"seeds": {"seeds": 3}, "device": {"device": "cpu"}}
    for what, change in changes.items():
        change()
        key = _key(**arguments.get(what, {}))
        assert key not in seen, what
        seen.add(key)


def test_a_source_edit_moves_the_key(inputs, monkeypatch) -> None:
    source = inputs / "module.py"
    source.write_text("X = 1\n")
    real = plan_cache._project_files()
    monkeypatch.setattr(plan_cache, "_project_files", lambda: [*real, ("m/module.py", source)])
    before = _key()
    source.write_text("X = 2\n")
    assert _key() != before


def test_no_key_for_a_data_tree_too_large_to_list_or_an_unknown_suite(inputs, monkeypatch) -> None:
    monkeypatch.setattr(plan_cache, "MAX_DATA_FILES", 1)
    assert _key() is None
    assert plan_key("no-such-suite", None, None) is None


def _bench_in_fresh_python(cwd: Path, *args: str) -> tuple[str, bool]:
    """`bench ARGS` in a fresh interpreter: its stdout, and whether it imported torch."""
    code = (
        "import sys\nfrom bench.cli.app import main\n"
        f"sys.argv = ['bench', *{list(args)!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('TORCH', 'torch' in sys.modules)\n"
    )
    env = cli_env(cwd)
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    out, _, flag = proc.stdout.rpartition("TORCH ")
    return out, flag.strip() == "True"


@pytest.mark.slow
def test_a_warm_rerun_needs_no_torch_and_a_changed_store_goes_the_full_way(
    tmp_path, tiny_run, monkeypatch
) -> None:
    first_dir, first_stdout = tiny_run
    shutil.copytree(first_dir, tmp_path, dirs_exist_ok=True)
    suite = Path("tiny.toml")  # as the session's run named it, so the plan's key matches
    plans = list((tmp_path / "cache" / "plans").glob("*.json"))  # BENCH_CACHE=cache (run_cli)
    assert len(plans) == 1
    # The key the run's own process computed (its file's name): this test process may differ
    # in what the key reads (the import path's distributions, after other tests added to it),
    # and the warm reruns below are fresh processes like the run's.
    key = plans[0].stem.split("-", 1)[0]
    # The plan lists exactly the jobs the full expansion lists.
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))  # where the runs keep it
    plan = load_plan(tmp_path / "r.sqlite", str(key))
    assert plan is not None
    jobs = expand(load_suite(str(tmp_path / suite)))
    assert plan.jobs == [(j.hash, j.task, j.mechanism, j.attack) for j in jobs]
    assert key is not None

    board = {p: p.read_bytes() for p in (tmp_path / "lb").rglob("*") if p.is_file()}
    warm, imported_torch = _bench_in_fresh_python(tmp_path, *tiny_run_args(suite))
    assert not imported_torch
    assert warm.startswith("tiny: 0 jobs run, 12 already stored, 12 selected\n")
    # The first run's summary, then this directory's page.
    assert warm.splitlines()[1:-1] == first_stdout.splitlines()[1:-1]
    assert warm.splitlines()[-1] == f"leaderboard: {(tmp_path / 'lb' / 'index.html').resolve()}"
    assert board == {p: p.read_bytes() for p in (tmp_path / "lb").rglob("*") if p.is_file()}

    # A job gone from the store: the full run runs it again.
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        conn.execute("DELETE FROM results WHERE job_hash = ?", (jobs[0].hash,))
        conn.execute("DELETE FROM examples WHERE job_hash = ?", (jobs[0].hash,))
        conn.execute("DELETE FROM jobs WHERE job_hash = ?", (jobs[0].hash,))
    rerun, imported_torch = _bench_in_fresh_python(tmp_path, *tiny_run_args(suite))
    assert imported_torch
    assert rerun.startswith("tiny: 1 jobs run, 11 already stored, 12 selected\n")
    # The full run kept a new plan (the store's times changed), and it answers again.
    again, imported_torch = _bench_in_fresh_python(tmp_path, *tiny_run_args(suite))
    assert not imported_torch and again.startswith("tiny: 0 jobs run, 12 already stored")
    # A page that does not carry the plan's stamps: the full run decides.
    page = tmp_path / "lb" / "index.html"
    page.write_text(page.read_text().replace('name="bench-inputs"', 'name="other"'))
    _, imported_torch = _bench_in_fresh_python(tmp_path, *tiny_run_args(suite))
    assert imported_torch
    assert json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["suite"] == "tiny"
