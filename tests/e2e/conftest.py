"""Every test in this folder runs whole suites in fresh bench processes (resume after a kill,
Ray, plug-in families installed by entry point): each is marked `slow` here, so the folder
as a whole is in `make test-slow`'s lane and out of `make test`'s, without a marker per test."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the items collected from this folder `slow` (the hook sees the whole session's
    items, wherever its conftest lives)."""
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.slow)
