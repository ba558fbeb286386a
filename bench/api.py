"""bench's run path, the one the CLI and the tests take: plan a suite (its jobs, listed once),
run the pending ones, publish its leaderboard; `run_suite` does all three with everything a
run checks and writes around them (the preflight, the warm rerun, the site index, the kept
plan), and `bench run` is a thin caller of it.

    from bench.api import run_suite
    outcome = run_suite("smoke")          # same as `bench run --suite smoke`
    print(*outcome.lines, sep="\\n")

Heavy modules (torch, the harness, the report) are imported inside the functions that need
them, so a warm rerun, which answers from the kept plan, never imports torch.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.cpu_math import pin_cpu_math
from bench.core.errors import BenchError, ConfigError, JobsFailedError, did_you_mean
from bench.core.preflight import check_dir_target, check_file_target, during_run

if TYPE_CHECKING:
    from bench.run.executors import Executor
    from bench.run.job import Job
    from bench.run.runner import FailedJob, RunSummary
    from bench.store.results import ResultStore
    from bench.suite.read import Suite, SuiteSource

DEFAULT_STORE = Path(".bench/results.sqlite")
FAILURES_LISTED = 20  # failed jobs a failed run lists; `bench failures` has all


@dataclass(frozen=True)
class RunPlan:
    """A suite and its jobs: all of them (its leaderboard needs every one) and the ones a
    run with filters selects."""

    suite: Suite
    jobs: list[Job]
    selected: list[Job]


@dataclass(frozen=True)
class RunOutcome:
    """What `run_suite` did: the run's counts (None when a kept plan answered: nothing ran),
    the leaderboard files it wrote or found current (empty when the run was filtered and
    some jobs of the suite are not stored), and the lines a run prints at its end."""

    suite: str
    summary: RunSummary | None
    paths: list[Path] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class RunFailedError(JobsFailedError):
    """Jobs of a run failed: the others are stored and the leaderboard is not written; the
    same call runs only the failed ones again. `details` lists them, one line each."""

    def __init__(
        self,
        counts: str,
        failed: list[FailedJob],
        attempted: int,
        store: Path,
        stopped_at: int | None,
    ) -> None:
        stop = f"; stopped at --max-failures {stopped_at}" if stopped_at is not None else ""
        self.details = [
            f"bench: {len(failed)} of {attempted} jobs failed (not stored: the same command "
            f"runs them again){stop}:",
            *(f"  {item.line()}" for item in failed[:FAILURES_LISTED]),
        ]
        if len(failed) > FAILURES_LISTED:
            self.details.append(f"  ... and {len(failed) - FAILURES_LISTED} more")
        self.failed = failed
        self.counts = counts  # the run's count line, printed as a finished run prints it
        super().__init__(
            f"{len(failed)} jobs failed, leaderboard not written; "
            f"tracebacks: bench failures --store {store}"
        )


@dataclass(frozen=True)
class RunOptions:
    """How a run runs its plan: the executor, progress display, lease timeout, failure
    budget, what to call as each job fails, and the --job-timeout (bench.run.timeouts)."""

    runner: Executor
    progress: bool
    lease_timeout: float
    max_failures: int | None
    on_failure: Callable[[FailedJob], None] | None
    job_timeout: float | None = None


def plan(
    suite: str | SuiteSource,
    *,
    seeds: int | None = None,
    device: str | None = None,
    check_device: bool = True,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
) -> RunPlan:
    """The jobs of a suite (bench.run.publish.expand_suite) and those the filters keep (an
    attack filter keeps the utility jobs its rows need); a filter naming nothing in the
    suite is a one-line ConfigError."""
    from bench.run.publish import expand_suite
    from bench.suite.read import selects

    loaded, jobs = expand_suite(suite, seeds=seeds, device=device, check_device=check_device)
    for kind, value in (("task", task), ("mechanism", mechanism), ("attack", attack)):
        if value is not None and not any(getattr(j, kind) == value for j in jobs):
            names = sorted({str(getattr(j, kind)) for j in jobs if getattr(j, kind) is not None})
            raise ConfigError(
                f"suite {loaded.name} has no {kind} '{value}'{did_you_mean(value, names)}"
            )
    selected = [
        j for j in jobs if selects((j.task, j.mechanism, j.attack), task, mechanism, attack)
    ]
    return RunPlan(loaded, jobs, selected)


def run(
    planned: RunPlan,
    store: ResultStore,
    cache_root: Path,
    *,
    executor: Executor | None = None,
    progress: bool = False,
    lease_timeout: float | None = None,
    on_failure: Callable[[FailedJob], None] | None = None,
    max_failures: int | None = None,
    job_timeout: float | None = None,
) -> RunSummary:
    """Run the plan's selected jobs that `store` lacks (bench.run.runner.run_jobs), each
    within its time limit (bench.run.timeouts.run_timeouts: `job_timeout` seconds, else the
    suite's, else the default from the job's kind)."""
    from bench.run.runner import run_jobs
    from bench.run.timeouts import run_timeouts

    pin_cpu_math()
    return run_jobs(
        planned.selected,
        store,
        cache_root,
        executor=executor,
        progress=progress,
        lease_timeout=lease_timeout,
        on_failure=on_failure,
        max_failures=max_failures,
        limit_of=run_timeouts(planned.suite, store, job_timeout).limit,
    )


def stored_count(planned: RunPlan, store: ResultStore) -> tuple[int, int]:
    """(jobs of the suite stored, jobs of the suite), each job counted once."""
    unique = list(dict.fromkeys(j.hash for j in planned.jobs))
    return len(store.stored_hashes(unique)), len(unique)


def publish(
    planned: RunPlan, store: ResultStore, out_dir: Path, *, only_if_stale: bool = False
) -> list[Path] | None:
    """Write the suite's leaderboard (bench.run.publish.write_suite_leaderboard) once every
    job of the suite is stored, and refresh the site index beside it when bench wrote one
    there; None while some jobs are not stored (a filtered run)."""
    from bench.run.publish import refresh_site_index, write_suite_leaderboard

    stored, total = stored_count(planned, store)
    if stored < total:
        return None
    paths = write_suite_leaderboard(
        planned.suite, planned.jobs, store, out_dir, only_if_stale=only_if_stale
    )
    site = refresh_site_index(Path(out_dir))
    return [*paths, site] if site is not None and not only_if_stale else paths


def check_store_path(store_path: Path) -> None:
    """A store path that is not a regular file, or a store of another schema, is refused in
    one line before anything is expanded or written."""
    from bench.store.guard import check_store

    check_file_target(store_path, "store")
    check_store(store_path)


def checked_cache_root(store_path: Path) -> Path:
    """The artifact cache directory of a store; one that is not a directory, or that cannot
    be created or written, is refused in one line before any job runs."""
    from bench.core.places import artifact_cache_dir

    root = artifact_cache_dir(store_path)
    check_dir_target(root, "artifact cache (BENCH_CACHE)")
    return root


def _read_or_none(suite: str | SuiteSource) -> SuiteSource | None:
    """The suite file read and parsed once, or None when it cannot be: planning then says
    why in one line."""
    from bench.suite.read import SuiteSource, read_suite

    if isinstance(suite, SuiteSource):
        return suite
    try:
        return read_suite(suite)
    except BenchError:
        return None


def _warm_outcome(
    key: str | None,
    source: SuiteSource | None,
    store_path: Path,
    out_dir: Path | None,
    filters: dict[str, str | None],
) -> RunOutcome | None:
    """What a run prints when its kept plan (bench.run.warm) shows nothing to do and its
    board current and valid; None when the full run must decide (no plan, a name no board
    can have, anything changed)."""
    from bench.core.preflight import SUITE_NAME
    from bench.run.boards import suite_board

    name = source.raw.get("name") if source is not None else None
    if key is None or not isinstance(name, str) or not SUITE_NAME.fullmatch(name):
        return None
    from bench.run.warm import warm_rerun

    try:
        board, note = suite_board(out_dir, name, source)
    except BenchError:
        return None
    lines = warm_rerun(key, store=store_path, out=board, **filters)
    if lines is None:
        return None
    return RunOutcome(name, None, [], [*lines, *([note] if note else [])])


def _plan_key(
    source: SuiteSource | None, seeds: int | None, device: str | None, executor: object
) -> str | None:
    """The key a local CPU run's plan is kept under, taken before the jobs are listed, from
    what they are listed from; None for another executor or device, or an unread suite."""
    if source is None or executor != "local" or device not in (None, "cpu"):
        return None
    from bench.run.warm import plan_key

    return plan_key(source, seeds, device)


def run_suite(
    suite: str | SuiteSource,
    *,
    store_path: Path = DEFAULT_STORE,
    out_dir: Path | None = None,
    executor: str | Executor = "local",
    workers: int = 1,
    address: str | None = None,
    seeds: int | None = None,
    device: str | None = None,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
    progress: bool = False,
    max_failures: int | None = None,
    on_failure: Callable[[FailedJob], None] | None = None,
    job_timeout: float | None = None,
) -> RunOutcome:
    """Run a suite's pending jobs and publish its leaderboard once every job is stored.

    In order: the store path is checked; a local CPU run whose kept plan (bench.run.warm)
    shows every job stored and the page current answers at once, without importing torch;
    else the suite is planned on `device` (default: the suite's, else the CPU) with the
    filters, the cache and board directories are checked, the pending jobs run on
    `executor` ("local" with `workers` processes, "ray" at `address`, or an Executor), the
    board is written (left alone when nothing ran and it is current) with the site index
    beside it, and the plan is kept for the next warm rerun. Every job runs within its
    time limit (bench.run.timeouts). A suite read from a file of one's own writes its board
    under .bench/leaderboards/ unless `out_dir` says where (bench.run.boards), never over a
    committed board. RunFailedError when jobs failed: the others are stored and running it
    again runs only the failed ones.
    """
    from bench.core.preflight import checked_timeout

    filters = {"task": task, "mechanism": mechanism, "attack": attack}
    if job_timeout is not None:  # refused before anything is read or written
        checked_timeout(job_timeout, "--job-timeout")
    check_store_path(store_path)  # at once: a FIFO store would block the open forever
    source = _read_or_none(suite)
    key = _plan_key(source, seeds, device, executor)
    warm = _warm_outcome(key, source, store_path, out_dir, filters)
    if warm is not None:
        return warm
    from bench.run.executors import make_executor
    from bench.run.runner import lease_timeout_s

    runner = make_executor(executor, workers, address) if isinstance(executor, str) else executor
    # A Ray cluster's workers may have the GPU the driver lacks: they check the device
    # themselves (bench.core.device.job_device), the driver does not.
    planned = plan(source or suite, seeds=seeds, device=device, check_device=executor != "ray",
                   **filters)  # fmt: skip
    from bench.run.boards import suite_board

    # What the run writes is checked before the store is opened: a refusal leaves no file.
    cache_root = checked_cache_root(store_path)
    board, note = suite_board(out_dir, planned.suite.name, source)
    check_dir_target(board, "leaderboard directory")
    timeout = lease_timeout_s()  # a bad BENCH_LEASE_TIMEOUT is refused before the store opens
    outcome = _run_and_publish(
        planned, store_path, cache_root, board, key,
        RunOptions(runner, progress, timeout, max_failures, on_failure, job_timeout),
    )  # fmt: skip
    if note:
        outcome.lines.append(note)
    return outcome


def _run_and_publish(
    planned: RunPlan,
    store_path: Path,
    cache_root: Path,
    board: Path,
    key: str | None,
    options: RunOptions,
) -> RunOutcome:
    """Run the plan's pending jobs, then publish the board when every job is stored, with
    its summary lines, and keep the plan under `key`."""
    from bench.run.publish import keep_plan, page_of, summary_lines
    from bench.store.guard import open_store

    name = planned.suite.name
    db = open_store(store_path)
    try:
        try:
            summary = run(planned, db, cache_root, executor=options.runner,
                          progress=options.progress, lease_timeout=options.lease_timeout,
                          on_failure=options.on_failure, max_failures=options.max_failures,
                          job_timeout=options.job_timeout)  # fmt: skip
        except (OSError, sqlite3.Error) as exc:  # SQLite's errors are the store's
            where = f"store {store_path}" if isinstance(exc, sqlite3.Error) else "a file of the run"
            raise during_run(exc, where) from exc
        failed = f", {len(summary.failed)} failed" if summary.failed else ""
        lines = [
            f"{name}: {summary.executed} jobs run, {summary.skipped} already stored, "
            f"{summary.total} selected{failed}"
        ]
        if summary.failed:
            stopped_at = options.max_failures if summary.stopped else None
            attempted = summary.executed + len(summary.failed)
            raise RunFailedError(lines[0], summary.failed, attempted, store_path, stopped_at)
        try:
            # Nothing new ran: a leaderboard that already shows these results is left as is.
            paths = publish(planned, db, board, only_if_stale=summary.executed == 0)
            if paths is None:
                stored, total = stored_count(planned, db)
                lines.append(
                    f"leaderboard not written: {stored} of {total} jobs of suite {name} are "
                    "stored; run without filters to complete it"
                )
                return RunOutcome(name, summary, [], lines)
            done = summary_lines(paths[0], planned.suite)
            if key is not None:
                keep_plan(key, planned.suite, planned.jobs, db, store_path, board, done)
        except (OSError, sqlite3.Error) as exc:
            raise during_run(exc, f"leaderboard {board}") from exc
    finally:
        db.close()
    return RunOutcome(name, summary, paths, [*lines, *done, f"leaderboard: {page_of(paths[0])}"])


def publish_from_store(
    suite: str,
    *,
    store_path: Path = DEFAULT_STORE,
    out_dir: Path | None = None,
    seeds: int | None = None,
    device: str | None = None,
) -> list[Path]:
    """`bench leaderboard --suite`: write a suite's board (and the site index beside it)
    from a store that holds every one of its jobs; a missing job is a one-line error."""
    from bench.run.boards import suite_board
    from bench.run.publish import expand_suite
    from bench.store.guard import open_store

    source = _read_or_none(suite)
    loaded, all_jobs = expand_suite(source or suite, seeds=seeds, device=device,
                                    check_device=False)  # fmt: skip
    if not store_path.exists():
        raise BenchError(f"no result store at {store_path}; run `bench run --suite {suite}` first")
    planned = RunPlan(loaded, all_jobs, all_jobs)
    db = open_store(store_path)
    try:
        stored, total = stored_count(planned, db)
        if stored < total:
            raise BenchError(
                f"{total - stored} of {total} jobs of suite {loaded.name} are not in "
                f"{store_path}; run `bench run --suite {suite}` first"
            )
        board = suite_board(out_dir, loaded.name, source)[0]
        check_dir_target(board, "leaderboard directory")
        try:
            return publish(planned, db, board) or []
        except OSError as exc:
            raise during_run(exc, f"leaderboard {board}") from exc
    finally:
        db.close()


def dry_run(
    suite: str | SuiteSource,
    *,
    store_path: Path = DEFAULT_STORE,
    seeds: int | None = None,
    device: str | None = None,
    check_device: bool = True,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
    key: str | None = None,
) -> list[str]:
    """`bench run --dry-run`: `dry_run_lines` of the planned jobs (their list kept under
    `key`, bench.run.warm.plan_key, for the next dry run), or, for a suite that may
    expand to more than bench.run.dryrun.LIST_LIMIT jobs, its jobs counted per kind
    without listing them (seconds instead of minutes near the job bound)."""
    from bench.run.dryrun import counted_lines, too_many_to_list
    from bench.suite.read import load_suite

    filters = {"task": task, "mechanism": mechanism, "attack": attack}
    source = _read_or_none(suite)
    loaded = load_suite(source or suite)
    if too_many_to_list(loaded, seeds):
        return counted_lines(loaded, store_path, seeds, device, check_device, **filters)
    planned = plan(source or suite, seeds=seeds, device=device, check_device=check_device,
                   **filters)  # fmt: skip
    return dry_run_lines(planned, store_path, key)


def dry_run_lines(planned: RunPlan, store_path: Path, key: str | None = None) -> list[str]:
    """`bench run --dry-run`: counts per (task, mechanism, attack) of what would run, and an
    estimate from the store's own timings of the same kinds of job, else the committed
    boards' (bench.report.tools.estimate); a plug-in's job is unknown until one has run.
    With `key` (bench.run.warm.plan_key) the suite's job list is kept, when every component
    is the project's own, so the next dry run with the same inputs lists no job
    (`kept_dry_run_lines`)."""
    from bench.core.project import in_project
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
    from bench.report.tools.estimate import PlannedJob
    from bench.report.tools.status_cache import keep_record

    plugin: dict[tuple[str, str], bool] = {}

    def is_plugin(kind: str, name: str | None) -> bool:
        if name is None:
            return False
        if (kind, name) not in plugin:
            registry = {"task": TASKS, "mechanism": MECHANISMS, "attack": ATTACKS}[kind]
            plugin[kind, name] = not in_project(registry.get(name).__module__)
        return plugin[kind, name]

    def planned_job(job: Job) -> PlannedJob:
        flag = any(
            is_plugin(kind, name)
            for kind, name in (("task", job.task), ("mechanism", job.mechanism),
                               ("attack", job.attack))
        )  # fmt: skip
        return PlannedJob.of(job, flag)

    every = {job.hash: planned_job(job) for job in planned.jobs}
    if key is not None and not any(p.plugin for p in every.values()):
        jobs = [every[j.hash].to_list() for j in planned.jobs]
        keep_record("jobs", key, {"suite": planned.suite.name, "jobs": jobs})
    selected = [every[j.hash] for j in planned.selected]
    return _dry_run_report(planned.suite.name, selected, store_path)


def kept_dry_run_lines(
    key: str, store_path: Path, task: str | None, mechanism: str | None, attack: str | None
) -> list[str] | None:
    """`dry_run_lines` from the job list kept under `key`, without importing a component;
    None when there is none, or a filter names nothing in it (the full dry run then says
    so)."""
    from bench.report.tools.estimate import PlannedJob
    from bench.report.tools.status_cache import load_record
    from bench.suite.read import selects

    kept = load_record("jobs", key)
    try:
        name = str(kept["suite"])
        jobs = [PlannedJob.from_list(fields) for fields in kept["jobs"]]
    except (TypeError, KeyError, ValueError):
        return None
    for part, value in (("task", task), ("mechanism", mechanism), ("attack", attack)):
        if value is not None and not any(getattr(j, part) == value for j in jobs):
            return None
    selected = [j for j in jobs if selects((j.task, j.mechanism, j.attack), task, mechanism,
                                           attack)]  # fmt: skip
    return _dry_run_report(name, selected, store_path)


def _dry_run_report(suite: str, selected: list, store_path: Path) -> list[str]:
    """The dry run's lines for the `selected` jobs (PlannedJob) against the store at
    `store_path`, read read-only (nothing is created): the counts and estimates
    (bench.report.tools.estimate.plan_lines), then the line naming the boards read."""
    from bench.core.places import boards_root
    from bench.report.tools.estimate import plan_lines, read_store

    stored, durations = read_store(store_path, [j.hash for j in selected])
    seen: set[str] = set()
    pending = []
    for job in selected:
        if job.hash not in stored and job.hash not in seen:
            seen.add(job.hash)
            pending.append(job)
    boards = boards_root()
    lines = plan_lines(suite, selected, pending, durations, boards.path / suite, boards.path)
    return [*lines, boards.line()]


def board_statuses(names: list[str], boards: Path) -> list:
    """`bench status`: each suite's committed board (under `boards`) against the suite and
    code of now. A suite checked before with every input unchanged is answered from that
    check (bench.report.tools.status_cache), without importing its components."""
    from bench.report.tools.status_cache import keep_checked, load_checked
    from bench.run.warm import inputs_key
    from bench.suite.read import read_suite

    sources = [read_suite(name) for name in names]  # each file read and parsed once
    key = inputs_key(sources, None, None)
    kept = load_checked(key) if key is not None else {}
    found = dict(kept)
    statuses = [
        _suite_status(name, source, boards, found)
        for name, source in zip(names, sources, strict=True)
    ]
    if key is not None and found != kept:
        keep_checked(key, found)
    return statuses


def _suite_status(name: str, source: SuiteSource, boards: Path, found: dict) -> object:
    """One suite's board status: from its check in `found` (kept from an earlier status with
    every input unchanged), else from listing its jobs; that check is added to `found` when
    all the suite's components are the project's own."""
    from functools import partial

    from bench.report.tools.status import (
        board_status,
        has_board,
        no_board,
        plugin_code_moved,
        unchecked,
    )
    from bench.report.tools.status_cache import Checked, suite_header

    header = suite_header(source)
    if header is not None and not has_board(boards / header.name):
        return no_board(header.name)  # a paper-scale suite never run here: nothing to list
    checked = found.get(name)
    if header is not None and checked is not None:
        board = boards / header.name
        if checked.code_version is None:
            return unchecked(header.name, board, checked.unchecked or "")
        return board_status(header.name, header.version, checked.code_version, board)

    from bench.core.project import in_project
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
    from bench.run.publish import code_version_of, expand_suite
    from bench.suite.read import load_suite

    loaded = load_suite(source)
    board = boards / loaded.name
    if not has_board(board):
        return no_board(loaded.name)
    jobs: list[Job] = []
    try:
        _, jobs = expand_suite(source, check_device=False)
        checked = Checked(code_version_of(jobs))
    except BenchError as exc:  # e.g. its full-size data is not installed on this machine
        checked = Checked(None, str(exc))
    named = [(e.name, TASKS.get(e.name)) for e in loaded.tasks]
    named += [(e.name, MECHANISMS.get(e.name)) for e in loaded.mechanisms]
    named += [(e.name, ATTACKS.get(e.name)) for e in loaded.attacks]
    plugins = {n for n, c in named if not in_project(c.__module__)}
    if not plugins:
        found[name] = checked
    if checked.code_version is None:
        return unchecked(loaded.name, board, checked.unchecked or "")
    moved = partial(plugin_code_moved, jobs=jobs, plugins=plugins) if plugins else None
    return board_status(loaded.name, loaded.version, checked.code_version, board, moved)


@dataclass(frozen=True)
class EvaluateOutcome:
    """What `evaluate` did: the run's counts, the files of the board that ranks the
    submitted settings among the committed track rows, and the lines it prints."""

    track: str
    mechanism: str
    summary: RunSummary
    paths: list[Path]
    lines: list[str]


def evaluate(
    mechanism: str,
    track: str,
    *,
    params: dict | None = None,
    grid: dict | None = None,
    store_path: Path = DEFAULT_STORE,
    out_dir: Path | None = None,
    boards: Path | None = None,
    executor: str | Executor = "local",
    workers: int = 1,
    address: str | None = None,
    progress: bool = False,
    max_failures: int | None = None,
    on_failure: Callable[[FailedJob], None] | None = None,
) -> EvaluateOutcome:
    """Run one mechanism's settings on a standard track (the same task, battery, seeds and
    scoring rule) and write a board that ranks them among the track's committed rows, which
    are reused, not re-run: refused in one line when the committed board is not current for
    today's code (bench.run.evaluate). `mechanism` is a registered name or `module:Class`;
    `params` its fixed parameters and `grid` sweeps of others, as in a suite file. The
    board goes to `out_dir` (default: .bench/boards/<track>+<mechanism> beside the store),
    never into the committed boards unless `out_dir` names them. The committed boards are
    read from `boards`, else found as `bench status` finds them (bench.core.places: the
    checkout's leaderboards/, else the copy installed with the package)."""
    from bench.core.places import boards_root
    from bench.run.evaluate import (
        current_track,
        ranked_board,
        standing_lines,
        submission_jobs,
        submission_suite,
    )
    from bench.run.executors import make_executor
    from bench.run.publish import page_of, summary_lines
    from bench.run.runner import lease_timeout_s
    from bench.store.guard import open_store
    from bench.suite.read import read_suite

    check_store_path(store_path)
    committed = boards_root(boards)
    entry = current_track(track, committed.path)
    suite = submission_suite(read_suite(track), mechanism, params or {}, grid or {})
    jobs = submission_jobs(entry, suite)
    slug = "".join(c if c.isalnum() or c in "-_." else "-" for c in mechanism)
    board = out_dir or store_path.parent / "boards" / f"{entry.suite.name}+{slug}"
    check_dir_target(board, "leaderboard directory")
    cache_root = checked_cache_root(store_path)
    runner = make_executor(executor, workers, address) if isinstance(executor, str) else executor
    planned = RunPlan(suite, jobs, jobs)
    db = open_store(store_path)
    try:
        summary = run(planned, db, cache_root, executor=runner, progress=progress,
                      lease_timeout=lease_timeout_s(), on_failure=on_failure,
                      max_failures=max_failures)  # fmt: skip
        counts = (
            f"{entry.suite.name} + {mechanism}: {summary.executed} jobs run, {summary.skipped} "
            f"already stored, {summary.total} selected; {len(entry.rows)} committed rows reused"
        )
        if summary.failed:
            stopped_at = max_failures if summary.stopped else None
            attempted = summary.executed + len(summary.failed)
            raise RunFailedError(counts, summary.failed, attempted, store_path, stopped_at)
        try:
            paths = ranked_board(entry, suite, jobs, db, board)
        except OSError as exc:
            raise during_run(exc, f"leaderboard {board}") from exc
    finally:
        db.close()
    mine = [line for line in summary_lines(paths[0], entry.suite) if mechanism in line]
    standings = standing_lines(paths[0], entry.suite, jobs)
    lines = [
        counts,
        *mine,
        "where each setting ranks (by utility, in the strictest privacy band it reaches):",
        *standings,
        f"ranked among the track: {page_of(paths[0])}",
        committed.line(),
    ]
    return EvaluateOutcome(entry.suite.name, mechanism, summary, paths, lines)
