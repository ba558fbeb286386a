"""What a `pip install` user needs for the documented test path: bench's dependencies do not
include pytest, so the `test` extra brings it, and `parametrize_with_checks` says in one line
what to install when it is missing, while `bench validate` (which imports the same module)
needs no pytest at all."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT

BLOCK_PYTEST = "import sys; sys.modules['pytest'] = None; "


def _run(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", BLOCK_PYTEST + code], env=env, capture_output=True, text=True
    )


def test_the_test_extra_brings_pytest_and_the_core_dependencies_do_not() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = [d.split(">")[0].split("=")[0].split("[")[0] for d in project["dependencies"]]
    assert "pytest" not in names
    assert any(d.startswith("pytest") for d in project["optional-dependencies"]["test"])


def test_the_checks_module_and_validation_import_without_pytest() -> None:
    done = _run("import bench.plugin.checks, bench.plugin.checks.validation; print('ok')")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def test_parametrize_with_checks_without_pytest_says_what_to_install() -> None:
    done = _run(
        "from bench.plugin.checks import parametrize_with_checks\n"
        "try:\n    parametrize_with_checks(['identity'])\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    assert done.returncode == 0, done.stderr
    message = done.stdout.strip()
    assert message.count("\n") == 0
    assert "pip install 'bench-privacy[test]'" in message


def test_with_pytest_it_still_parametrizes() -> None:
    from bench.plugin.checks import CHECKS, parametrize_with_checks

    mark = parametrize_with_checks(["identity"])
    assert isinstance(mark, pytest.MarkDecorator)
    assert len(mark.args[1]) == len(CHECKS)
