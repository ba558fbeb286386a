"""`bench run` and `bench failures`: run a suite through bench.api.run_suite; list the jobs
whose last run failed, with their tracebacks."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
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
    """Run a suite's pending jobs, then write its leaderboard once every job is stored. A job
    that raises, dies or runs past --job-timeout fails alone (up to --max-failures of them):
    the run ends listing them (exit 1), and the same command then runs only those."""
    from bench import api

    filters = {"task": task, "mechanism": mechanism, "attack": attack}
    if dry_run:
        _echo(_dry_run(suite, store, seeds, device, executor, filters))
        return
    with _remembering_store(suite, store):
        try:
            outcome = api.run_suite(
                suite, store_path=store, out_dir=out, executor=executor, workers=jobs,
                address=address, seeds=seeds, device=device, progress=progress,
                max_failures=max_failures, on_failure=announce_failure, job_timeout=job_timeout,
                **filters,
            )  # fmt: skip
        except api.RunFailedError as failed:
            typer.echo(failed.counts)
            print(*failed.details, sep="\n", file=sys.stderr)
            raise
    _echo(outcome.lines)


def _dry_run(
    suite: str,
    store: Path,
    seeds: int | None,
    device: str | None,
    executor: str,
    filters: dict[str, str | None],
) -> list[str]:
    """`bench run --dry-run`: from the suite's kept job list when its inputs are unchanged
    (no component imported), else planned in full (bench.api.plan), keeping the list."""
    from bench import api

    key = _dry_run_key(suite, seeds, device, executor)
    lines = api.kept_dry_run_lines(key, store, **filters) if key else None
    if lines is None:
        lines = api.dry_run(suite, store_path=store, seeds=seeds, device=device,
                            check_device=executor != "ray", key=key, **filters)  # fmt: skip
    return lines


def _dry_run_key(suite: str, seeds: int | None, device: str | None, executor: str) -> str | None:
    """The key a dry run's job list is kept under (bench.run.warm.plan_key: everything the
    list is computed from), for local CPU runs of a suite that can be read; else None."""
    if executor != "local" or device not in (None, "cpu"):
        return None
    from bench.run.warm import plan_key
    from bench.suite.read import read_suite

    try:
        return plan_key(read_suite(suite), seeds, device)
    except BenchError:
        return None  # the full dry run says what is wrong with the suite


@contextmanager
def _remembering_store(suite: str, store: Path) -> Iterator[None]:
    """Record the store a run of `suite` wrote (it finished, jobs failed, or it was
    interrupted; not a run refused before it began), so that `bench leaderboard --suite`
    from the same directory finds it without --store."""
    from bench import api

    try:
        yield
    except (api.RunFailedError, KeyboardInterrupt, typer.Abort, typer.Exit):
        _remember_store(suite, store)
        raise
    _remember_store(suite, store)


def _remember_store(suite: str, store: Path) -> None:
    from bench.report.tools.status_cache import remember_store
    from bench.suite.read import read_suite

    if not Path(store).is_file():
        return
    try:
        name = str(read_suite(suite).raw.get("name", suite))
    except BenchError:
        return
    remember_store(name, Path(store))


def _echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


def announce_failure(failed: FailedJob) -> None:
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
