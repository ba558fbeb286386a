"""The kinds of job and the function that runs each, looked up by the job's attack: a
membership-inference attack (bench.plugin.membership.MembershipAttack, `job_kind =
"membership"`) runs as a membership job (membership.py); every other job, a utility job or a
reconstruction attack, as a reconstruction job (reconstruction.py). A new kind registers its
runner here (`register_job_kind`) and names it in its attack class's `job_kind`; the
executors call `run_job_of_kind` and know no kind by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bench.run.job import Job

JobRunner = Callable[["Job", Path, bool], Any]  # (job, cache root, progress) -> JobOutcome
DEFAULT_KIND = "reconstruction"
# kind -> "module:function" of its runner, imported when a job of that kind first runs
_RUNNERS: dict[str, str] = {
    "reconstruction": "bench.run.kinds.reconstruction:run_job",
    "membership": "bench.run.kinds.membership:run_membership_job",
}


def register_job_kind(kind: str, runner: str) -> None:
    """Run the jobs of attacks whose `job_kind` is `kind` with `runner` ("module:function")."""
    _RUNNERS[kind] = runner


def kind_of(job: Job) -> str:
    """The kind of `job`: its attack class's `job_kind` (utility jobs: reconstruction)."""
    if job.attack is None:
        return DEFAULT_KIND
    from bench.plugin.registry import ATTACKS

    return getattr(ATTACKS.get(job.attack), "job_kind", DEFAULT_KIND)


def runner_of(kind: str) -> JobRunner:
    """The function that runs jobs of `kind`."""
    module, _, name = _RUNNERS[kind].partition(":")
    return getattr(importlib.import_module(module), name)


def run_job_of_kind(job: Job, cache_root: Path, progress: bool = False) -> Any:
    """Run `job` with the runner of its kind; its JobOutcome."""
    return runner_of(kind_of(job))(job, cache_root, progress)
