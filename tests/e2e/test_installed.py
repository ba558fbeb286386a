"""An installed bench (a wheel of this checkout in a fresh virtual environment) called from an
empty directory outside any checkout gives the answers the checkout gives inside it (`list`,
`status`, `reproduce`, `run --dry-run`: the committed boards ship in the wheel), says which
boards it read, and leaves the directory empty (its kept answers go to the platform's cache
directory, here a temporary one)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from bench.data.locations import data_dir
from tests.conftest import ROOT

SOURCES = ("bench", "mechanisms", "attacks")
FILES = ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "build_boards.py")
BOARD_FILES = ("leaderboard.json", "reproduction.json")
COMMANDS = (
    ("list", "suites"),
    ("list", "tracks"),
    ("list", "mechanisms"),
    ("list", "tasks"),
    ("status",),
    ("reproduce", "posthoc"),
    ("run", "--suite", "smoke", "--dry-run", "--store", "/nonexistent/results.sqlite"),
)  # the dry run against no store: a checkout's own .bench/ store would change its counts


def _source_copy(to: Path) -> Path:
    """What a wheel is built from (the packages, the project files, the committed boards'
    JSON), copied so that the build's own files (build/, *.egg-info) stay out of the
    checkout."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in SOURCES:
        shutil.copytree(ROOT / name, to / name, ignore=ignore)
    for name in FILES:
        shutil.copy2(ROOT / name, to / name)
    for name in BOARD_FILES:
        for board in (ROOT / "leaderboards").glob(f"*/{name}"):
            (to / "leaderboards" / board.parent.name).mkdir(parents=True, exist_ok=True)
            shutil.copy2(board, to / "leaderboards" / board.parent.name / name)
    return to


def _install(tmp: Path) -> Path:
    """A virtual environment holding the wheel alone, the test interpreter's packages (torch
    and the rest) on its path through a .pth file; its `bench` script."""
    source = _source_copy(tmp / "src")
    wheels = tmp / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels),
                    str(source)], check=True, capture_output=True)  # fmt: skip
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # The test interpreter's site-packages as a plain path: its .pth files (this checkout's
    # editable install among them) are not read from there, so `bench` is the wheel's.
    Path(purelib, "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wheel = next(wheels.glob("*.whl"))
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "--no-index",
                    str(wheel)], check=True, capture_output=True)  # fmt: skip
    return venv / "bin" / "bench"


def _answers(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[tuple[str, ...], str]:
    """Each command's stdout, its `boards:` line (which differs by design) left out."""
    out = {}
    for args in COMMANDS:
        proc = subprocess.run([*argv, *args], cwd=cwd, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, (args, proc.stderr)
        lines = proc.stdout.splitlines()
        said = [line for line in lines if line.startswith("boards: ")]
        assert len(said) <= 1, args
        out[args] = "\n".join(line for line in lines if not line.startswith("boards: "))
        out[(*args, "boards")] = said[0] if said else ""
    return out


def test_an_installed_copy_answers_as_the_checkout_and_leaves_nothing(tmp_path: Path) -> None:
    bench = _install(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "BENCH_CACHE")}
    env["BENCH_DATA"] = str(data_dir())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    installed = subprocess.run(
        [str(bench.parent / "python"), "-c", "import bench; print(bench.__file__)"],
        cwd=scratch, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert str(tmp_path / "venv") in installed  # the wheel's bench, not the checkout's

    outside = _answers([str(bench)], scratch, {**env, "XDG_CACHE_HOME": str(tmp_path / "xdg1")})
    inside_env = {**env, "XDG_CACHE_HOME": str(tmp_path / "xdg2"), "PYTHONPATH": str(ROOT)}
    inside = _answers([sys.executable, "-m", "bench.cli.app"], ROOT, inside_env)

    assert list(scratch.iterdir()) == []  # nothing written where it was called
    for args in COMMANDS:
        assert outside[args] == inside[args], args
    boards = outside[("status", "boards")]
    assert boards.startswith("boards: ")
    assert boards.endswith("bench/_boards (the installed package)")
    assert inside[("status", "boards")] == f"boards: {ROOT / 'leaderboards'} (the checkout)"
    assert "no board" not in outside[("status",)].splitlines()[0]  # the boards were found
    assert any((tmp_path / "xdg1" / "bench-privacy").iterdir())  # the kept answers went here


@pytest.fixture(autouse=True)
def _no_checkout_files_written():
    """The build happens in a copy: the checkout gets no build/ or *.egg-info from it."""
    before = {p.name for p in ROOT.iterdir()}
    yield
    assert {p.name for p in ROOT.iterdir()} <= before | {".pytest_cache"}
