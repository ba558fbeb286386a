"""The two test lanes: `make test` skips the tests marked slow, `make test-slow` runs only
them, and CI runs both, so a slow test is never a test that nobody runs."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


def _recipe(makefile: str, target: str) -> list[str]:
    """The command lines of `target`'s recipe (tab-indented lines after `target:`)."""
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)*)", makefile, re.MULTILINE)
    assert match, f"the Makefile has no {target} target"
    return [line.strip() for line in match.group(1).splitlines()]


def test_make_test_is_the_fast_lane_and_make_test_slow_the_rest() -> None:
    makefile = (ROOT / "Makefile").read_text()
    pytest_line = re.search(r"^PYTEST := (.*)$", makefile, re.MULTILINE)
    assert pytest_line and "pytest" in pytest_line.group(1)
    assert '$(PYTEST) -m "not slow"' in _recipe(makefile, "test")
    assert "$(PYTEST) -m slow" in _recipe(makefile, "test-slow")


def test_ci_runs_both_lanes() -> None:
    commands = [
        line.strip()
        for line in (ROOT / ".ci" / "run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert "make test" in commands and "make test-slow" in commands


def test_the_slow_marker_is_registered() -> None:
    # An unregistered marker is only a warning: a typo (`@pytest.mark.slwo`) would put a
    # slow test in the fast lane without a word.
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^\s*"slow: ', pyproject, re.MULTILINE)
    assert "--strict-markers" in pyproject


def test_every_end_to_end_test_is_in_the_slow_lane() -> None:
    # tests/e2e/conftest.py marks its folder's tests `slow` (they carry no marker of their
    # own): the fast lane deselects every one of them, so the slow lane has them all.
    collect = ["--collect-only", "-q", "-p", "no:cacheprovider", "-m", "not slow", "tests/e2e"]
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *collect],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    last = proc.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"no tests collected \(\d+ deselected\) in .*", last), proc.stdout
