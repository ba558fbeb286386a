"""A worker process that dies outright (os.abort here, as a segfault in native code or the
OOM killer would end it) fails its own job, not the run: the death is recorded in the
failures table, the run completes the rest and exits 1. And --max-failures N stops a run at
its N-th failed job."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.run.plan import expand
from bench.store.results import ResultStore
from bench.suite.read import load_suite
from tests.bench.run.test_job_failures import FAULTY, SUITE, _listed, _query
from tests.conftest import cli_here, run_cli, tiny_run_args
from tests.faulty_plugins import FAULTS_ENV


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    path = tmp_path / "faults.toml"
    path.write_text(SUITE)
    return path


@pytest.mark.slow
def test_a_job_whose_worker_aborts_fails_alone(suite: Path, tmp_path, monkeypatch) -> None:
    jobs = expand(load_suite(str(suite)))
    dying = {j.hash for j in jobs if j.mechanism == FAULTY and j.seed == 1}
    assert len(jobs) == 12 and len(dying) == 2  # its utility job and its attack job
    monkeypatch.setenv(FAULTS_ENV, "abort@1")
    proc = run_cli(*tiny_run_args(suite, "--jobs", "2"), cwd=tmp_path)

    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "faults: 10 jobs run, 0 already stored, 12 selected, 2 failed" in proc.stdout
    listed = _listed(proc.stderr)
    assert listed.keys() == dying
    for line in listed.values():
        # Each job runs on a supervised worker of its own: the death is this job's, named
        # with the signal that ended the worker.
        assert "WorkerDied: the worker process running this job was killed by SIGABRT" in line
    store = tmp_path / "r.sqlite"
    stored = {h for (h,) in _query(store, "SELECT job_hash FROM jobs")}
    assert stored == {j.hash for j in jobs} - dying
    assert _query(store, "SELECT COUNT(*) FROM leases") == [(0,)]
    recorded = ResultStore(store).failures()
    assert {r["job_hash"] for r in recorded} == dying
    assert {(r["error"], r["seed"]) for r in recorded} == {("WorkerDied", 1)}


def test_max_failures_stops_the_run_at_the_nth_failed_job(
    suite: Path, tmp_path, monkeypatch, capsys
) -> None:
    """Seeds 1 and 2 of the faulty mechanism fail (4 jobs); with --max-failures 1 the run
    stops at the first, stores what finished before it and exits 1 saying why."""
    monkeypatch.setenv(FAULTS_ENV, "fit@1,fit@2")
    done = cli_here(monkeypatch, capsys, *tiny_run_args(suite, "--max-failures", "1"), cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "stopped at --max-failures 1" in done.stderr
    assert ", 1 failed" in done.stdout
    store = tmp_path / "r.sqlite"
    stored = _query(store, "SELECT COUNT(*) FROM jobs")[0][0]
    assert stored < 12 - 1  # the jobs after the first failure did not run
    assert _query(store, "SELECT COUNT(*) FROM leases") == [(0,)]

    # Without the bound the same command runs on past every failure.
    done = cli_here(monkeypatch, capsys, *tiny_run_args(suite), cwd=tmp_path)
    assert done.returncode == 1
    assert f"{12 - 4 - stored} jobs run, {stored} already stored, 12 selected, 4 failed" in (
        done.stdout
    )


def test_max_failures_must_be_positive(suite: Path, tmp_path, monkeypatch, capsys) -> None:
    done = cli_here(monkeypatch, capsys, *tiny_run_args(suite, "--max-failures", "0"), cwd=tmp_path)
    assert done.returncode == 2 and "'--max-failures'" in done.stderr
    assert not (tmp_path / "r.sqlite").exists()
