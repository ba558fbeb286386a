"""A full disk (simulated with RLIMIT_FSIZE in a child process) is one line naming the
store and the fix, exit 1 during a run; the store stays a consistent SQLite database whose
jobs are each whole, and the same command then completes the run."""

from __future__ import annotations

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import BENCH, ROOT, tiny_run_args


def _limited(limit: int) -> None:
    """preexec_fn: no file of the child may grow past `limit` bytes (writes fail with
    EFBIG; Python ignores SIGXFSZ)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def test_claim_on_a_full_disk_names_the_disk_error_not_the_rollback(tmp_path: Path) -> None:
    """store.claim's rollback after SQLite already rolled back hid `disk I/O error` behind
    `cannot rollback - no transaction is active`."""
    script = textwrap.dedent(
        f"""
        import sqlite3, resource
        from pathlib import Path
        from bench.store.results import ResultStore
        store = ResultStore(Path({str(tmp_path / "s.sqlite")!r}))
        store._conn.execute("PRAGMA wal_autocheckpoint = 1")  # every commit reaches the file
        size = Path({str(tmp_path / "s.sqlite")!r}).stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size + 8192, size + 8192))
        try:
            for i in range(100000):
                store.claim([f"job{{i:08d}}" + "x" * 200], "runner", 60.0)
        except sqlite3.Error as exc:
            print("ERROR", exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "ERROR" in done.stdout, done.stdout
    message = done.stdout.split("ERROR", 1)[1].strip()
    assert "no transaction is active" not in message
    assert "disk" in message or "full" in message, message
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


@pytest.mark.slow
def test_run_on_a_full_disk_is_one_line_exit_1_and_resumes(tiny_run, tmp_path: Path) -> None:
    """The tiny suite again with its artifacts cached and a fresh store that may not grow
    past 150 kB (the finished store is about 300 kB): the run stops in one line with exit
    1, the jobs it stored are whole, and the same command without the limit completes."""
    done_dir, _ = tiny_run
    where = tmp_path / "run"
    shutil.copytree(done_dir, where)
    for leftover in ("r.sqlite", "r.sqlite-wal", "r.sqlite-shm"):
        (where / leftover).unlink(missing_ok=True)
    shutil.rmtree(where / "lb")
    args = [*BENCH, *tiny_run_args(Path("tiny.toml"))]
    full = subprocess.run(
        args,
        cwd=where,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=lambda: _limited(150_000),
    )
    lines = full.stderr.strip().splitlines()
    assert full.returncode == 1, full.stderr
    assert "Traceback" not in full.stderr
    assert lines[-1].startswith("bench: error: writing store r.sqlite failed: disk I/O error")
    assert "free space and run the same command" in lines[-1]
    conn = sqlite3.connect(where / "r.sqlite")
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    partial = conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]
    # Each stored job has its rows: no job was half-written.
    assert conn.execute(
        "SELECT COUNT(*) FROM jobs j WHERE NOT EXISTS "
        "(SELECT 1 FROM results r WHERE r.job_hash = j.job_hash)"
    ).fetchone() == (0,)
    conn.close()
    assert partial < 12
    resumed = subprocess.run(args, cwd=where, env=_env(), capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{12 - partial} jobs run, {partial} already stored" in resumed.stdout


@pytest.mark.slow
def test_a_board_that_cannot_be_written_after_the_jobs_is_one_line_exit_1(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The jobs run and are stored; writing the leaderboard then fails (a full disk): one
    line naming the file and the fix, exit 1, and the stored jobs stay for the rerun."""
    import errno

    from tests.bench.run.test_job_failures import SUITE
    from tests.conftest import cli_here
    from tests.faulty_plugins import FAULTS_ENV

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    (tmp_path / "faults.toml").write_text(SUITE)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "lb/index.html")

    monkeypatch.setattr("bench.run.publish.write_suite_leaderboard", full)
    done = cli_here(monkeypatch, capsys, *tiny_run_args(Path("faults.toml")), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1, done.stderr
    assert lines == [
        "bench: error: writing lb/index.html failed: No space left on device: the disk is "
        "full; free space and run the same command to resume"
    ]
    conn = sqlite3.connect(tmp_path / "r.sqlite")
    assert conn.execute("SELECT COUNT(*) FROM jobs").fetchone() == (12,)
    conn.close()
