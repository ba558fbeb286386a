"""One end-to-end case per class of failure a reliability harness found, each in fresh bench
processes with planted plug-ins:

- stale results: editing a plug-in's source, or reinstalling it at another version, re-runs
  its jobs and only its jobs, with its artifacts rebuilt, and `bench status` names it;
- data damage: a suite file of one's own named like a shipped suite leaves the checkout's
  `git status` clean;
- a liar passed: `bench validate` of a DP-over-training-sets claim with too little noise
  does not exit 0;
- hangs and silent exits: a fit that never returns is a TimedOut failure and the run ends, a
  fit that forks and exits is a WorkerDied failure at --jobs 1 and 2, and neither a thread
  nor a child process a plug-in leaves behind keeps bench from exiting;
- a corrupt board reported as current: the warm rerun rewrites a truncated board;
- tracebacks: a plug-in exception whose message cannot be made is that job's failure;
- smaller: Ctrl-C while bench starts says why in one line.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.bench.run.test_job_failures import FAULTY, SUITE, _listed
from tests.conftest import BENCH, ROOT, run_cli, tiny_run_args
from tests.faulty_plugins import FAULTS_ENV, MARK_ENV

PLUGINS = ROOT / "tests" / "plugins"

# ------------------------------------------------------------------------ stale results

EDITED = '''"""A plug-in whose noise scale reaches its release only through a cached artifact: a
stale artifact would give the old code's numbers under new job hashes."""

import torch

from bench.plugin import Guarantee, InputSpaceMechanism, NoiseModel

SCALE = {scale}


def noise_scale() -> torch.Tensor:
    return torch.tensor(SCALE)


class EditedNoise(InputSpaceMechanism):
    name = "test-edited"

    def fit(self, task, splits, ctx):
        self.scale = float(ctx.cache.get_or_build({{"test-edited": "scale"}}, noise_scale))
        super().fit(task, splits, ctx)

    def calibrate(self, task):  # before fit (the suite's checks): the module's scale
        return NoiseModel("gaussian", getattr(self, "scale", SCALE))

    def guarantee(self):
        return Guarantee("none")
'''
EDITED_SUITE = """
name = "edited"
version = "1"
seeds = 2
attack_samples = 8

[[task]]
name = "gaussian"
n_train = 64
n_aux = 32
n_test = 32
train_epochs = 1

[[mechanism]]
name = "identity"

[[mechanism]]
name = "test-edited"

[[attack]]
name = "optimization"
params = { max_steps = 10 }
"""


def _install_edited(where: Path, scale: str, version: str) -> Path:
    """The plug-in distribution `edited-plugin` (module and dist-info) under `where`."""
    where.mkdir(exist_ok=True)
    (where / "edited_plugin.py").write_text(EDITED.format(scale=scale))
    for old in where.glob("*.dist-info"):
        shutil.rmtree(old)
    meta = where / f"edited_plugin-{version}.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: edited-plugin\nVersion: {version}\n"
    )
    (meta / "entry_points.txt").write_text(
        "[bench.mechanisms]\ntest-edited = edited_plugin:EditedNoise\n"
    )
    return where


def _rows(board: Path) -> dict[tuple[str, str | None], dict[str, float]]:
    """(mechanism, attack) -> its non-timing metric values, from a board's JSON."""
    doc = json.loads((board / "leaderboard.json").read_text())
    return {
        (r["mechanism"], r["attack"]): {
            k: m["value"] for k, m in r["metrics"].items() if not k.endswith(("_s", "_ms"))
        }
        for r in doc["rows"]
    }


def test_editing_a_plugin_reruns_its_jobs_and_only_its_jobs(tmp_path: Path) -> None:
    plugin = _install_edited(tmp_path / "plugin", "0.05", "0.1")
    (tmp_path / "edited.toml").write_text(EDITED_SUITE)
    env = {"BENCH_CACHE": str(tmp_path / "cache")}
    args = ("run", "--suite", "edited.toml", "--store", "r.sqlite", "--out", "boards/edited")

    def bench(*extra: str, cwd: Path = tmp_path, plugin_dir: Path = plugin):
        os.environ.update(env)
        return run_cli(*extra, "--no-progress", cwd=cwd, extra_path=(plugin_dir,), check=True)

    assert "edited: 8 jobs run, 0 already stored, 8 selected" in bench(*args).stdout
    assert "edited: 0 jobs run, 8 already stored, 8 selected" in bench(*args).stdout
    before = _rows(tmp_path / "boards" / "edited")

    _install_edited(plugin, "2.000", "0.1")  # the source edited (another size: no stale .pyc)
    status = run_cli("status", "--suite", "edited.toml", "--boards", "boards", cwd=tmp_path,
                     extra_path=(plugin,), check=True)  # fmt: skip
    assert "edited  stale" in status.stdout and "plug-in code moved: test-edited" in status.stdout
    assert "edited: 4 jobs run, 4 already stored, 8 selected" in bench(*args).stdout
    after = _rows(tmp_path / "boards" / "edited")
    assert {k: v for k, v in after.items() if k[0] == "identity"} == {
        k: v for k, v in before.items() if k[0] == "identity"
    }
    for attack in (None, "optimization"):  # both moved with the noise
        assert after[("test-edited", attack)] != before[("test-edited", attack)]

    # The numbers are the new code's: a cold run of it (new store, new cache) gives them.
    cold = tmp_path / "cold"
    cold.mkdir()
    shutil.copy(tmp_path / "edited.toml", cold)
    env["BENCH_CACHE"] = str(cold / "cache")
    bench(*args, cwd=cold)
    assert _rows(cold / "boards" / "edited") == after

    env["BENCH_CACHE"] = str(tmp_path / "cache")
    _install_edited(plugin, "2.000", "0.2")  # the same source reinstalled at a new version
    assert "edited: 4 jobs run, 4 already stored, 8 selected" in bench(*args).stdout


# -------------------------------------------------------------------------- data damage

TINY_DEFAULT = """
name = "default"
version = "1"
seeds = 1

[[task]]
name = "gaussian"
n_train = 64
n_aux = 32
n_test = 32
train_epochs = 1

[[mechanism]]
name = "identity"
"""


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


def test_a_suite_named_like_a_shipped_suite_leaves_git_status_clean(tmp_path: Path) -> None:
    """A checkout's committed leaderboards/default/ (copied into a scratch repository), and a
    user's suite file named "default" run there without --out: its board goes elsewhere, the
    run says where in one line, and `git status` stays clean."""
    checkout = tmp_path / "checkout"
    shutil.copytree(ROOT / "leaderboards" / "default", checkout / "leaderboards" / "default")
    (checkout / ".gitignore").write_text(".bench/\nmine.toml\n")
    (checkout / "mine.toml").write_text(TINY_DEFAULT)
    _git("init", "-q", cwd=checkout)
    _git("add", "-A", cwd=checkout)
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "boards", cwd=checkout)
    proc = run_cli("run", "--suite", "mine.toml", "--no-progress", cwd=checkout, check=True)
    assert "default: 1 jobs run" in proc.stdout
    note = [line for line in proc.stdout.splitlines() if "named like the shipped suite" in line]
    assert len(note) == 1 and ".bench/leaderboards/default" in note[0]
    assert (checkout / ".bench" / "leaderboards" / "default" / "leaderboard.json").is_file()
    assert _git("status", "--porcelain", cwd=checkout) == ""


# ------------------------------------------------------------------------- a liar passed


def test_validate_does_not_pass_a_dp_claim_with_too_little_noise(tmp_path: Path) -> None:
    proc = run_cli("validate", "test-dp-liar", cwd=tmp_path, extra_path=(PLUGINS,))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("  FAIL")]
    assert failed == ["check_privacy_audit"]
    assert "over neighbouring training sets" in proc.stdout and "validate: FAIL" in proc.stdout


# ------------------------------------------------------------- hangs and silent exits


@pytest.fixture
def faults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The faults suite (tests/bench/run/test_job_failures.py) in tmp_path, its own cache."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(MARK_ENV, str(tmp_path / "mark"))
    monkeypatch.delenv(FAULTS_ENV, raising=False)
    path = tmp_path / "faults.toml"
    path.write_text(SUITE)
    return path


def _faulty_run(suite: Path, fault: str, monkeypatch, *extra: str):
    """`bench run` of the faults suite with `fault` on, and how long it took."""
    monkeypatch.setenv(FAULTS_ENV, fault)
    start = time.monotonic()
    proc = run_cli(*tiny_run_args(suite, *extra), cwd=suite.parent)
    return proc, time.monotonic() - start


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_fit_that_never_returns_times_out_and_the_run_finishes(
    faults, monkeypatch, workers
) -> None:
    proc, _ = _faulty_run(faults, "hang@1", monkeypatch, "--jobs", workers, "--job-timeout", "10")
    assert proc.returncode == 1, proc.stderr
    assert "faults: 10 jobs run, 0 already stored, 12 selected, 2 failed" in proc.stdout
    listed = _listed(proc.stderr)
    assert len(listed) == 2 and all(f"{FAULTY}() /" in line for line in listed.values())
    assert all("TimedOut: the job ran past its time limit of 10 s" in v for v in listed.values())
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_fit_that_forks_and_exits_is_a_worker_death(faults, monkeypatch, workers) -> None:
    proc, _ = _faulty_run(faults, "forkexit@1", monkeypatch, "--jobs", workers)
    assert proc.returncode == 1, proc.stderr
    assert "faults: 10 jobs run, 0 already stored, 12 selected, 2 failed" in proc.stdout
    listed = _listed(proc.stderr)
    assert len(listed) == 2
    assert all("WorkerDied: the worker process running this job exited with code 0" in v
               for v in listed.values())  # fmt: skip


@pytest.mark.parametrize("fault", ["thread@1", "straychild@1"])
def test_what_a_plugin_leaves_running_does_not_keep_bench_alive(faults, monkeypatch, fault):
    """A non-daemon thread, or a child process holding bench's output open, both sleeping
    for 10 minutes: the run stores everything and ends (its output closed) long before."""
    proc, took = _faulty_run(faults, fault, monkeypatch)
    assert proc.returncode == 0, proc.stderr
    assert "faults: 12 jobs run, 0 already stored, 12 selected" in proc.stdout
    assert took < 300


def test_an_exception_whose_message_cannot_be_made_fails_its_job_alone(faults, monkeypatch):
    proc, _ = _faulty_run(faults, "badstr@1", monkeypatch)
    assert proc.returncode == 1, proc.stderr
    assert "faults: 10 jobs run, 0 already stored, 12 selected, 2 failed" in proc.stdout
    assert "Traceback" not in proc.stderr
    assert all("UnprintableError: (its message could not be shown" in v
               for v in _listed(proc.stderr).values())  # fmt: skip


# -------------------------------------------------------------------- a corrupt board


@pytest.mark.parametrize("damage", ["truncate", "empty-rows", "delete-json"])
def test_the_warm_rerun_rewrites_a_board_that_does_not_validate(tiny_run, tmp_path, damage):
    run_dir, _ = tiny_run
    work = tmp_path / "work"
    shutil.copytree(run_dir, work)
    board = work / "lb" / "leaderboard.json"
    good = board.read_text()
    if damage == "truncate":
        board.write_text(good[: len(good) // 3])
    elif damage == "empty-rows":
        board.write_text(json.dumps({**json.loads(good), "rows": "none"}))
    else:
        board.unlink()
    proc = run_cli(*tiny_run_args(Path("tiny.toml")), cwd=work, check=True)
    assert "tiny: 0 jobs run" in proc.stdout
    assert board.read_text() == good  # rewritten exactly as the run wrote it


# -------------------------------------------------------------------------- smaller


def test_ctrl_c_while_bench_starts_says_why(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [*BENCH, "run", "--suite", "smoke", "--store", "r.sqlite", "--no-progress"],
        cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(0.5 if sys.flags.dev_mode else 0.3)  # importing the command line
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: interrupted"), err
    assert not (tmp_path / "r.sqlite").exists()
