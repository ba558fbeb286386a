"""Shared fixtures: a tiny suite on real Fashion-MNIST, and a CLI runner in a subprocess."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from filelock import FileLock

from bench.core.cpu_math import pin_cpu_math
from bench.run.job import Job

# The tests compute in this process as jobs do: the same CPU arithmetic (bench.core.cpu_math).
pin_cpu_math()

# Nothing downloads at run time: the text tasks' Hugging Face loaders must work offline.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
BENCH = [sys.executable, "-m", "bench.cli.app"]

TINY_SUITE = """
name = "tiny"
version = "1"
seeds = 2
attack_samples = 16

[[task]]
name = "fmnist"
n_train = 300
n_aux = 200
n_test = 100
train_epochs = 1

[[mechanism]]
name = "identity"

[[mechanism]]
name = "gauss-input"
grid = { eps = [1.0] }
params = { r = 0.5 }

[[attack]]
name = "optimization"
params = { max_steps = 30 }

[[attack]]
name = "inverter"
params = { epochs = 2 }
"""


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, each worker gets its share of the cores as torch's intra-op
    threads: two workers of two threads each on 2 cores spend much of their time in
    OpenMP barriers, waiting for a thread the other worker holds. (Jobs a test runs
    through the CLI pin their own threads, bench.core.threads.)"""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // workers))


SLOW_S = 10.0  # a test whose call takes longer belongs in the slow lane (pyproject.toml)
_unmarked_slow: list[tuple[float, str]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Note each test that ran over SLOW_S without the `slow` marker (under pytest-xdist
    this runs in the controller, on the workers' reports)."""
    if report.when == "call" and report.duration > SLOW_S and "slow" not in report.keywords:
        _unmarked_slow.append((report.duration, report.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name the unmarked slow tests, so `make test` stays the fast lane: a report, not a
    failure (a loaded machine stretches every test)."""
    if _unmarked_slow:
        terminalreporter.write_sep("-", f"tests over {SLOW_S:.0f} s without @pytest.mark.slow")
        for seconds, nodeid in sorted(_unmarked_slow, reverse=True):
            terminalreporter.write_line(f"{seconds:6.1f}s {nodeid}")


@pytest.fixture
def tiny_suite(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY_SUITE)
    return path


def cli_env(cwd: Path, **more: str) -> dict[str, str]:
    """The environment a test's `bench` process gets: this checkout first on the import
    path, and the artifact cache and kept answers in `cwd`/cache unless $BENCH_CACHE says
    otherwise, so every test's runs stay in its own directory (bench.data.locations)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), **more}
    env.setdefault("BENCH_CACHE", str(Path(cwd).absolute() / "cache"))
    return env


def run_cli(
    *args: str, cwd: Path, extra_path: tuple[Path, ...] = (), check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run `bench ARGS` in a fresh interpreter, as a user would, and capture its output.
    `extra_path` puts plug-in distributions (dist-info + module) on the import path."""
    env = cli_env(cwd, PYTHONPATH=os.pathsep.join(str(p) for p in (*extra_path, ROOT)))
    proc = subprocess.run(
        [*BENCH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"bench {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def cli_here(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run `bench ARGS` in this process (its exit code and captured output, as `run_cli`
    gives them; in `cwd` when given), for checks of what the CLI says that need no fresh
    interpreter: it saves the interpreter's start (about 4 s, importing torch). An
    exception the CLI does not turn into an exit propagates and fails the test."""
    from bench.cli.app import main

    if cwd is not None:
        monkeypatch.chdir(cwd)
        if "BENCH_CACHE" not in os.environ:
            monkeypatch.setenv("BENCH_CACHE", str(Path(cwd).absolute() / "cache"))
    monkeypatch.setattr("sys.argv", ["bench", *args])
    try:
        main()
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["bench", *args], code, out, err)


def start_cli(*args: str, cwd: Path) -> subprocess.Popen[str]:
    """Start `bench ARGS` in the background (for interrupting it), output captured."""
    env = cli_env(cwd)
    return subprocess.Popen(
        [*BENCH, *args],
        cwd=cwd,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # A shell's background job (`make test &`) inherits SIGINT ignored, and Python then
        # never installs its Ctrl-C handler: give the child the default disposition back.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def tiny_run_args(suite: Path, *extra: str) -> tuple[str, ...]:
    """`run` arguments for a suite file with store r.sqlite and leaderboard lb/ in cwd."""
    return (
        "run",
        "--suite",
        str(suite),
        "--store",
        "r.sqlite",
        "--out",
        "lb",
        "--no-progress",
        *extra,
    )


def stub_job(seed: int = 0, mechanism: str = "identity") -> Job:
    """A utility job with placeholder data and code hashes, for tests of the store, the
    runner and the report that never run it."""
    return Job(
        task="fmnist",
        task_options={},
        task_config={"name": "fmnist"},
        mechanism=mechanism,
        params={},
        attack=None,
        attack_params={},
        seed=seed,
        attack_samples=10,
        task_version="1",
        data_hash="d",
        code_hash="c",
    )


SMOKE_ARGS = ("run", "--suite", "smoke", "--store", "r.sqlite", "--out", "lb", "--no-progress")


def _shared_run(
    name: str,
    args: tuple[str, ...],
    tmp_path_factory: pytest.TempPathFactory,
    worker_id: str,
    files: dict[str, str] | None = None,
) -> tuple[Path, str]:
    """`bench ARGS` run once per test session in a directory holding `files`: a copy of that
    directory (store, leaderboard, artifact cache in cache/: `cli_env`) and the run's
    stdout.

    Under pytest-xdist (`make test`) the first worker that needs it runs it, under a lock, in
    the session's shared temporary directory; every worker then gets its own copy, since a
    test may re-run the suite in place."""

    def build(where: Path) -> str:
        for file_name, text in (files or {}).items():
            (where / file_name).write_text(text)
        return run_cli(*args, cwd=where, check=True).stdout

    mine = tmp_path_factory.mktemp(name)
    if worker_id == "master":  # one process: nothing to share
        return mine, build(mine)
    shared = tmp_path_factory.getbasetemp().parent  # this session's, common to its workers
    done = shared / f"{name}-run"
    with FileLock(str(shared / f"{name}-run.lock")):
        if not (done / "stdout.txt").is_file():
            building = shared / f"{name}-run.partial"
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir()
            (building / "stdout.txt").write_text(build(building))
            building.rename(done)
    shutil.copytree(done, mine, dirs_exist_ok=True)
    return mine, (mine / "stdout.txt").read_text()


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, str]:
    """The shipped smoke suite run once with the local executor (2 workers): its directory
    (store r.sqlite, leaderboard lb/) and stdout. Shared by the tests that compare to it."""
    return _shared_run("smoke", (*SMOKE_ARGS, "--jobs", "2"), tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> tuple[Path, str]:
    """The tiny suite (tiny.toml) run once, cold, in one process (`--jobs 1`): its directory
    (tiny.toml, store r.sqlite, leaderboard lb/, artifacts in cache/) and stdout. The tests
    that need a finished run start from a copy instead of running it again."""
    args = tiny_run_args(Path("tiny.toml"))
    return _shared_run("tiny", args, tmp_path_factory, worker_id, {"tiny.toml": TINY_SUITE})


@pytest.fixture(scope="module")
def one_thread() -> Iterator[None]:
    """Small ops on a shared, loaded 2-core machine run several times faster on one thread
    (OpenMP workers wait on each other); restored for the other modules. Use it per module
    with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
