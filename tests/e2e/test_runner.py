"""End to end on real Fashion-MNIST: resume after kill -9 and Ctrl-C, reruns that execute
nothing and reproduce the leaderboard byte for byte, and workers that change nothing."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.run.plan import expand
from bench.suite.read import load_suite
from tests.conftest import (
    ROOT,
    SMOKE_ARGS,
    cli_env,
    cli_here,
    run_cli,
    start_cli,
    tiny_run_args,
)


def _rows(store: Path, table: str) -> int:
    """Rows of `table`; 0 while the store is being created (the file before its tables)."""
    try:
        with sqlite3.connect(store) as conn:
            return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _run(tiny_suite: Path, cwd: Path, *extra: str):
    return run_cli(*tiny_run_args(tiny_suite, *extra), cwd=cwd, check=True)


def _start_and_stop_midway(tiny_suite: Path, cwd: Path, sig: int) -> subprocess.CompletedProcess:
    """Start a run, wait until at least 3 jobs are stored, then send `sig`."""
    proc = start_cli(*tiny_run_args(tiny_suite), cwd=cwd)
    store = cwd / "r.sqlite"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if store.exists() and _rows(store, "jobs") >= 3:
            break
        time.sleep(0.2)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _dry_run(monkeypatch, capsys, suite: Path, cwd: Path, *extra: str):
    """`bench run --dry-run` in this process (it runs nothing a fresh interpreter would
    change)."""
    proc = cli_here(monkeypatch, capsys, *tiny_run_args(suite, "--dry-run", *extra), cwd=cwd)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_rerun_executes_nothing_and_reproduces_the_leaderboard(
    tmp_path, tiny_suite, tiny_run, monkeypatch, capsys
) -> None:
    plan = _dry_run(monkeypatch, capsys, tiny_suite, tmp_path)
    assert "tiny: 12 jobs selected, 0 stored, 12 would run" in plan.stdout
    assert "fmnist / gauss-input / inverter" in plan.stdout
    assert not (tmp_path / "r.sqlite").exists()  # a dry run writes nothing
    # The first run is the session's tiny run (the same suite, run cold): continue from it.
    first_dir, first = tiny_run
    shutil.copytree(first_dir, tmp_path, dirs_exist_ok=True)
    assert "12 jobs run, 0 already stored" in first
    # The end-of-run summary: each setting's utility and strongest attack, then the page.
    assert "fmnist: accuracy; strongest attack by ssim" in first
    assert re.search(
        r"gauss-input\(eps=1.0, r=0.5\) +accuracy +[0-9.]+ \[[0-9.]+, [0-9.]+\] +"
        r"attack [0-9.]+ \(\w+\)",
        first,
    )
    assert re.search(r"^leaderboard: /\S+/lb/index\.html$", first, re.MULTILINE)
    estimate = _dry_run(monkeypatch, capsys, tiny_suite, tmp_path, "--seeds", "3")
    assert "tiny: 18 jobs selected, 12 stored, 6 would run" in estimate.stdout
    assert "estimate: ~" in estimate.stdout  # from the stored timings of the same kinds
    board = {p.name: p.read_bytes() for p in (tmp_path / "lb").glob("leaderboard.*")}
    assert set(board) == {"leaderboard.json", "leaderboard.md", "leaderboard.csv"}
    written = {p: p.stat().st_mtime_ns for p in (tmp_path / "lb").rglob("*") if p.is_file()}
    second = _run(tiny_suite, tmp_path)
    assert "0 jobs run, 12 already stored" in second.stdout
    assert board == {p.name: p.read_bytes() for p in (tmp_path / "lb").glob("leaderboard.*")}
    # Nothing new: the leaderboard on disk already shows these results, so no file is
    # rewritten (no plots redrawn) ...
    assert written == {p: p.stat().st_mtime_ns for p in written}
    # ... unless the page was rendered by other report code: then it is written again.
    page = tmp_path / "lb" / "index.html"
    page.write_text(page.read_text().replace('name="bench-report" content="', 'content="x'))
    _run(tiny_suite, tmp_path)
    assert 'name="bench-report"' in page.read_text()
    data = json.loads(board["leaderboard.json"])
    assert {r["mechanism"] for r in data["rows"]} == {"identity", "gauss-input"}
    assert all(r["seeds"] == 2 for r in data["rows"])


def test_kill_9_midway_then_rerun_completes_without_loss_or_duplicates(
    tmp_path, tiny_suite
) -> None:
    killed = _start_and_stop_midway(tiny_suite, tmp_path, signal.SIGKILL)
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "lb").exists()
    done_before = _rows(tmp_path / "r.sqlite", "jobs")
    resumed = _run(tiny_suite, tmp_path)
    assert f"{12 - done_before} jobs run, {done_before} already stored" in resumed.stdout
    jobs = expand(load_suite(str(tiny_suite)))
    with sqlite3.connect(tmp_path / "r.sqlite") as conn:
        stored = [r[0] for r in conn.execute("SELECT job_hash FROM jobs")]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM results WHERE job_hash NOT IN (SELECT job_hash FROM jobs)"
        ).fetchone()[0]
        per_job = dict(conn.execute("SELECT job_hash, COUNT(*) FROM results GROUP BY job_hash"))
    assert sorted(stored) == sorted(j.hash for j in jobs)  # every job exactly once
    assert orphans == 0
    for job in jobs:  # and each with its full set of metrics (+ the audit's 5 on seed 0)
        audited = job.attack is None and job.seed == 0 and job.mechanism != "identity"
        # utility: accuracy, accuracy_all, chance, modal_prediction_share, release_rate,
        # fit_s, release_ms, and eps_audit_lb, eps_audit_ideal, eps_audit_ideal_pair,
        # audit_pair_reach, audit_draws; attack: mse, l1, l2, psnr, ssim, each also over all
        # queries (`_all`), the prior guess's mse_prior and ssim_prior, attack_s, release_rate.
        assert per_job[job.hash] == (7 + 5 * audited if job.attack is None else 14)


def test_ctrl_c_exits_130_with_a_resume_hint(tmp_path, tiny_suite) -> None:
    stopped = _start_and_stop_midway(tiny_suite, tmp_path, signal.SIGINT)
    assert stopped.returncode == 130, stopped.stderr
    assert "run the same command to resume" in stopped.stderr
    assert "Traceback" not in stopped.stderr
    resumed = _run(tiny_suite, tmp_path)
    assert "already stored" in resumed.stdout and (tmp_path / "lb" / "leaderboard.json").exists()


TIMINGS = ("fit_s", "release_ms", "attack_s")


def _rows_without_timings(where: Path) -> list[dict]:
    rows = json.loads((where / "lb" / "leaderboard.json").read_text())["rows"]
    for row in rows:
        row["metrics"] = {k: v for k, v in row["metrics"].items() if k not in TIMINGS}
    return rows


def test_same_job_same_numbers_across_jobs_and_cache_state(
    tmp_path, tiny_suite, tiny_run, monkeypatch
) -> None:
    """--jobs 1 and --jobs 2, each on a cold cache, then each on the other's warm cache:
    every non-timing number of the leaderboard is identical, bit for bit."""
    runs = {name: tmp_path / name for name in ("two", "two_warm", "one_warm")}
    for where in runs.values():
        where.mkdir()
    runs["one"], _ = tiny_run  # cold, --jobs 1, its artifacts in its cache/
    monkeypatch.setenv("BENCH_CACHE", str(runs["one"] / "cache"))
    _run(tiny_suite, runs["two_warm"], "--jobs", "2")  # warm: artifacts built by --jobs 1
    monkeypatch.setenv("BENCH_CACHE", str(runs["two"] / "cache"))
    _run(tiny_suite, runs["two"], "--jobs", "2")  # cold
    _run(tiny_suite, runs["one_warm"])  # warm: artifacts built by --jobs 2
    reference = _rows_without_timings(runs["one"])
    assert {r["mechanism"] for r in reference} == {"identity", "gauss-input"}
    for name in ("two", "two_warm", "one_warm"):
        assert _rows_without_timings(runs[name]) == reference, name


def test_bench_is_importable_without_the_cli() -> None:
    # The public API used by notebooks must not need typer.
    code = "import bench.api, sys; assert 'typer' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# Its setup may run the whole smoke suite (or wait for another worker's run of it): the
# per-test timeout counts that too, so it gets two suites' worth.
@pytest.mark.timeout(1500)
def test_smoke_suite_twice_second_run_executes_nothing(smoke_run) -> None:
    where, first_stdout = smoke_run
    n = len(expand(load_suite("smoke")))
    assert f"{n} jobs run, 0 already stored" in first_stdout
    board = {p.name: p.read_bytes() for p in (where / "lb").rglob("*") if p.is_file()}
    expected = {
        "leaderboard.json",
        "leaderboard.md",
        "leaderboard.csv",
        "fmnist.png",
        "fmnist_reconstructions.png",
    }
    assert expected <= set(board)
    second = run_cli(*SMOKE_ARGS, cwd=where, check=True)
    assert f"0 jobs run, {n} already stored" in second.stdout
    assert board == {p.name: p.read_bytes() for p in (where / "lb").rglob("*") if p.is_file()}
    rows = json.loads(board["leaderboard.json"])["rows"]
    attacks = {r["attack"] for r in rows}
    assert {"optimization", "tv", "map", "inverter", "worst case"} <= attacks


def _running(pid: int) -> bool:
    """Whether `pid` exists and has not exited (a zombie waiting for init has)."""
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_worker_whose_driver_died_ends_itself() -> None:
    """A pool worker outlives a driver killed with SIGKILL only until its watchdog sees the
    parent gone (bench.run.executors._watch_parent): no orphan keeps burning the machine."""
    worker = (
        "import os, time\n"
        "from bench.run.executors import _watch_parent\n"
        "_watch_parent(os.getppid())\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    driver_code = (
        "import subprocess, sys, time\n"
        f"w = subprocess.Popen([sys.executable, '-c', {worker!r}], stdout=subprocess.PIPE)\n"
        "print(w.pid, flush=True)\n"
        "w.stdout.readline()\n"
        "print('up', flush=True)\n"
        "time.sleep(60)\n"
    )
    driver = subprocess.Popen(
        [sys.executable, "-c", driver_code], stdout=subprocess.PIPE, text=True
    )
    worker_pid = int(driver.stdout.readline())
    assert driver.stdout.readline().strip() == "up"
    assert _running(worker_pid)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    deadline = time.monotonic() + 10
    while _running(worker_pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _running(worker_pid), "the orphaned worker kept running"


def test_leaderboard_reads_the_store_the_suites_run_used(smoke_run, tmp_path) -> None:
    """`bench run --suite smoke --store S`, then `bench leaderboard --suite smoke` from the
    same directory: the board comes from S, and the first line says so."""
    where, _ = smoke_run
    shutil.copytree(where, tmp_path, dirs_exist_ok=True)
    run_cli(*SMOKE_ARGS, cwd=tmp_path, check=True)  # nothing to run: it only records S
    proc = run_cli("leaderboard", "--suite", "smoke", "--out", "again", cwd=tmp_path, check=True)
    store = (tmp_path / "r.sqlite").resolve()
    said = f"store: {store} (the last `bench run --suite smoke` here)"
    assert proc.stdout.splitlines()[0] == said
    rows = lambda d: json.loads((tmp_path / d / "leaderboard.json").read_text())["rows"]  # noqa: E731
    assert rows("again") == rows("lb")


def test_a_piped_run_prints_a_line_per_finished_job_and_one_per_10_s(smoke_run, tmp_path) -> None:
    """`bench run --suite smoke` with its output piped (a CI log): a first line with the
    ETA, a line as each job ends, and never 10 s without a line (counted over the run)."""
    where, _ = smoke_run
    shutil.copytree(where / "cache", tmp_path / "cache")  # warm artifacts; every job runs
    args = ["run", "--suite", "smoke", "--store", "piped.sqlite", "--out", "lb", "--jobs", "2"]
    with open(tmp_path / "stderr.txt", "w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.cli.app", *args],
            cwd=tmp_path, env=cli_env(tmp_path), stdout=subprocess.PIPE, stderr=err, text=True,
        )  # fmt: skip
        start, lines = time.monotonic(), []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - start, line.rstrip("\n")))
        assert proc.wait() == 0, (tmp_path / "stderr.txt").read_text()
    n = len(expand(load_suite("smoke")))
    assert re.fullmatch(rf"{n} jobs to run, eta \d+:\d\d \(from committed boards\)", lines[0][1])
    progress = [(t, text) for t, text in lines if text.startswith("[")]
    assert sum(": done " in text for _, text in progress) == n
    last = progress[-1][0]
    assert len(progress) + 1 >= last // 10, lines  # at least one line per 10 s of the run
