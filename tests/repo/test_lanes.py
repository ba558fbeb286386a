"""The two test lanes: `make test` skips the tests marked slow, `make test-slow` runs only
them, and CI runs both, so a slow test is never a test that nobody runs."""

from __future__ import annotations

import re

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
