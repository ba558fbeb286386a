"""Many runners, one store: job leases (claim, heartbeat, expiry, takeover, release) on a
temporary store, the runner waiting for and taking over other runners' jobs, and three
`bench run` processes on one store, one killed with SIGKILL, that still store every job
exactly once without two live runners ever holding the same job."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from bench.metrics import MetricResult
from bench.run.executors import LocalExecutor, RayExecutor, _Pull
from bench.run.job import Job
from bench.run.kinds.reconstruction import JobOutcome
from bench.run.plan import expand
from bench.run.runner import lease_timeout_s, run_jobs
from bench.store.results import ResultStore
from bench.suite.read import load_suite
from tests.conftest import start_cli, stub_job

TIMEOUT = 60.0
METRICS = {"accuracy": MetricResult(0.5, (0.4, 0.6), 4)}

# Gaussian vectors, tiny sizes: identity jobs take milliseconds, dfil jobs about a second
# (a 10,000-dim projection), long enough to kill a runner in the middle of one.
CHEAP_SUITE = """
name = "cheap"
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
name = "identity"
{extra}
"""
DFIL = """
[[mechanism]]
name = "dfil"
grid = { inv_dfil = [1.0] }

[[attack]]
name = "optimization"
params = { max_steps = 5 }
"""


def _suite(tmp_path: Path, extra: str = "") -> tuple[Path, list[Job]]:
    path = tmp_path / "cheap.toml"
    path.write_text(CHEAP_SUITE.format(extra=extra))
    return path, expand(load_suite(str(path)))


def _events(store: ResultStore, event: str) -> list[dict[str, Any]]:
    return [e for e in store.lease_events() if e["event"] == event]


# --- the store's lease primitives ---------------------------------------------------


def test_claims_hand_out_each_free_job_once(tmp_path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    hashes = ["a", "b"]
    assert store.claim(hashes, "r1", TIMEOUT, now=100).job_hash == "a"
    assert store.claim(hashes, "r2", TIMEOUT, now=101).job_hash == "b"
    assert store.claim(hashes, "r3", TIMEOUT, now=102).job_hash is None  # both leased, live
    leases = store.leases()
    assert {h: lease["runner"] for h, lease in leases.items()} == {"a": "r1", "b": "r2"}
    assert leases["a"]["claimed_at"] == leases["a"]["heartbeat_at"] == 100
    assert [(e["job_hash"], e["runner"]) for e in _events(store, "claim")] == [
        ("a", "r1"),
        ("b", "r2"),
    ]


def test_an_expired_lease_is_taken_over_and_a_renewed_one_is_not(tmp_path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    store.claim(["a"], "r1", TIMEOUT, now=100)
    store.claim(["b"], "r3", TIMEOUT, now=100)
    assert store.heartbeat("r1", now=150) == 1
    # a: renewed at 150, live until 210; b: last renewed at 100, so expired after 160.
    assert store.claim(["a", "b"], "r2", TIMEOUT, now=160).job_hash is None
    assert store.claim(["a", "b"], "r2", TIMEOUT, now=160.5).job_hash == "b"
    (takeover,) = _events(store, "takeover")
    assert takeover == {
        "job_hash": "b",
        "runner": "r2",
        "event": "takeover",
        "at": 160.5,
        "prev_runner": "r3",
        "prev_heartbeat_at": 100,
        "outcome": None,
    }
    assert store.heartbeat("r3", now=161) == 0  # its lease is gone: nothing to renew
    assert store.heartbeat("r1", now=161) == 1
    assert {h: lease["runner"] for h, lease in store.leases().items()} == {"a": "r1", "b": "r2"}


def test_a_write_releases_the_lease_with_the_rows(tmp_path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    job = stub_job(0)
    assert store.claim([job.hash], "r1", TIMEOUT).job_hash == job.hash
    assert store.write(job, METRICS, {"notion": "none"}, 1.0, runner="r1") is True
    assert store.leases() == {}
    claim = store.claim([job.hash], "r2", TIMEOUT)
    assert (claim.job_hash, claim.stored) == (None, [job.hash])  # stored: nothing to run
    # A runner presumed dead that finishes anyway adds nothing, and says so in the log.
    assert store.write(job, METRICS, {"notion": "none"}, 2.0, runner="r2") is False
    outcomes = [(e["runner"], e["outcome"]) for e in _events(store, "release")]
    assert outcomes == [("r1", "stored"), ("r2", "lost")]
    with sqlite3.connect(tmp_path / "s.sqlite") as conn:
        assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1


def test_release_frees_a_job_at_once_and_only_its_holder_can(tmp_path) -> None:
    store = ResultStore(tmp_path / "s.sqlite")
    store.claim(["a"], "r1", TIMEOUT)
    assert store.release("a", "r2", "stopped") is False  # not r2's lease: it stays
    assert store.leases()["a"]["runner"] == "r1"
    assert store.release("a", "r1", "stopped") is True
    assert store.claim(["a"], "r2", TIMEOUT).job_hash == "a"  # free again, no expiry wait
    assert [e["event"] for e in store.lease_events()] == ["claim", "release", "release", "claim"]
    store.claim(["b", "c"], "r2", TIMEOUT)
    store.claim(["c"], "r2", TIMEOUT)
    assert store.release_all("r2", "stopped") == 3
    assert store.leases() == {}


def test_a_store_from_before_leases_gains_the_tables_and_keeps_its_rows(tmp_path) -> None:
    path = tmp_path / "old.sqlite"
    ResultStore(path).write(stub_job(0), METRICS, {"notion": "none"}, 1.0)
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE leases")
        conn.execute("DROP TABLE lease_log")
    store = ResultStore(path)
    assert store.stored_hashes([stub_job(0).hash]) == {stub_job(0).hash}
    assert (
        store.claim([stub_job(0).hash, stub_job(1).hash], "r1", TIMEOUT).job_hash
        == stub_job(1).hash
    )


def test_the_lease_timeout_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.delenv("BENCH_LEASE_TIMEOUT", raising=False)
    assert lease_timeout_s() == 60.0
    monkeypatch.setenv("BENCH_LEASE_TIMEOUT", "2.5")
    assert lease_timeout_s() == 2.5
    for bad in ("0", "-1", "soon", "nan"):
        monkeypatch.setenv("BENCH_LEASE_TIMEOUT", bad)
        with pytest.raises(Exception, match="BENCH_LEASE_TIMEOUT"):
            lease_timeout_s()


# --- the runner with other runners on its store ---------------------------------------


def test_a_dead_runner_on_this_host_is_taken_over_at_once_a_live_one_is_not(tmp_path) -> None:
    """A lease whose holder ran here and whose process is gone is claimable before its
    timeout (a kill -9'd run, resumed); a live process's, or another host's, is not."""
    from bench.run.runner import runner_is_gone

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # exited and reaped: no process has its pid now (until one reuses it)
    host = socket.gethostname()
    holders = {
        "dead": f"{host}:{dead.pid}:0000",
        "alive": f"{host}:{os.getpid()}:0000",
        "elsewhere": f"another-{host}:{dead.pid}:0000",
        "ghost": "ghost",
    }
    assert {name for name, who in holders.items() if runner_is_gone(who)} == {"dead"}
    store = ResultStore(tmp_path / "s.sqlite")
    for name, who in holders.items():
        store.claim([name], who, TIMEOUT, now=100)
    order = list(holders)
    taken = store.claim(order, "r2", TIMEOUT, now=101, gone=runner_is_gone)
    assert taken.job_hash == "dead"
    assert store.claim(order[1:], "r2", TIMEOUT, now=101, gone=runner_is_gone).job_hash is None
    (takeover,) = _events(store, "takeover")
    assert takeover["prev_runner"] == holders["dead"] and takeover["prev_heartbeat_at"] == 100


def test_a_runner_takes_over_the_job_of_a_dead_runner_after_expiry(tmp_path) -> None:
    _, jobs = _suite(tmp_path)
    store = ResultStore(tmp_path / "s.sqlite")
    store.claim([jobs[0].hash], "ghost", TIMEOUT)  # a runner that never beats again
    start = time.time()
    summary = run_jobs(jobs, store, tmp_path / "cache", progress=False, lease_timeout=1.0)
    assert (summary.executed, summary.skipped) == (3, 0)
    (takeover,) = _events(store, "takeover")
    assert takeover["job_hash"] == jobs[0].hash and takeover["prev_runner"] == "ghost"
    assert takeover["at"] - start > 1.0
    assert store.stored_hashes([j.hash for j in jobs]) == {j.hash for j in jobs}
    assert store.leases() == {}


def test_a_runner_waits_for_a_live_runner_and_counts_its_job_as_stored(tmp_path) -> None:
    _, jobs = _suite(tmp_path)
    path = tmp_path / "s.sqlite"
    ResultStore(path).claim([jobs[0].hash], "other", TIMEOUT)

    def other_runner() -> None:
        """Alive (it beats every 0.25 s, well within the 3 s timeout), stores its job late."""
        other = ResultStore(path)
        for _ in range(8):
            time.sleep(0.25)
            other.heartbeat("other")
        other.write(jobs[0], METRICS, {"notion": "none"}, 1.0, runner="other")
        other.close()

    thread = threading.Thread(target=other_runner)
    thread.start()
    store = ResultStore(path)
    summary = run_jobs(jobs, store, tmp_path / "cache", progress=False, lease_timeout=3.0)
    thread.join()
    assert (summary.total, summary.executed, summary.skipped) == (3, 2, 1)
    assert _events(store, "takeover") == []
    stored_by = {e["job_hash"]: e["runner"] for e in _events(store, "release")}
    assert stored_by[jobs[0].hash] == "other"
    assert len(stored_by) == 3 and store.leases() == {}


def test_executors_read_a_starved_feed_again_until_it_ends(monkeypatch) -> None:
    """A None from the feed (other runners hold every job left) makes an executor wait and
    ask again, not stop: shown on the in-process executor and on Ray's submit loop."""
    monkeypatch.setattr("bench.run.executors.WAIT_S", 0.01)
    assert list(LocalExecutor(1).run(iter([None, None]), Path("."), False)) == []
    fake = _FakeRay(JobOutcome(METRICS, {"notion": "none"}, 0.1))
    feed = _Pull(iter([stub_job(0), None, None, stub_job(1)]))
    started: list[Job] = []
    collected = list(RayExecutor()._submit_and_collect(fake, feed, Path("."), started.append))
    assert [job.seed for job, _ in collected] == [job.seed for job in started] == [0, 1]
    assert fake.timeouts == [0.01, None]  # polls while starved, then waits for the last


class _FakeRay:
    """Just enough of the ray module for RayExecutor._submit_and_collect: every task is
    done at once; records the timeout of each wait."""

    class exceptions:  # mirrors ray.exceptions
        RayTaskError = RuntimeError

    def __init__(self, outcome: JobOutcome) -> None:
        self.outcome = outcome
        self.timeouts: list[float | None] = []

    def remote(self, fn: Any) -> _FakeTask:
        return _FakeTask()

    def wait(self, refs: list[object], num_returns: int, timeout: float | None) -> Any:
        self.timeouts.append(timeout)
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref: object) -> JobOutcome:
        return self.outcome

    def cancel(self, ref: object, force: bool) -> None:
        raise AssertionError("nothing should be left to cancel")


class _FakeTask:
    """A remote function: each call submits a task and returns its (opaque) reference."""

    def options(self, **resources: float) -> _FakeTask:
        return self

    def remote(self, job: Job, cache_root: str) -> object:
        return object()


# --- three `bench run` processes on one store, one killed ------------------------------

LEASE_S = 4.0  # the runners' lease timeout: short, so the killed runner's jobs move on soon
SUMMARY = re.compile(r"cheap: (\d+) jobs run, (\d+) already stored, 12 selected")


def _runner_pid(runner: str) -> int:
    """The process id inside a runner id (host:pid:random)."""
    return int(runner.rsplit(":", 2)[1])


def _leases_of(store: Path, pid: int) -> dict[str, str]:
    """The jobs the runner process `pid` holds leases on right now: job hash -> runner id."""
    if not store.exists():
        return {}
    try:
        with closing(sqlite3.connect(store, timeout=30)) as conn:
            rows = conn.execute("SELECT job_hash, runner FROM leases").fetchall()
    except sqlite3.OperationalError:  # its tables are not made yet
        return {}
    return {job_hash: runner for job_hash, runner in rows if _runner_pid(runner) == pid}


def _holding_spans(
    events: list[dict[str, Any]], timeout_s: float, dead: set[str]
) -> dict[str, list[tuple[str, float, float]]]:
    """Replay the lease log: per job, (runner, from, to) for each lease on it. A lease ends
    at its release or, for a runner that died holding it, at its last heartbeat (which the
    takeover records). Fails if a job is claimed while leased, or taken over from a runner
    other than its holder, or before that holder's lease expired unless the holder is one
    of the `dead` runners (a killed process on this host is taken over at once)."""
    holders: dict[str, tuple[str, float]] = {}
    spans: dict[str, list[tuple[str, float, float]]] = defaultdict(list)
    for e in events:
        job, runner, at, holder = e["job_hash"], e["runner"], e["at"], holders.get(e["job_hash"])
        if e["event"] == "claim":
            assert holder is None, f"{runner} claimed {job} while {holder} held it"
            holders[job] = (runner, at)
        elif e["event"] == "takeover":
            assert holder is not None and holder[0] == e["prev_runner"], e
            expired = at - e["prev_heartbeat_at"] > timeout_s
            assert expired or e["prev_runner"] in dead, f"{job} taken over before expiry"
            spans[job].append((holder[0], holder[1], e["prev_heartbeat_at"]))
            holders[job] = (runner, at)
        else:
            assert holder is not None and holder[0] == runner, e
            spans[job].append((runner, holder[1], at))
            del holders[job]
    assert holders == {}, "leases left unreleased"
    return spans


@pytest.mark.slow
def test_three_runners_one_killed_store_every_job_once(tmp_path, monkeypatch) -> None:
    suite, jobs = _suite(tmp_path, DFIL)
    unique = {job.hash for job in jobs}
    assert len(unique) == 12
    store_path = tmp_path / "s.sqlite"
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("BENCH_LEASE_TIMEOUT", str(LEASE_S))
    args = ("run", "--suite", str(suite), "--store", str(store_path), "--out", "lb")
    dirs = [tmp_path / f"runner{i}" for i in range(3)]  # each writes its own leaderboard
    for where in dirs:
        where.mkdir()
    extra = (("--jobs", "2"), (), ())  # one with a worker pool, two in-process
    procs = [
        start_cli(*args, *more, "--no-progress", cwd=d) for d, more in zip(dirs, extra, strict=True)
    ]
    victim = procs[2]
    try:
        long_jobs = {job.hash for job in jobs if job.mechanism == "dfil"}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and victim.poll() is None:
            if _leases_of(store_path, victim.pid).keys() & long_jobs:
                break
            time.sleep(0.05)
        assert victim.poll() is None, "the third runner finished before it could be killed"
        victim.kill()  # SIGKILL, in the middle of a job
        victim.communicate(timeout=60)
        held = _leases_of(store_path, victim.pid)  # what it died holding
        outputs = [proc.communicate(timeout=300) for proc in procs[:2]]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert victim.returncode == -signal.SIGKILL
    for proc, (_, err) in zip(procs[:2], outputs, strict=True):
        assert proc.returncode == 0, err
    assert held, "the killed runner held no lease"

    with closing(sqlite3.connect(store_path)) as conn:
        stored = [h for (h,) in conn.execute("SELECT job_hash FROM jobs")]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM results WHERE job_hash NOT IN (SELECT job_hash FROM jobs)"
        ).fetchone()[0]
    assert sorted(stored) == sorted(unique) and orphans == 0  # every job stored exactly once
    store = ResultStore(store_path)
    assert store.leases() == {}
    events = store.lease_events()
    releases = [e for e in events if e["event"] == "release"]
    assert {e["outcome"] for e in releases} == {"stored"}  # none ran twice, none was lost
    assert sorted(e["job_hash"] for e in releases) == sorted(unique)

    # No job was held by two runners at once; only the dead runner's jobs were taken over.
    dead = set(held.values())
    for job_hash, spans in _holding_spans(events, LEASE_S, dead).items():
        spans.sort(key=lambda span: span[1])
        for before, after in itertools.pairwise(spans):
            assert before[2] < after[1], (job_hash, spans)
        assert all(runner in dead for runner, _, _ in spans[:-1]), (job_hash, spans)
    taken = {e["job_hash"]: e["prev_runner"] for e in events if e["event"] == "takeover"}
    assert held.keys() <= taken.keys() and set(taken.values()) <= dead

    # Each survivor's summary adds up and matches the jobs it stored; both wrote the full
    # leaderboard (they waited until every job was stored).
    stored_by = Counter(_runner_pid(e["runner"]) for e in releases)
    for proc, (out, _), where in zip(procs[:2], outputs, dirs[:2], strict=True):
        found = SUMMARY.search(out)
        assert found, out
        ran, skipped = int(found[1]), int(found[2])
        assert ran + skipped == 12 and ran == stored_by[proc.pid], out
        rows = json.loads((where / "lb" / "leaderboard.json").read_text())["rows"]
        assert {r["mechanism"] for r in rows} == {"identity", "dfil"}
        assert all(r["seeds"] == 3 for r in rows)
    assert sum(stored_by.values()) == 12


def test_the_feed_starts_every_setting_before_the_second_job_of_any() -> None:
    """Two workers start on different settings (each builds its own artifacts) instead of
    one waiting for the artifacts the other builds; every job is handed out exactly once,
    and a setting's jobs keep their order (its utility job first)."""
    from dataclasses import replace

    from bench.run.runner import setting_of, spread_settings

    jobs = [
        replace(stub_job(seed, mechanism), attack=attack)
        for mechanism in ("identity", "gauss-input")
        for seed in (0, 1)
        for attack in (None, "optimization", "inverter")
    ]
    fed = spread_settings(jobs)
    assert sorted(j.hash for j in fed) == sorted(j.hash for j in jobs)
    first_round = fed[:4]
    assert len({setting_of(j) for j in first_round}) == 4
    assert all(j.attack is None for j in first_round)
    for setting in {setting_of(j) for j in jobs}:
        assert [j.attack for j in fed if setting_of(j) == setting] == [
            None,
            "optimization",
            "inverter",
        ]
    assert spread_settings([]) == []
