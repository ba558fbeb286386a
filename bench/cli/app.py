"""The `bench` command line: list, run, failures, leaderboard, status, reproduce, profile,
compare, validate.

User mistakes (`BenchError`, and usage errors) print one line on stderr and exit 2; a run
in which jobs failed lists them on stderr and exits 1 (`bench failures` shows their
tracebacks); an interrupted run exits 130. Either resumes when the same command is run
again.
"""

from __future__ import annotations

import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench import __version__
from bench.cli.data import data_app
from bench.cli.options import (
    DEFAULT_STORE,
    AddressOpt,
    AttackOpt,
    BoardOutOpt,
    DeviceOpt,
    DryRunOpt,
    ExecutorOpt,
    JobsOpt,
    MaxFailuresOpt,
    MechanismOpt,
    ProgressOpt,
    SeedsOpt,
    StoreOpt,
    SuiteOpt,
    TaskOpt,
)
from bench.core.errors import BenchError, ConfigError, JobsFailedError
from bench.core.preflight import (
    MAX_SEEDS,
    board_dir,
    check_dir_target,
    check_file_target,
    during_run,
)
from bench.data.locations import cache_dir

if TYPE_CHECKING:
    from bench.api import RunPlan
    from bench.report.tools.status import BoardStatus
    from bench.report.tools.status_cache import Checked
    from bench.run.executors import Executor
    from bench.run.plan import Job
    from bench.run.runner import FailedJob
    from bench.store.results import ResultStore
    from bench.suite.read import Suite, SuiteSource

app = typer.Typer(
    help="Benchmark and attack-evaluation suite for inference-time privacy mechanisms.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain click-style usage errors: no boxes in logs
)

INCONCLUSIVE_EXIT = 3  # `bench validate`: no check failed, but the audit had too little power
app.add_typer(data_app, name="data")


def _cache_root(store: Path) -> Path:
    """The artifact cache directory; one that is not a directory, or that cannot be created
    or written, is refused (one line, exit 2) before any job runs."""
    root = cache_dir(store)
    check_dir_target(root, "artifact cache (BENCH_CACHE)")
    return root


def _print_version(value: bool) -> None:
    """`bench --version`: the version and the hash of every source file of the project."""
    if value:
        from bench.core.project_hash import project_code_hash  # torch-free: answers in < 1 s

        typer.echo(f"bench {__version__} (code {project_code_hash()})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and the code hash, then exit.",
        ),
    ] = False,
) -> None:
    """Benchmark and attack-evaluation suite for inference-time privacy mechanisms."""


def _echo_params(cls: type) -> None:
    """The component's parameter declaration (bench.plugin.params): name, type, default, range
    and allowed values."""
    for spec in cls.param_specs().values():
        typer.echo(f"{'':16s}   {spec.describe()}")


@app.command("list")
def list_cmd(
    kind: Annotated[str, typer.Argument(help="tasks, mechanisms, attacks, metrics or suites")],
    params: Annotated[
        bool,
        typer.Option("--params", help="Also list each mechanism's or attack's typed parameters."),
    ] = False,
) -> None:
    """List registered components of one kind."""
    if kind == "suites":  # read from the suite files and boards alone: nothing to import
        _list_suites()
        return
    from bench.metrics import METRICS
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS

    registries = {"tasks": TASKS, "mechanisms": MECHANISMS, "attacks": ATTACKS}
    if kind in registries:
        for name in registries[kind].names():
            cls = registries[kind].get(name)
            doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
            if kind == "tasks":  # the modality decides which mechanisms and attacks apply
                from bench.data.embedded import task_data_status

                status = task_data_status(name)
                doc = f"[{getattr(cls, 'modality', '?')}; {status}] {doc}"
            if getattr(cls, "paper", ""):
                doc = f"{doc} Paper: {cls.paper}"
            typer.echo(f"{name:16s} {doc}")
            if params and kind != "tasks":
                _echo_params(cls)
    elif kind == "metrics":
        for spec in METRICS.values():
            typer.echo(f"{spec.name:16s} {spec.better:6s}-is-better  {spec.description}")
    else:
        raise ConfigError(
            f"cannot list '{kind}'; choose tasks, mechanisms, attacks, metrics or suites"
        )


def _list_suites() -> None:
    """Every shipped suite: version, the jobs of its committed board, what it needs that a
    fresh machine lacks, and its whole description (wrapped, never cut)."""
    import shutil
    import textwrap

    from bench.suite.catalog import committed_boards, suite_entry
    from bench.suite.read import suite_dir

    width = max(60, min(shutil.get_terminal_size((100, 24)).columns, 120))
    for path in sorted(suite_dir().glob("*.toml"), key=lambda p: p.stem):
        entry = suite_entry(path, committed_boards())
        jobs = f"{entry.jobs} jobs" if entry.jobs is not None else "no committed board"
        needs = f" · needs {', '.join(entry.needs)}" if entry.needs else ""
        typer.echo(f"{entry.name} (v{entry.version}; {jobs}{needs})")
        typer.echo(textwrap.fill(entry.description, width, initial_indent="    ",
                                 subsequent_indent="    "))  # fmt: skip


@app.command()
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
) -> None:
    """Run a suite's pending jobs, then write its leaderboard when every job is stored. A job
    that raises, or whose worker process dies (--jobs > 1), fails alone: the others run on
    (up to --max-failures failed jobs), and the run ends listing the failed jobs (exit 1);
    the same command then runs only those."""
    if not dry_run:  # at once: a FIFO store would block the open forever
        _check_store(store)
    source = _suite_source(suite)  # read and parsed once (None: the plan says why not)
    filters = {"task": task, "mechanism": mechanism, "attack": attack}
    key = None if dry_run else _plan_key(source, seeds, device, executor)
    if key is not None and _warm_rerun(key, store, out, filters):
        return  # nothing to do, known without importing torch
    runner = _executor(executor, jobs, address)
    planned = _plan(source or suite, seeds, device, executor, filters)
    if dry_run:
        _print_plan(planned.suite.name, planned.selected, store)
        return
    # What the run writes is checked before the store is opened: a refusal leaves no file.
    cache_root, board = _cache_root(store), board_dir(out, planned.suite.name)
    check_dir_target(board, "leaderboard directory")
    kept = RunOptions(runner, progress, _lease_timeout(), max_failures, key)
    _run_and_publish(planned, store, cache_root, board, kept)


def _check_store(store: Path) -> None:
    """A store path that is not a regular file, or a store of another schema, is refused
    before the suite is expanded."""
    check_file_target(store, "store")
    from bench.store.guard import check_store

    check_store(store)


def _executor(name: str, workers: int, address: str | None) -> Executor:
    from bench.run.executors import make_executor

    return make_executor(name, workers=workers, address=address)


def _plan(
    suite: SuiteSource | str,
    seeds: int | None,
    device: str | None,
    executor: str,
    filters: dict[str, str | None],
) -> RunPlan:
    """The suite's jobs, filtered. A Ray cluster's workers may have the GPU the driver
    lacks: they check the device themselves (job_device), the driver does not."""
    from bench import api

    on_driver = executor != "ray"
    return api.plan(suite, seeds=seeds, device=device, check_device=on_driver, **filters)


def _lease_timeout() -> float:
    from bench.run.runner import lease_timeout_s

    return lease_timeout_s()


def _suite_source(suite: str) -> SuiteSource | None:
    """The suite file read and parsed once, or None when it cannot be: the full run then
    reports why in one line."""
    from bench.suite.read import read_suite

    try:
        return read_suite(suite)
    except BenchError:
        return None


def _plan_key(
    source: SuiteSource | None, seeds: int | None, device: str | None, executor: str
) -> str | None:
    """The key a local CPU run's plan is kept under, taken before the jobs are listed, from
    what they are listed from; None for another executor or device, or an unread suite."""
    if source is None or executor != "local" or device not in (None, "cpu"):
        return None
    from bench.run.warm import plan_key

    return plan_key(source, seeds, device)


def _warm_rerun(key: str, store: Path, out: Path | None, filters: dict[str, str | None]) -> bool:
    """Print what the run would print and say True when its plan (bench.run.warm) shows
    every job stored and the page current; False when the full run must decide."""
    from bench.run.warm import warm_rerun

    lines = warm_rerun(key, store=store, out=out, **filters)
    for line in lines or []:
        typer.echo(line)
    return lines is not None


@dataclass(frozen=True)
class RunOptions:
    """How `bench run` runs a plan: the executor, progress display, lease timeout, failure
    budget, and the key its plan is kept under (None: not kept)."""

    runner: Executor
    progress: bool
    lease_timeout: float
    max_failures: int | None
    key: str | None


def _run_and_publish(
    planned: RunPlan, store: Path, cache_root: Path, board: Path, options: RunOptions
) -> None:
    """Run the plan's pending jobs, then publish the board once every job is stored, its
    summary and page printed; the plan kept for a warm rerun."""
    from bench import api
    from bench.store.guard import open_store

    max_failures = options.max_failures
    db = open_store(store)
    try:
        try:
            summary = api.run(
                planned,
                db,
                cache_root,
                executor=options.runner,
                progress=options.progress,
                lease_timeout=options.lease_timeout,
                on_failure=_announce_failure,
                max_failures=max_failures,
            )
        except (OSError, sqlite3.Error) as exc:  # SQLite's errors are the store's
            where = f"store {store}" if isinstance(exc, sqlite3.Error) else "a file of the run"
            raise during_run(exc, where) from exc
        name = planned.suite.name
        failed = f", {len(summary.failed)} failed" if summary.failed else ""
        typer.echo(
            f"{name}: {summary.executed} jobs run, {summary.skipped} already stored, "
            f"{summary.total} selected{failed}"
        )
        if summary.failed:
            _report_failures(
                summary.failed,
                summary.executed + len(summary.failed),
                store,
                max_failures if summary.stopped else None,
            )
        try:
            # Nothing new ran: a leaderboard that already shows these results is left as is.
            paths = api.publish(planned, db, board, only_if_stale=summary.executed == 0)
            if paths is None:
                stored, total = api.stored_count(planned, db)
                typer.echo(
                    f"leaderboard not written: {stored} of {total} jobs of suite {name} are "
                    "stored; run without filters to complete it"
                )
                return
            lines = _summary_lines(paths[0], planned.suite)
            _refresh_site_index(board)
            if options.key is not None:
                _keep_plan(options.key, planned.suite, planned.jobs, db, store, board, lines)
        except (OSError, sqlite3.Error) as exc:
            raise during_run(exc, f"leaderboard {board}") from exc
        for line in lines:
            typer.echo(line)
        typer.echo(f"leaderboard: {_page_of(paths[0])}")
    except KeyboardInterrupt:
        print(
            "bench: interrupted; finished jobs are stored, run the same command to resume",
            file=sys.stderr,
        )
        raise typer.Exit(130) from None
    finally:
        db.close()


FAILURES_LISTED = 20  # failed jobs listed at the end of a run; `bench failures` has all


def _announce_failure(failed: FailedJob) -> None:
    """As a job fails: one line on stderr (above the progress bar), and the run goes on."""
    print(
        f"bench: job {failed.job.hash} failed ({failed.failure.line()}); continuing",
        file=sys.stderr,
    )


def _report_failures(
    failed: list[FailedJob], attempted: int, store: Path, stopped_at: int | None = None
) -> None:
    """The end of a run with failed jobs: one line each on stderr (hash, job, error), then
    raise JobsFailedError (exit 1) saying where the tracebacks are and how to resume;
    `stopped_at`: the run stopped at that many failures (--max-failures)."""
    stop = f"; stopped at --max-failures {stopped_at}" if stopped_at is not None else ""
    print(
        f"bench: {len(failed)} of {attempted} jobs failed (not stored: the same command "
        f"runs them again){stop}:",
        file=sys.stderr,
    )
    for item in failed[:FAILURES_LISTED]:
        print(f"  {item.line()}", file=sys.stderr)
    if len(failed) > FAILURES_LISTED:
        print(f"  ... and {len(failed) - FAILURES_LISTED} more", file=sys.stderr)
    raise JobsFailedError(
        f"{len(failed)} jobs failed, leaderboard not written; "
        f"tracebacks: bench failures --store {store}"
    )


@app.command()
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

    if not store.exists():
        raise BenchError(f"no result store at {store}; run `bench run --suite NAME` first")
    db = open_store(store)
    try:
        rows = db.failures()
    finally:
        db.close()
    for row in rows:
        what = describe_parts(
            row["task"],
            row["mechanism"],
            row["params"],
            row["attack"],
            row["attack_params"],
            row["seed"],
        )
        when = datetime.fromtimestamp(row["at"], UTC).isoformat(timespec="seconds")
        typer.echo(f"{row['job_hash']}  {what}: {row['error']}: {row['message']}")
        if tracebacks:
            typer.echo(f"    failed at {when} in runner {row['runner']}")
            typer.echo(indent(row["traceback"].rstrip(), "    "))
    typer.echo(f"{len(rows)} failed jobs not stored in {store}")


@app.command()
def leaderboard(
    suite: Annotated[
        str | None, typer.Option("--suite", help="Suite name or path to a .toml file.")
    ] = None,
    all_suites: Annotated[
        bool,
        typer.Option("--all", help="Write ROOT/index.html, the page listing every suite."),
    ] = False,
    root: Annotated[
        Path, typer.Option(help="Where the committed leaderboards live (with --all).")
    ] = Path("leaderboards"),
    seeds: Annotated[
        int | None, typer.Option(min=1, max=MAX_SEEDS, help="Seed count the run used.")
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    out: Annotated[Path | None, typer.Option(help="Output directory [leaderboards/SUITE].")] = None,
    device: DeviceOpt = None,
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Rewrite committed boards under ROOT (--suite's, or every one with --all) "
            "from their leaderboard.json with the current report code: no store, no rerun.",
        ),
    ] = False,
) -> None:
    """Write leaderboards/SUITE/ from the store (--suite), and/or the site index over every
    suite under ROOT (--all). `--device` names the device the run used (its jobs' hashes);
    this machine need not have it."""
    if suite is None and not all_suites:
        raise ConfigError("bench leaderboard needs --suite NAME, --all, or both")
    if refresh:
        from bench.report.board.write import refresh_board

        names = [suite] if suite else sorted(p.parent.name for p in root.glob("*/leaderboard.json"))
        for name in names:
            refresh_board(root / name)
            typer.echo(f"refreshed {root / name}")
        suite = None  # the boards are rewritten; only the site index (--all) is left
    if suite is not None:
        for path in _write_suite_from_store(suite, seeds, store, out, device):
            typer.echo(str(path))
    if all_suites:
        from bench.report.board.site import write_site_index

        typer.echo(str(write_site_index(root, *_shipped_suites()).resolve()))


def _shipped_suites() -> tuple[dict[str, str], dict[str, str]]:
    """Description and version of every shipped suite, for the site index."""
    from bench.suite.read import available_suites, load_suite

    suites = [load_suite(name) for name in available_suites()]
    return {s.name: s.description for s in suites}, {s.name: s.version for s in suites}


def _write_suite_from_store(
    suite: str, seeds: int | None, store: Path, out: Path | None, device: str | None
) -> list[Path]:
    from bench.api import expand_suite, write_suite_leaderboard
    from bench.store.guard import open_store

    loaded, all_jobs = expand_suite(suite, seeds=seeds, device=device, check_device=False)
    if not store.exists():
        raise BenchError(f"no result store at {store}; run `bench run --suite {suite}` first")
    db = open_store(store)
    try:
        missing = len({j.hash for j in all_jobs}) - len(
            db.stored_hashes([j.hash for j in all_jobs])
        )
        if missing:
            raise BenchError(
                f"{missing} of {len(all_jobs)} jobs of suite {loaded.name} are not in {store}; "
                f"run `bench run --suite {suite}` first"
            )
        board = board_dir(out, loaded.name)
        check_dir_target(board, "leaderboard directory")
        try:
            written = write_suite_leaderboard(loaded, all_jobs, db, board)
            site = _refresh_site_index(board)
        except OSError as exc:
            raise during_run(exc, f"leaderboard {board}") from exc
    finally:
        db.close()
    return [*written, site] if site else written


def _refresh_site_index(board_dir: Path) -> Path | None:
    """Rewrite the site index beside a suite's directory when bench wrote one there, so the
    list of suites never goes stale after a suite is re-run."""
    from bench.report.board.site import is_site_index, write_site_index

    if not is_site_index(board_dir.parent / "index.html"):
        return None
    return write_site_index(board_dir.parent, *_shipped_suites())


@app.command()
def profile(
    suite: Annotated[
        str | None,
        typer.Option(help="Only this suite's jobs at the current code (default: all stored)."),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    jobs: Annotated[
        int, typer.Option("--jobs", min=1, help="Workers for the wall-time estimate.")
    ] = 2,
    device: DeviceOpt = None,
) -> None:
    """Where the stored jobs' time went: per stage, task, kind of job, and the slowest jobs
    (with --suite: its jobs on --device, default the suite's, else cpu)."""
    from bench.report.tools.profile import profile_lines
    from bench.store.guard import open_store

    if not store.exists():
        raise BenchError(f"no result store at {store}; run `bench run --suite NAME` first")
    hashes = None
    if suite is not None:
        from bench.api import expand_suite

        _, suite_jobs = expand_suite(suite, device=device, check_device=False)
        hashes = list(dict.fromkeys(j.hash for j in suite_jobs))
    db = open_store(store)
    try:
        timings = db.timings(hashes)
    finally:
        db.close()
    if hashes is not None and not timings:
        raise BenchError(
            f"none of suite {suite}'s jobs at this code version are in {store}; "
            "drop --suite to profile everything stored there"
        )
    for line in profile_lines(timings, workers=jobs):
        typer.echo(line)


@app.command()
def status(
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", help="Only these suites (repeatable; default: every shipped one)."),
    ] = None,
    boards: Annotated[
        Path, typer.Option(help="Directory holding one leaderboard directory per suite.")
    ] = Path("leaderboards"),
    check: Annotated[
        bool, typer.Option(help="Exit 1 when a board is stale (for CI or a release check).")
    ] = False,
) -> None:
    """Which committed leaderboards are current: a board is stale when its suite's version
    or its jobs' code changed since it was written, so a re-run may give other numbers. A
    suite checked before with every input unchanged is answered from that check
    (bench.report.tools.status_cache), without importing the components."""
    from bench.report.tools.status import STALE, status_lines
    from bench.report.tools.status_cache import keep_checked, load_checked
    from bench.run.warm import inputs_key
    from bench.suite.read import available_suites, read_suite

    names = suite or available_suites()
    sources = [read_suite(name) for name in names]  # each file read and parsed once
    key = inputs_key(sources, None, None)
    kept = load_checked(DEFAULT_STORE, key) if key is not None else {}
    found = dict(kept)
    statuses = [
        _suite_status(name, source, boards, found)
        for name, source in zip(names, sources, strict=True)
    ]
    if key is not None and found != kept:
        keep_checked(DEFAULT_STORE, key, found)
    for line in status_lines(statuses):
        typer.echo(line)
    if check and any(s.state == STALE for s in statuses):
        raise typer.Exit(1)


def _suite_status(
    name: str, source: SuiteSource, boards: Path, found: dict[str, Checked]
) -> BoardStatus:
    """One suite's board status: from its check in `found` (kept from an earlier status with
    every input unchanged), else from listing its jobs; that check is added to `found` when
    all the suite's components are the project's own."""
    from bench.report.tools.status import board_status, has_board, no_board, unchecked
    from bench.report.tools.status_cache import Checked, suite_header

    header = suite_header(source)
    if header is not None and not has_board(boards / header.name):
        return no_board(header.name)  # a paper-scale suite never run here: nothing to list
    checked = found.get(name)
    if header is not None and checked is not None:
        board_dir = boards / header.name
        if checked.code_version is None:
            return unchecked(header.name, board_dir, checked.unchecked or "")
        return board_status(header.name, header.version, checked.code_version, board_dir)

    from bench.api import code_version_of, expand_suite
    from bench.core.project import in_project
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
    from bench.suite.read import load_suite

    loaded = load_suite(source)
    board_dir = boards / loaded.name
    if not has_board(board_dir):
        return no_board(loaded.name)
    try:
        _, jobs = expand_suite(source, check_device=False)
        checked = Checked(code_version_of(jobs))
    except BenchError as exc:  # e.g. its full-size data is not installed on this machine
        checked = Checked(None, str(exc))
    classes = [TASKS.get(e.name) for e in loaded.tasks]
    classes += [MECHANISMS.get(e.name) for e in loaded.mechanisms]
    classes += [ATTACKS.get(e.name) for e in loaded.attacks]
    if all(in_project(c.__module__) for c in classes):
        found[name] = checked
    if checked.code_version is None:
        return unchecked(loaded.name, board_dir, checked.unchecked or "")
    return board_status(loaded.name, loaded.version, checked.code_version, board_dir)


@app.command()
def reproduce(
    paper: Annotated[str, typer.Argument(help="Paper id: posthoc, dfil, lucid or ip.")],
    root: Annotated[Path, typer.Option(help="Where the committed leaderboards live.")] = Path(
        "leaderboards"
    ),
    docs_page: Annotated[
        Path | None,
        typer.Option("--docs", help="Also rewrite this doc page's reproduction block."),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Also rewrite each answering suite's reproduction.{md,json} and page from its "
            "committed leaderboard.json (after a reference table or rule change; no rerun).",
        ),
    ] = False,
) -> None:
    """A paper's headline numbers beside the committed bench rows that answer them, with
    computed verdicts (the table each suite's reproduction.md holds; that file and the page
    are written with the suite's leaderboard)."""
    from bench.report.reproduce.reproduction import paper_report, summary_line, total_counts

    reference_suites = {d["suite"] for d in paper_report(paper, root) if d["suite"]}
    if not any((root / s / "leaderboard.json").is_file() for s in reference_suites):
        # Nothing to compare: exit 1 (a missing result, like failed jobs), not "all not run".
        typer.echo(
            f"bench: error: no committed leaderboard of {paper}'s suites under {root} "
            f"({', '.join(sorted(reference_suites))}); pass --root LEADERBOARDS",
            err=True,
        )
        raise typer.Exit(1)
    docs = paper_report(paper, root)  # from leaderboard.json, which --write leaves as it is
    if write:
        from bench.report.board.write import refresh_reproductions

        for suite in sorted({d["suite"] for d in docs if d["suite"]}):
            if (root / suite / "leaderboard.json").is_file():
                refresh_reproductions(root / suite)
                _refresh_site_index(root / suite)  # its verdict counts changed too
    for doc in docs:
        typer.echo(f"{doc['suite'] or '(no bench suite)'}: {doc['summary']}")
        for cell in doc["cells"]:
            b = cell["bench"]
            bench = "—" if b is None else f"{b['value']:.4g} [{b['ci'][0]:.4g}, {b['ci'][1]:.4g}]"
            paper_value = "—" if cell["paper"] is None else f"{cell['paper']:.4g}"
            flags = ", ".join(b["flags"]) if b and b["flags"] else ""
            typer.echo(
                f"  {cell['source']:<14} {cell['id']:<44} {cell['metric']:<16} "
                f"{cell['class']:<10} paper {paper_value:<8} bench {bench:<28} "
                f"{cell['verdict']}" + (f" [{flags}]" if flags else "")
            )
        for trend in doc["trends"]:
            ratio = "" if trend.get("ratio") is None else f" (effect ratio {trend['ratio']:.2f})"
            typer.echo(f"  trend {trend['id']:<48} {trend['verdict']}{ratio}")
    typer.echo(f"{paper}: {summary_line(total_counts(docs))}")
    if docs_page is not None:
        from bench.report.reproduce.reproduction import docs_block, replace_docs_block

        if not docs_page.is_file():
            raise ConfigError(f"no doc page at {docs_page}")
        text = replace_docs_block(docs_page.read_text(), docs_block(paper, root))
        docs_page.write_text(text)
        typer.echo(f"updated {docs_page}")


@app.command("attack-report")
def attack_report(
    suite: Annotated[
        str, typer.Option(help="Suite whose committed leaderboard runs both attack sets.")
    ] = "attacks",
    root: Annotated[Path, typer.Option(help="Where the committed leaderboards live.")] = Path(
        "leaderboards"
    ),
    docs_page: Annotated[
        Path | None,
        typer.Option("--docs", help="Also rewrite this doc page's attack-strength block."),
    ] = None,
) -> None:
    """Which attack is the worst case per mechanism setting, before and after the stronger
    attacks, from a committed leaderboard: writes ROOT/SUITE/attack-strength.{md,json}."""
    from bench.report.tools.attack_strength import docs_block, replace_docs_block, write_report

    board = root / suite
    if not (board / "leaderboard.json").is_file():
        raise ConfigError(
            f"no committed leaderboard at {board / 'leaderboard.json'}; run "
            f"`bench run --suite {suite}` and `bench leaderboard --suite {suite}` first"
        )
    for path in write_report(board):
        typer.echo(str(path))
    if docs_page is not None:
        if not docs_page.is_file():
            raise ConfigError(f"no doc page at {docs_page}")
        docs_page.write_text(replace_docs_block(docs_page.read_text(), docs_block(board)))
        typer.echo(f"updated {docs_page}")


def _print_plan(suite: str, jobs: list[Job], store: Path) -> None:
    """`bench run --dry-run`: counts per (task, mechanism, attack) of what would run, and an
    estimate from the store's own timings of the same kinds of job."""
    from collections import Counter

    from bench.run.runner import job_kind, pending_jobs
    from bench.store.guard import open_store

    db = open_store(store) if store.exists() else None
    try:
        pending = pending_jobs(jobs, db)
        durations = db.mean_durations() if db else {}
    finally:
        if db:
            db.close()
    from bench.report.tools.estimate import committed_job_seconds
    from bench.suite.catalog import committed_boards

    board = committed_boards() / suite
    from_board = {k: v for k, v in committed_job_seconds(board).items() if k not in durations}
    durations = {**from_board, **durations}
    unique = len({j.hash for j in jobs})
    typer.echo(
        f"{suite}: {unique} jobs selected, {unique - len(pending)} stored, {len(pending)} would run"
    )
    counts = Counter(job_kind(j) for j in pending)
    total, unknown = 0.0, 0
    for kind, n in sorted(counts.items()):
        mean = durations.get(kind)
        total += (mean or 0.0) * n
        unknown += n if mean is None else 0
        estimate = f"~{mean * n:,.0f} s" if mean is not None else "no timing stored"
        typer.echo(f"  {' / '.join(kind):60s} {n:5d} jobs  {estimate}")
    if pending and unknown == len(pending):
        typer.echo("estimate: none yet (no job of these kinds is in the store or its board)")
        return
    hint = f"; {unknown} jobs have no stored timing" if unknown else ""
    used = {job_kind(j) for j in pending} & set(from_board)
    source = (
        f"; {len(used)} kinds timed from the committed board {board} (stage timings: shared "
        "artifacts count in every job, so high where jobs share them)"
        if used
        else ""
    )
    typer.echo(f"estimate: ~{total / 60:,.1f} min of job time (divide by --jobs){hint}{source}")


def _summary_lines(board: Path, suite: Suite) -> list[str]:
    """The end of a run: each setting's utility and strongest attack."""
    import json

    from bench.api import task_utility_metrics
    from bench.plugin.registry import MECHANISMS
    from bench.report.board.summary import summary_lines

    rows = json.loads(board.read_text())["rows"]
    defaults = {
        m: dict(getattr(MECHANISMS.get(m), "defaults", {}) or {})
        for m in {r["mechanism"] for r in rows}
    }
    return summary_lines(rows, defaults, task_utility_metrics(suite))


def _page_of(board: Path) -> Path:
    """Where to look: the suite's page, else its leaderboard directory."""
    page = board.parent / "index.html"
    return page.resolve() if page.exists() else board.parent.resolve()


def _keep_plan(
    key: str,
    suite: Suite,
    jobs: list[Job],
    db: ResultStore,
    store: Path,
    board_dir: Path,
    summary: list[str],
) -> None:
    """Record this finished run's plan (bench.run.warm) when the page on disk shows exactly
    its stored results and every component is the project's own (a plug-in's files are not
    in the plan's key)."""
    from bench.api import board_inputs
    from bench.core.project import in_project
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
    from bench.report.board.html import inputs_stamp, report_stamp
    from bench.run.warm import Plan, save_plan, times_digest

    classes = [TASKS.get(j.task) for j in jobs] + [MECHANISMS.get(j.mechanism) for j in jobs]
    classes += [ATTACKS.get(j.attack) for j in jobs if j.attack is not None]
    in_tree = all(in_project(c.__module__) for c in classes)
    # A suite's `device = "auto"` turns into a GPU once one appears: CPU suites only.
    if not in_tree or suite.device not in (None, "cpu") or any(j.device != "cpu" for j in jobs):
        return
    stamps = [inputs_stamp(board_inputs(suite, jobs, db)), report_stamp()]
    page = board_dir / "index.html"
    if not page.is_file() or not all(s in page.read_text() for s in stamps):
        return
    hashes = sorted({j.hash for j in jobs})
    plan = Plan(
        suite=suite.name,
        jobs=[(j.hash, j.task, j.mechanism, j.attack) for j in jobs],
        stored=times_digest(db.created_times(hashes)),
        stamps=stamps,
        summary=summary,
    )
    save_plan(store, key, plan)


@app.command()
def compare(
    baseline: Annotated[Path, typer.Argument(help="Baseline leaderboard.json")],
    candidate: Annotated[Path, typer.Argument(help="Candidate leaderboard.json")],
    tolerance: Annotated[
        list[str] | None,
        typer.Option(
            help="Relative tolerance: '0.05' for all metrics, 'mse=0.1' for one (repeatable)."
        ),
    ] = None,
    cost_tolerance: Annotated[
        float, typer.Option(help="Relative tolerance of timing metrics.")
    ] = 0.5,
    exact: Annotated[
        bool,
        typer.Option(help="Also fail when any non-timing metric differs at all (value or CI)."),
    ] = False,
    cost: Annotated[
        bool,
        typer.Option(
            help="Compare timings (default; left out anyway when the boards come from "
            "different machines)."
        ),
    ] = True,
    ignore_param: Annotated[
        list[str] | None,
        typer.Option(
            "--ignore-param",
            help="Leave this mechanism parameter out of the rows' identity on both boards "
            "(repeatable): matches a board written before a parameter existed. NAME=VALUE "
            "leaves it out only where it holds VALUE (its default).",
        ),
    ] = None,
) -> None:
    """Exit 1 when a metric of the candidate got worse than the baseline beyond tolerance
    (with --exact: when any non-timing number differs); boards of two suites are refused.
    Both boards must follow the leaderboard JSON Schema (exit 2 naming the first violation)."""
    from bench.report.board.load import load_leaderboard
    from bench.report.board.schema_check import check_schema
    from bench.report.tools.compare import compare as compare_boards
    from bench.report.tools.compare import parse_tolerances, without_params

    default, per_metric = parse_tolerances(tolerance or [])
    boards = []
    for path in (baseline, candidate):
        board = load_leaderboard(path)
        check_schema(board, path)  # after load: a missing file or bad JSON says so first
        boards.append(without_params(board, ignore_param or []))
    report = compare_boards(
        *boards,
        tolerance=0.05 if default is None else default,
        metric_tolerances=per_metric,
        cost_tolerance=cost_tolerance,
        exact=exact,
        cost=cost,
    )
    typer.echo(report.format())
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def validate(
    mechanism: Annotated[str, typer.Argument(help="Registered name or module:Class.")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="Mechanism parameter KEY=VALUE (repeatable), e.g. eps=2.0."),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(help="Task to validate on (small subset); default by modality: fmnist, spam."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the fit, the releases and the audit.")] = 0,
    draws: Annotated[
        int | None,
        typer.Option(
            min=1000,
            help="Audit evaluation draws per input (selection: a sixteenth); default: "
            "planned from the claim to refute 1.25x its eps in 95% of seeds, within budget.",
        ),
    ] = None,
    fit_budget: Annotated[float, typer.Option(help="Fit time budget in seconds.")] = 300.0,
    min_power: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Power the audit needs (its chance of refuting 1.25x the claimed eps at the "
            "draws used) for a pass to count; below it the verdict is INCONCLUSIVE.",
        ),
    ] = 0.8,
    allow_inconclusive: Annotated[
        bool,
        typer.Option(help="Exit 0 on an INCONCLUSIVE verdict (it is still printed)."),
    ] = False,
) -> None:
    """Check a mechanism's contract, then audit its privacy claim. Exit 1 when a check
    fails; exit 3 when none fails but the audit is inconclusive (too little power to have
    caught a violation; --allow-inconclusive: exit 0); else 0."""
    from bench.certify.audit.progress import AuditProgress
    from bench.plugin.checks.validation import parse_params, prepare, run_checks

    progress = AuditProgress()  # on stderr: stdout keeps the report alone
    mut = prepare(
        mechanism,
        parse_params(param or []),
        task,
        seed,
        cache_root=_cache_root(DEFAULT_STORE),
        fit_budget_s=fit_budget,
        audit_options={"progress": progress} | ({} if draws is None else {"n_draws": draws}),
    )
    try:
        report = run_checks(mut, min_power=min_power)
    finally:
        progress.close()
    typer.echo(report.format())
    if not report.ok:
        raise typer.Exit(1)
    raise typer.Exit(INCONCLUSIVE_EXIT if report.inconclusive and not allow_inconclusive else 0)


def main() -> None:
    """Entry point: run the app, turning user errors (bench's own and click's usage errors)
    into one line and exit code 2, failed jobs into exit code 1 (listed by `run`), and
    Ctrl-C into one line and exit code 130."""
    from typer._click.exceptions import NoArgsIsHelpError

    try:
        code = app(standalone_mode=False)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except NoArgsIsHelpError as exc:  # `bench` or a group without a command: its help
        print(exc.ctx.get_help() if exc.ctx else "bench --help")
        sys.exit(2)
    except typer.TyperException as exc:  # click's usage errors, one line instead of three
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"bench: error: {' '.join(message.split())} (see --help)", file=sys.stderr)
        sys.exit(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        print("bench: interrupted; finished jobs are stored, rerun to resume", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
