"""The commands that compute nothing, each in a fresh interpreter as a user runs it, from a
directory outside the checkout (pytest-benchmark; `make bench-perf`). The timer is the CPU
time (user + sys) of the finished `bench` process, not the wall clock: what the command costs
whatever else the machine runs. Each should stay well under a second here.

`--version`, `list suites` and `reproduce` import neither torch nor numpy; `list
mechanisms`, `status` and `run --dry-run` answer from what the first call kept (its
listing, its checks, the suite's job list: bench.report.tools.status_cache), so the first
call, untimed, lists the jobs (`status`: every shipped suite's, about 20 s, hence slow)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOARD = ROOT / "leaderboards" / "smoke" / "leaderboard.json"


def children_cpu() -> float:
    """User + sys seconds of this process's finished children (the benchmark's timer)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _bench(*args: str, cwd: Path, env: dict[str, str]) -> str:
    """stdout of `bench ARGS` in a fresh Python with this checkout first on the path."""
    env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
    code = "import sys; from bench.cli.app import main; sys.argv[0] = 'bench'; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return proc.stdout


CASES = [
    (("--version",), "bench"),
    (("list", "suites"), "suite"),
    (("list", "tracks"), ""),
    (("list", "mechanisms"), "alibi"),
    (("run", "--suite", "smoke", "--dry-run"), "smoke:"),
    (("reproduce", "posthoc"), "boards:"),
    (("compare", str(BOARD), str(BOARD), "--no-cost"), ""),
]


@pytest.mark.benchmark(group="cli-start", timer=children_cpu)
@pytest.mark.parametrize(
    ("args", "first_word"),
    CASES,
    ids=["version", "list-suites", "list-tracks", "list-mechanisms", "dry-run", "reproduce",
         "compare"],
)  # fmt: skip
def test_a_command_that_computes_nothing(benchmark, tmp_path, args, first_word) -> None:
    env = {"BENCH_CACHE": str(tmp_path / "cache")}
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    first = _bench(*args, cwd=scratch, env=env)  # untimed: keeps what the next ones reuse
    out = benchmark.pedantic(
        _bench, args=args, kwargs={"cwd": scratch, "env": env}, rounds=5, iterations=1
    )
    assert out == first and out.startswith(first_word)
    assert list(scratch.iterdir()) == []  # nothing written where it was called


@pytest.mark.benchmark(group="cli-start", timer=children_cpu)
@pytest.mark.slow
def test_status_asked_again(benchmark, tmp_path) -> None:
    """`bench status` over every shipped suite once its checks are kept (the first call,
    untimed, lists every suite's jobs: about 20 s here)."""
    env = {"BENCH_CACHE": str(tmp_path / "cache")}
    first = _bench("status", cwd=tmp_path, env=env)
    out = benchmark.pedantic(
        _bench, args=("status",), kwargs={"cwd": tmp_path, "env": env}, rounds=5, iterations=1
    )
    assert out == first and "no board" not in out.splitlines()[1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache"]
