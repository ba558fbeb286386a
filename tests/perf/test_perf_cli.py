"""Start-up time of the quick `bench` commands, each in a fresh interpreter as a user runs
it (pytest-benchmark; `make bench-perf`): `--version` and `list suites` import neither torch
nor numpy; `status`, asked again with nothing changed, answers from its kept checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench(*args: str, env: dict[str, str] | None = None) -> str:
    """stdout of `bench ARGS` in a fresh Python with this checkout first on the path."""
    env = {**os.environ, **(env or {}), "PYTHONPATH": str(ROOT)}
    code = "import sys; from bench.cli.app import main; sys.argv[0] = 'bench'; main()"
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=True
    )
    return proc.stdout


@pytest.mark.benchmark(group="cli-start")
@pytest.mark.parametrize(
    ("args", "first_word"),
    [(("--version",), "bench"), (("list", "suites"), "attacks")],
    ids=["version", "list-suites"],
)
def test_quick_command_in_a_fresh_process(benchmark, args: tuple[str, ...], first_word) -> None:
    out = benchmark.pedantic(_bench, args=args, rounds=5, iterations=1, warmup_rounds=1)
    assert out.split()[0] == first_word


@pytest.mark.benchmark(group="cli-start")
@pytest.mark.slow
def test_status_asked_again(benchmark, tmp_path) -> None:
    """`bench status` over every shipped suite once its checks are kept (the first call,
    untimed, lists every suite's jobs: about 20 s here)."""
    env = {"BENCH_CACHE": str(tmp_path / "cache")}
    first = _bench("status", env=env)
    out = benchmark.pedantic(_bench, args=("status",), kwargs={"env": env}, rounds=5)
    assert out == first
