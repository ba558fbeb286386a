"""The limits a run holds to, checked without running a job: per-job time limits (their
default and their overrides, refused when not a positive finite number), a lease timeout
that must be finite, a run that never passes with selected jobs neither stored nor failed,
a failure made whatever a plug-in's exception does, and a dry run of a suite near the job
bound that answers from counts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bench.core.errors import ConfigError, IncompleteRunError, SuiteFileError
from bench.core.preflight import checked_timeout
from bench.run.dryrun import job_counts, selected_counts
from bench.run.executors import JobFailure
from bench.run.job import job_kind
from bench.run.kinds.reconstruction import JobOutcome
from bench.run.plan import expand
from bench.run.runner import lease_timeout_s, run_jobs
from bench.run.timeouts import DEFAULT_FLOOR_S, JobTimeouts, job_timeouts
from bench.store.results import ResultStore
from bench.suite.read import load_suite, parse_suite
from tests.bench.cli.test_run_preflight import RUN, _refused, _tiny, _write_suite
from tests.bench.run.test_job_failures import METRICS
from tests.conftest import TINY_SUITE, cli_here, stub_job
from tests.faulty_plugins import UnprintableError


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory with its own artifact cache setting."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCH_LEASE_TIMEOUT", raising=False)
    return tmp_path


# --------------------------------------------------------------------- time limits


@pytest.mark.parametrize("value", [0, -1, 0.0, float("inf"), float("nan"), True, "600", 1e12])
def test_a_job_time_limit_is_a_positive_finite_number_of_seconds(value) -> None:
    with pytest.raises(ConfigError, match="must be a positive number of seconds"):
        checked_timeout(value, "--job-timeout")


def test_the_default_limit_is_generous_and_the_overrides_win() -> None:
    """max(30 min, 10 x the kind's mean time); the store's mean over the board's; the
    suite's key over the default; --job-timeout over both."""
    fast, slow, unknown = stub_job(0), stub_job(0, mechanism="slow"), stub_job(0, mechanism="x")
    means = {job_kind(fast): 5.0, job_kind(slow): 600.0}
    default = job_timeouts(None, None, means, {job_kind(unknown): 1e9})
    assert default.limit(fast) == DEFAULT_FLOOR_S  # 10 x 5 s is under the floor
    assert default.limit(slow) == 6000.0
    assert default.limit(unknown) > DEFAULT_FLOOR_S  # the board's timing, capped at a month
    assert job_timeouts(None, 90, means, {}).limit(slow) == 90.0
    assert job_timeouts(30, 90, means, {}).limit(slow) == 30.0
    assert JobTimeouts().limit(fast) == DEFAULT_FLOOR_S


def test_the_suite_key_is_read_and_checked() -> None:
    assert parse_suite(_tiny(job_timeout=3600)).job_timeout == 3600.0
    assert parse_suite(_tiny()).job_timeout is None
    for bad in (0, -5, "soon", True):
        with pytest.raises(SuiteFileError, match="'job_timeout' must be a positive number"):
            parse_suite(_tiny(job_timeout=bad))


@pytest.mark.parametrize("value", ["0", "-3", "inf", "nan"])
def test_a_bad_job_timeout_option_leaves_no_store(here, monkeypatch, capsys, value) -> None:
    suite = _write_suite(here, _tiny())
    args = (*RUN, "--suite", str(suite), "--job-timeout", value)
    _refused(monkeypatch, capsys, here, *args, fragment="--job-timeout must be a positive")


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e300", "0"])
def test_an_infinite_or_huge_lease_timeout_is_refused(here, monkeypatch, capsys, value) -> None:
    monkeypatch.setenv("BENCH_LEASE_TIMEOUT", value)
    with pytest.raises(ConfigError, match="BENCH_LEASE_TIMEOUT must be a positive number"):
        lease_timeout_s()
    suite = _write_suite(here, _tiny())
    _refused(monkeypatch, capsys, here, *RUN, "--suite", str(suite), fragment="BENCH_LEASE_TIMEOUT")


# ------------------------------------------------------------------- what a run ends with


class _Quitter:
    """An executor that runs the first job of its feed and then stops, as one whose workers
    vanished without a word would."""

    def run(self, jobs, cache_root, progress, on_start=lambda job: None):
        for job in jobs:
            if job is not None:
                on_start(job)
                yield job, JobOutcome(METRICS, {"notion": "none"}, 0.1)
                return


def test_a_run_with_jobs_neither_stored_nor_failed_does_not_pass(tmp_path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    jobs = [stub_job(seed) for seed in range(3)]
    with pytest.raises(IncompleteRunError, match="2 of 3 selected jobs were neither stored"):
        run_jobs(jobs, store, tmp_path / "cache", executor=_Quitter(), progress=False)
    assert store.stored_hashes([j.hash for j in jobs]) == {jobs[0].hash}
    assert store.leases() == {}  # the jobs it never ran are free for the next run


def test_an_exception_whose_message_cannot_be_made_is_still_a_failure() -> None:
    failure = JobFailure.of(UnprintableError())
    assert failure.error == "UnprintableError"
    assert failure.line() == (
        "UnprintableError: (its message could not be shown: __str__ raised ValueError)"
    )
    assert failure.traceback


# ------------------------------------------------------------------------------ dry run


@pytest.mark.parametrize("attack", [None, "optimization"])
def test_counted_jobs_are_the_listed_jobs(attack) -> None:
    """The counts a large suite's dry run shows are the counts of the jobs it would list."""
    suite = load_suite(_tiny_source())
    listed = Counter(job_kind(j) for j in expand(suite, attack=attack))
    assert selected_counts(job_counts(suite), suite.name, None, None, attack) == listed
    assert selected_counts(job_counts(suite, seeds=3), suite.name, None, None, None) == Counter(
        {kind: n // 2 * 3 for kind, n in Counter(job_kind(j) for j in expand(suite)).items()}
    )
    with pytest.raises(ConfigError, match="has no mechanism 'nope'"):
        selected_counts(job_counts(suite), suite.name, None, "nope", None)


def _tiny_source():
    """The tiny suite as a source read from text."""
    import tomllib

    from bench.suite.read import SuiteSource

    return SuiteSource(Path("tiny.toml"), TINY_SUITE.encode(), tomllib.loads(TINY_SUITE))


def test_a_dry_run_near_the_job_bound_counts_instead_of_listing(here, monkeypatch, capsys) -> None:
    eps = [round(0.1 + i / 100, 2) for i in range(499)]
    raw = _tiny(name="big", seeds=1000, attack_samples=8)
    raw["task"] = [{"name": "gaussian", "n_train": 64, "n_aux": 32, "n_test": 32}]
    raw["mechanism"] = [{"name": "gauss-input", "grid": {"eps": eps}, "params": {"r": 0.5}}]
    raw["attack"] = [{"name": "optimization", "params": {"max_steps": 10}}]
    suite = _write_suite(here, raw)
    monkeypatch.setattr("bench.run.plan.Job", None)  # listing a job would fail loudly
    done = cli_here(monkeypatch, capsys, *RUN, "--suite", str(suite), "--dry-run", cwd=here)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("big: 998,000 jobs selected (counted from the suite's grids")
    assert "gaussian / gauss-input / optimization" in lines[1] and "499,000 jobs" in lines[1]
    assert not (here / "r.sqlite").exists()
