"""The house's layout: every family folder says which paper it implements and names its
entry points, so a newcomer finds a mechanism from its folder's docstring."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import bench.certify
import mechanisms
from bench.plugin.registry import MECHANISMS


def _subpackages(package) -> list[str]:
    return [
        info.name
        for info in pkgutil.iter_modules(package.__path__, prefix=f"{package.__name__}.")
        if info.ispkg
    ]


@pytest.mark.parametrize("name", _subpackages(mechanisms) + _subpackages(bench.certify))
def test_every_family_folder_has_a_docstring(name: str) -> None:
    doc = importlib.import_module(name).__doc__ or ""
    assert len(doc.split()) >= 20, f"{name} needs a docstring: paper, entry points, siblings"


def test_every_mechanism_lives_in_a_family_that_names_it() -> None:
    for mech in MECHANISMS.names():
        module = MECHANISMS.get(mech).__module__
        parts = module.split(".")
        assert parts[0] == "mechanisms" and len(parts) == 3, f"{mech} is not in a family: {module}"
        family = importlib.import_module(".".join(parts[:2]))
        assert f"`{mech}`" in (family.__doc__ or ""), f"{family.__name__} does not name {mech}"


def test_the_run_command_is_a_short_caller_of_the_public_api() -> None:
    """`bench run` parses options and hands the suite to bench.api (plan, run, publish): its
    body does not grow a second run path."""
    import inspect

    import bench.cli.app

    source = inspect.getsource(bench.cli.app.run)
    assert len(source.splitlines()) < 40
    helpers = inspect.getsource(bench.cli.app._plan) + inspect.getsource(
        bench.cli.app._run_and_publish
    )
    for call in ("api.plan(", "api.run(", "api.publish("):
        assert call in helpers
