"""The Ray executor: a killed Ray worker costs a retry, never a lost or duplicated row, and
the run gives the local executor's numbers."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from bench.run.plan import expand
from bench.suite.read import load_suite
from tests.conftest import start_cli, tiny_run_args

pytest.importorskip("ray")

TIMINGS = ("fit_s", "release_ms", "attack_s")


def _rows(board: Path) -> list[dict]:
    return json.loads(board.read_text())["rows"]


def _assert_same_results(a: list[dict], b: list[dict]) -> None:
    assert [(r["mechanism"], r["attack"], r["params"]) for r in a] == [
        (r["mechanism"], r["attack"], r["params"]) for r in b
    ]
    for row_a, row_b in zip(a, b, strict=True):
        assert row_a["metrics"].keys() == row_b["metrics"].keys()
        for name, entry in row_a["metrics"].items():
            if name not in TIMINGS:  # same job, same numbers: every job pins its own threads
                assert row_b["metrics"][name] == entry, (row_a["mechanism"], row_a["attack"], name)


def _ray_job_workers() -> list[int]:
    """PIDs of Ray worker processes currently executing a bench job."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"ray::_run_in_worker" in cmdline:
                pids.append(int(entry.name))
    return pids


def test_a_killed_ray_worker_is_retried_and_the_run_gives_the_local_leaderboard(
    tmp_path, tiny_run
) -> None:
    """The tiny suite under Ray, one worker killed mid-job: the job is retried, every row
    is stored once, and every non-timing number equals the local executor's run of it."""
    local_dir, _ = tiny_run
    suite = local_dir / "tiny.toml"
    proc = start_cli(*tiny_run_args(suite, "--executor", "ray"), cwd=tmp_path)
    killed = None
    deadline = time.monotonic() + 300
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        workers = _ray_job_workers()
        if workers:
            time.sleep(1.0)  # let it get into the job
            killed = workers[0]
            os.kill(killed, signal.SIGKILL)
        time.sleep(0.2)
    _out, err = proc.communicate(timeout=1000)  # within the folder's 1,200 s per test
    assert killed is not None, "no Ray worker was seen running a job"
    assert proc.returncode == 0, err
    jobs = expand(load_suite(str(suite)))
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        stored = sorted(r[0] for r in conn.execute("SELECT job_hash FROM jobs"))
        dupes = conn.execute(
            "SELECT COUNT(*) FROM (SELECT job_hash, metric FROM results "
            "GROUP BY job_hash, metric HAVING COUNT(*) > 1)"
        ).fetchone()[0]
    assert stored == sorted(j.hash for j in jobs)
    assert dupes == 0
    _assert_same_results(
        _rows(local_dir / "lb" / "leaderboard.json"), _rows(tmp_path / "lb" / "leaderboard.json")
    )
