"""What the commands that compute nothing are made of (the CLI, where bench reads and writes,
the kept answers, the catalogue, the estimates, the progress display) lies outside every
job's code version: changing how bench lists, finds or shows things re-runs no job."""

from __future__ import annotations

from pathlib import Path

from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
from bench.run.plan import code_files_of
from tests.conftest import ROOT

COMMAND_CODE = (
    "bench/cli",
    "bench/core/places.py",
    "bench/report/tools",
    "bench/suite/catalog.py",
    "bench/run/warm.py",
    "bench/run/progress.py",
)


def test_no_job_draws_on_the_commands_code() -> None:
    files: set[Path] = set()
    for task in ("fmnist", "adult"):
        for mechanism in MECHANISMS.names():
            for attack in (None, *ATTACKS.names()):
                classes = [TASKS.get(task), MECHANISMS.get(mechanism)]
                classes += [ATTACKS.get(attack)] if attack else []
                for audited in (False, True):
                    files |= code_files_of(*classes, audited=audited)
    drawn = {path.resolve().relative_to(ROOT).as_posix() for path in files}
    assert drawn, "no job code found"
    for part in COMMAND_CODE:
        assert not [f for f in drawn if f == part or f.startswith(part + "/")], part
