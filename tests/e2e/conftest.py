"""Every test in this folder runs whole suites in fresh bench processes (resume after a kill,
Ray, plug-in families installed by entry point): each is marked `slow` here, so the folder
as a whole is in `make test-slow`'s lane and out of `make test`'s, without a marker per test.

Each also gets a 1,200 s timeout unless it sets its own. The project's 600 s (pyproject.toml)
counts a test's setup too, and here the setup may run a whole shared suite (the smoke run:
142 s alone on 2 cores, 159 s beside the other xdist worker) before a call that runs another
(the piped smoke run: 128 s alone, 189 s beside it), so 600 s left under two times the
measured time. The timeout is a guard against a hang, not a measure of speed."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
E2E_TIMEOUT_S = 1200


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the items collected from this folder `slow` (the hook sees the whole session's
    items, wherever its conftest lives)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.slow)
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(E2E_TIMEOUT_S))
