"""`bench run` and `bench failures`: run a suite through bench.api.run_suite; list the jobs
whose last run failed, with their tracebacks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.options import (
    DEFAULT_STORE,
    AddressOpt,
    AttackOpt,
    BoardOutOpt,
    DeviceOpt,
    DryRunOpt,
    ExecutorOpt,
    JobsOpt,
    JobTimeoutOpt,
    MaxFailuresOpt,
    MechanismOpt,
    ProgressOpt,
    SeedsOpt,
    StoreOpt,
    SuiteOpt,
    TaskOpt,
)
from bench.core.errors import BenchError

if TYPE_CHECKING:
    from bench.run.runner import FailedJob


def run(
    suite: SuiteOpt,
    task: TaskOpt = None,
    mechanism: MechanismOpt = None,
    attack: AttackOpt = None,
    seeds: SeedsOpt = None,
    store: StoreOpt = DEFAULT_STORE,
    jobs: JobsOpt = 1,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    out: BoardOutOpt = None,
    progress: ProgressOpt = True,
    dry_run: DryRunOpt = False,
    device: DeviceOpt = None,
    max_failures: MaxFailuresOpt = None,
    job_timeout: JobTimeoutOpt = None,
) -> None:
    """Run a suite's pending jobs, then write its leaderboard when every job is stored. A job
    that raises, whose worker process dies, or that runs past --job-timeout fails alone: the
    others run on (up to --max-failures failed jobs), the run ends listing the failed jobs
    (exit 1), and the same command then runs only those."""
    from bench import api

    filters = {"task": task, "mechanism": mechanism, "attack": attack}
    if dry_run:
        _echo(api.dry_run(suite, store_path=store, seeds=seeds, device=device,
                          check_device=executor != "ray", **filters))  # fmt: skip
        return
    try:
        outcome = api.run_suite(
            suite, store_path=store, out_dir=out, executor=executor, workers=jobs,
            address=address, seeds=seeds, device=device, progress=progress, **filters,
            max_failures=max_failures, on_failure=_announce_failure, job_timeout=job_timeout,
        )  # fmt: skip
    except api.RunFailedError as failed:
        typer.echo(failed.counts)
        print(*failed.details, sep="\n", file=sys.stderr)
        raise
    _echo(outcome.lines)


def _echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


def _announce_failure(failed: FailedJob) -> None:
    """As a job fails: one line on stderr (above the progress bar), and the run goes on."""
    print(f"bench: job {failed.job.hash} failed ({failed.failure.line()}); continuing",
          file=sys.stderr)  # fmt: skip


def failures(
    store: StoreOpt = DEFAULT_STORE,
    tracebacks: Annotated[
        bool, typer.Option(help="Print each failure's traceback under its line.")
    ] = True,
) -> None:
    """The jobs whose last run failed and that are still not stored: each one's error and,
    by default, its traceback (the last failure of each)."""
    from datetime import UTC, datetime
    from textwrap import indent

    from bench.run.runner import describe_parts
    from bench.store.guard import open_store

    if not Path(store).exists():
        raise BenchError(f"no result store at {store}; run `bench run --suite NAME` first")
    db = open_store(store)
    try:
        rows = db.failures()
    finally:
        db.close()
    for row in rows:
        what = describe_parts(
            row["task"], row["mechanism"], row["params"], row["attack"], row["attack_params"],
            row["seed"],
        )  # fmt: skip
        when = datetime.fromtimestamp(row["at"], UTC).isoformat(timespec="seconds")
        typer.echo(f"{row['job_hash']}  {what}: {row['error']}: {row['message']}")
        if tracebacks:
            typer.echo(f"    failed at {when} in runner {row['runner']}")
            typer.echo(indent(row["traceback"].rstrip(), "    "))
    typer.echo(f"{len(rows)} failed jobs not stored in {store}")
