"""The house's layout: every family folder says which paper it implements and names its
entry points, so a newcomer finds a mechanism from its folder's docstring."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import bench.certify
import mechanisms
from bench.plugin.registry import MECHANISMS
from tests.conftest import ROOT


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
    """`bench run` parses options and hands the suite to bench.api.run_suite, the one run
    path (preflight, warm rerun, plan, run, publish, site index): the command grows no second
    run path, and run_suite itself calls plan, run and publish."""
    import inspect

    import bench.api
    import bench.cli.run

    source = inspect.getsource(bench.cli.run.run)
    assert len(source.splitlines()) < 40
    assert "api.run_suite(" in source and "_dry_run(" in source  # the run, and --dry-run
    assert "api.dry_run(" in inspect.getsource(bench.cli.run._dry_run)
    assert "run_jobs" not in source and "write_suite_leaderboard" not in source
    path = "".join(
        inspect.getsource(f)
        for f in (bench.api.run_suite, bench.api._warm_outcome, bench.api._run_and_publish)
    )
    for call in ("plan(", "run(", "publish(", "warm_rerun(", "keep_plan("):
        assert call in path


def test_bench_has_at_most_five_top_level_modules() -> None:
    """bench/ is packages by subsystem; its top level keeps only the package file and the
    public run path."""
    top = sorted(p.name for p in (ROOT / "bench").glob("*.py"))
    assert len(top) <= 5, top
