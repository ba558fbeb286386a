"""A job that raises fails alone: the other jobs run and are stored once, the failure (hash,
job, error, one-line message; the traceback in the store) is listed at the end of the run,
which exits 1 without a traceback on the terminal, and the same command then runs only the
failed jobs. Ctrl-C still stops the whole run. The faults come from the test-only plug-ins
of tests/faulty_plugins.py, switched on through $BENCH_TEST_FAULTS."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bench.core.errors import JobsFailedError
from bench.metrics import MetricResult
from bench.run.executors import InlineExecutor, JobFailure, _unwrap, attempt
from bench.run.job import Job
from bench.run.kinds.reconstruction import JobOutcome
from bench.run.plan import expand
from bench.run.runner import run_jobs
from bench.store.results import ResultStore
from bench.suite.read import load_suite
from tests.conftest import BENCH, ROOT, cli_here, run_cli, stub_job, tiny_run_args
from tests.faulty_plugins import FAULTS_ENV, MARK_ENV

# Gaussian vectors, tiny sizes: the 12 jobs (2 mechanisms x 3 seeds x utility + 1 attack)
# take a few seconds in all.
SUITE = """
name = "faults"
version = "1"
seeds = 3
attack_samples = 8

[[task]]
name = "gaussian"
n_train = 64
n_aux = 32
n_test = 32
train_epochs = 1

[[mechanism]]
name = "tests.faulty_plugins:FaultyIdentity"

[[mechanism]]
name = "identity"

[[attack]]
name = "tests.faulty_plugins:ZeroAttack"
"""
FAULTY = "tests.faulty_plugins:FaultyIdentity"
INTERRUPTED = "bench: interrupted; finished jobs are stored, run the same command to resume"


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, list[Job]]:
    """The suite file in tmp_path and its jobs; artifacts cached under tmp_path."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    path = tmp_path / "faults.toml"
    path.write_text(SUITE)
    return path, expand(load_suite(str(path)))


def _query(store: Path, sql: str) -> list[tuple[Any, ...]]:
    with closing(sqlite3.connect(store)) as conn:
        return conn.execute(sql).fetchall()


def _listed(stderr: str) -> dict[str, str]:
    """The failed jobs the end-of-run summary lists: job hash -> the rest of its line."""
    lines = [line.strip() for line in stderr.splitlines() if line.startswith("  ")]
    return dict(line.split("  ", 1) for line in lines)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.slow
def test_a_failing_job_fails_alone_and_the_rerun_runs_only_it(
    suite, tmp_path, monkeypatch, capsys, workers
) -> None:
    path, jobs = suite
    failing = {j.hash for j in jobs if j.mechanism == FAULTY and j.seed == 1}
    assert len(jobs) == 12 and len(failing) == 2  # its utility job and its attack job
    monkeypatch.setenv(FAULTS_ENV, "fit@1")
    proc = run_cli(*tiny_run_args(path, "--jobs", workers), cwd=tmp_path)

    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "faults: 10 jobs run, 0 already stored, 12 selected, 2 failed" in proc.stdout
    assert "bench: 2 of 12 jobs failed (not stored: the same command runs them again):" in (
        proc.stderr
    )
    listed = _listed(proc.stderr)
    assert listed.keys() == failing
    by_hash = {j.hash: j for j in jobs}
    for job_hash, line in listed.items():
        attack = "tests.faulty_plugins:ZeroAttack(queries=1)" if by_hash[job_hash].attack else ""
        assert line.startswith(f"gaussian / {FAULTY}() / {attack or 'utility'} / seed 1: ")
        assert line.endswith(": RuntimeError: boom")
    assert proc.stderr.strip().splitlines()[-1] == (
        "bench: error: 2 jobs failed, leaderboard not written; "
        "tracebacks: bench failures --store r.sqlite"
    )
    assert not (tmp_path / "lb").exists()

    # The good jobs are stored once each, the failed ones not at all, and every lease is
    # released: the failed ones as "failed", with their failure recorded beside them.
    store = tmp_path / "r.sqlite"
    stored = [h for (h,) in _query(store, "SELECT job_hash FROM jobs")]
    assert sorted(stored) == sorted({j.hash for j in jobs} - failing)
    assert _query(store, "SELECT COUNT(*) FROM leases") == [(0,)]
    releases = _query(store, "SELECT job_hash, outcome FROM lease_log WHERE event = 'release'")
    assert sorted(h for h, outcome in releases if outcome == "failed") == sorted(failing)
    assert {outcome for _, outcome in releases} == {"stored", "failed"}
    recorded = ResultStore(store).failures()
    assert {r["job_hash"] for r in recorded} == failing
    for row in recorded:
        assert (row["error"], row["message"], row["seed"]) == ("RuntimeError", "boom", 1)
        assert row["traceback"].startswith("Traceback (most recent call last):")
        assert 'raise RuntimeError("boom")' in row["traceback"]

    # `bench failures` shows each with its traceback.
    failures = cli_here(monkeypatch, capsys, "failures", "--store", str(store))
    code, out = failures.returncode, failures.stdout
    assert code == 0
    assert out.count("RuntimeError: boom") == 4  # each job's line and its traceback's end
    assert all(job_hash in out for job_hash in failing)
    assert out.strip().endswith(f"2 failed jobs not stored in {store}")

    # The fault fixed, the same command runs the two failed jobs only, and completes (here
    # in this process, whichever executor failed them: the store decides what reruns).
    monkeypatch.delenv(FAULTS_ENV)
    monkeypatch.chdir(tmp_path)
    rerun = cli_here(monkeypatch, capsys, *tiny_run_args(path))
    code, out, err = rerun.returncode, rerun.stdout, rerun.stderr
    assert code == 0, err
    assert "faults: 2 jobs run, 10 already stored, 12 selected\n" in out
    assert (tmp_path / "lb" / "leaderboard.json").exists()
    assert _query(store, "SELECT COUNT(*), COUNT(DISTINCT job_hash) FROM jobs") == [(12, 12)]
    assert ResultStore(store).failures() == []
    assert len(ResultStore(store).failures(include_stored=True)) == 2  # the history stays


def test_bench_errors_inside_a_job_are_that_jobs_failure(suite, monkeypatch, capsys) -> None:
    """A mechanism's NaN release (MechanismOutputError, a BenchError) fails its two jobs
    with its one-line message, an attack's bug its two; the other eight are stored."""
    path, jobs = suite
    monkeypatch.setenv(FAULTS_ENV, "nan@2,reconstruct@0")
    monkeypatch.chdir(path.parent)
    rerun = cli_here(monkeypatch, capsys, *tiny_run_args(path))
    code, out, err = rerun.returncode, rerun.stdout, rerun.stderr
    assert code == 1, err
    assert "Traceback" not in err
    assert "faults: 8 jobs run, 0 already stored, 12 selected, 4 failed" in out
    listed = _listed(err)
    nan = {j.hash for j in jobs if j.mechanism == FAULTY and j.seed == 2}
    attack = {j.hash for j in jobs if j.attack and j.seed == 0}
    assert listed.keys() == nan | attack
    for job_hash in nan:
        assert listed[job_hash].endswith(
            f": MechanismOutputError: mechanism {FAULTY}: release values contain NaN or inf"
        )
    for job_hash in attack:
        assert listed[job_hash].endswith(": RuntimeError: boom")
    assert len(ResultStore(path.parent / "r.sqlite").stored_hashes([j.hash for j in jobs])) == 8


def test_run_suite_stores_the_good_jobs_and_raises_for_the_failed(suite, monkeypatch) -> None:
    from bench.api import run_suite

    path, jobs = suite
    monkeypatch.setenv(FAULTS_ENV, "fit@0")
    store = path.parent / "api.sqlite"
    with pytest.raises(
        JobsFailedError,
        match=r"^2 jobs failed, leaderboard not written; tracebacks: bench failures",
    ):
        run_suite(str(path), store_path=store, out_dir=path.parent / "lb")
    assert JobsFailedError.exit_code == 1
    assert not (path.parent / "lb").exists()
    assert len(ResultStore(store).stored_hashes([j.hash for j in jobs])) == 10


def _start(path: Path, cwd: Path, workers: str) -> subprocess.Popen[str]:
    """`bench run` in a session (process group) of its own, with the default Ctrl-C
    handling, so the test can press Ctrl-C on it as a terminal would."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [*BENCH, *tiny_run_args(path, "--jobs", workers)],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _running_with(variable: str, value: str) -> list[int]:
    """Pids of the processes whose environment has `variable` = `value`: the run's driver
    and its workers (each leads a process group of its own), found wherever they are."""
    wanted = f"{variable}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize(
    ("workers", "target"),
    [("1", "driver"), ("2", "group"), ("2", "driver")],
    ids=["one-worker", "pool-terminal-ctrl-c", "pool-sigint-to-driver"],
)
@pytest.mark.slow
def test_ctrl_c_stops_the_run_at_once_and_fails_no_job(
    suite, tmp_path, monkeypatch, workers, target
) -> None:
    """Ctrl-C while the first job runs (it would sleep 120 s; the second worker may still be
    starting): exit 130 within seconds with the one-line message, nothing recorded as
    failed, every lease released, no worker left. "group" is a terminal's Ctrl-C (every
    process of the group gets SIGINT), "driver" a SIGINT to the driver alone (kill -INT)."""
    path, jobs = suite
    mark = tmp_path / "mark"
    monkeypatch.setenv(FAULTS_ENV, "sleep@0")
    monkeypatch.setenv(MARK_ENV, str(mark))
    proc = _start(path, tmp_path, workers)
    try:
        deadline = time.monotonic() + 60
        while not mark.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert mark.exists(), proc.communicate(timeout=10)
        pressed = time.monotonic()
        if target == "group":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - pressed
        deadline = time.monotonic() + 10

        def left() -> bool:
            return _group_alive(proc.pid) or bool(_running_with(MARK_ENV, str(mark)))

        while left() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not left(), "a worker outlived the run"
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert took < 15
    assert err.strip() == INTERRUPTED
    store = tmp_path / "r.sqlite"
    assert _query(store, "SELECT COUNT(*) FROM failures") == [(0,)]
    assert _query(store, "SELECT COUNT(*) FROM leases") == [(0,)]
    sleeper = next(j.hash for j in jobs if j.mechanism == FAULTY and j.seed == 0 and not j.attack)
    assert sleeper == jobs[0].hash
    outcomes = _query(
        store, f"SELECT outcome FROM lease_log WHERE event = 'release' AND job_hash = '{sleeper}'"
    )
    assert outcomes == [("stopped",)]


# --- the executors and the runner, without running real jobs ---------------------------

METRICS = {"accuracy": MetricResult(0.5, (0.4, 0.6), 4)}


def test_attempt_returns_a_jobs_error_and_lets_ctrl_c_through(monkeypatch) -> None:
    def run_job(job: Job, cache_root: Path, progress: bool) -> JobOutcome:
        if job.seed == 1:
            raise ValueError("bad\nvalue")
        if job.seed == 2:
            raise KeyboardInterrupt
        if job.seed == 3:  # an error raised while Ctrl-C unwinds is still Ctrl-C
            try:
                raise KeyboardInterrupt
            finally:
                raise RuntimeError("cleanup failed")
        return JobOutcome(METRICS, {"notion": "none"}, 0.1)

    monkeypatch.setattr("bench.run.executors.run_job_of_kind", run_job)
    results = list(InlineExecutor().run([stub_job(0), stub_job(1)], Path("."), False))
    assert isinstance(results[0][1], JobOutcome)
    failure = results[1][1]
    assert isinstance(failure, JobFailure)
    assert failure.line() == "ValueError: bad value"  # one line, whatever the message
    assert "raise ValueError" in failure.traceback
    for seed in (2, 3):
        with pytest.raises(KeyboardInterrupt):
            attempt(stub_job(seed), Path("."))


def test_a_ray_task_error_is_its_jobs_failure() -> None:
    class TaskError(Exception):
        def __init__(self, cause: BaseException) -> None:
            super().__init__("remote traceback ...")
            self.cause = cause

    class FakeRay:
        class exceptions:  # mirrors ray.exceptions (without WorkerCrashedError)
            RayTaskError = TaskError

        def get(self, ref: object) -> JobOutcome:
            raise TaskError(RuntimeError("boom"))

    failure = _unwrap(FakeRay(), object())
    assert isinstance(failure, JobFailure)
    assert failure.line() == "RuntimeError: boom"
    assert failure.traceback == "remote traceback ..."


class _Executor:
    """Yields a fixed result per job, as an executor would."""

    def __init__(self, results: dict[int, JobOutcome | JobFailure]) -> None:
        self.results = results

    def run(self, jobs, cache_root, progress, on_start=lambda job: None):
        for job in jobs:
            if job is not None:
                on_start(job)
                yield job, self.results[job.seed]


def test_an_outcome_the_store_refuses_is_its_jobs_failure(tmp_path) -> None:
    """A NaN metric (SQLite stores it as NULL, which the column refuses) or one that is not
    a number fails that job alone; nothing of it is stored."""
    nan = {"accuracy": MetricResult(float("nan"), (0.4, 0.6), 4)}
    text = {"accuracy": MetricResult("high", (0.4, 0.6), 4)}  # type: ignore[arg-type]
    executor = _Executor(
        {
            0: JobOutcome(METRICS, {"notion": "none"}, 0.1),
            1: JobOutcome(nan, {"notion": "none"}, 0.1),
            2: JobOutcome(text, {"notion": "none"}, 0.1),
            3: JobFailure("RuntimeError", "boom", "Traceback ..."),
        }
    )
    store = ResultStore(tmp_path / "s.sqlite")
    jobs = [stub_job(seed) for seed in range(4)]
    seen: list[str] = []
    summary = run_jobs(
        jobs,
        store,
        tmp_path / "cache",
        executor=executor,
        progress=False,
        on_failure=lambda failed: seen.append(failed.job.hash),
    )
    assert (summary.executed, [f.job.seed for f in summary.failed]) == (1, [1, 2, 3])
    assert seen == [jobs[1].hash, jobs[2].hash, jobs[3].hash]
    assert summary.failed[0].failure.message.startswith("result not storable: NOT NULL")
    assert summary.failed[1].failure.line() == (
        "ValueError: result not storable: could not convert string to float: 'high'"
    )
    assert store.stored_hashes([j.hash for j in jobs]) == {jobs[0].hash}
    assert store.leases() == {}
    with closing(sqlite3.connect(tmp_path / "s.sqlite")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone() == (1,)
    assert [r["job_hash"] for r in store.failures()] == [j.hash for j in jobs[1:]]
