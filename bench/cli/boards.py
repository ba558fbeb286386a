"""`bench leaderboard`, `status`, `profile` and `compare`: boards written from a store or
refreshed from their JSON, which committed boards are current, where a store's job time went,
and what moved between two boards."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.cli.options import DEFAULT_STORE, DeviceOpt, StoreOpt
from bench.core.errors import BenchError, ConfigError, UnknownNameError, did_you_mean
from bench.core.preflight import MAX_SEEDS

if TYPE_CHECKING:
    from bench.cli.kept import Answer


def leaderboard(
    suite: Annotated[
        str | None, typer.Option("--suite", help="Suite name or path to a .toml file.")
    ] = None,
    all_suites: Annotated[
        bool,
        typer.Option("--all", help="Write ROOT/index.html, the page listing every suite."),
    ] = False,
    root: Annotated[
        Path | None,
        typer.Option(
            help="Where the committed leaderboards live (with --all, --refresh) [the checkout's "
            "leaderboards/]."
        ),
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(min=1, max=MAX_SEEDS, help="Seed count the run used.")
    ] = None,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            help="SQLite result store [the one `bench run --suite SUITE` last used in this "
            f"directory, else {DEFAULT_STORE}].",
        ),
    ] = None,
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
    suite under ROOT (--all). Without --store, the store the same suite's `bench run` last
    wrote from this directory (said in the first line). `--device` names the device the run
    used (its jobs' hashes); this machine need not have it."""
    if suite is None and not all_suites:
        raise ConfigError("bench leaderboard needs --suite NAME, --all, or both")
    if refresh or all_suites:
        from bench.core.places import boards_root

        boards = boards_root(root).writable("bench leaderboard --refresh/--all")
    if refresh:
        from bench.report.board.write import refresh_board

        names = sorted(p.parent.name for p in boards.glob("*/leaderboard.json"))
        if suite is not None and suite not in names:
            raise UnknownNameError(
                f"no committed board of suite '{suite}' under {boards}"
                f"{did_you_mean(suite, names)}; committed: {', '.join(names)}"
            )
        for name in [suite] if suite else names:
            refresh_board(boards / name)
            typer.echo(f"refreshed {boards / name}")
        suite = None  # the boards are rewritten; only the site index (--all) is left
    if suite is not None:
        from bench.api import publish_from_store

        store = _store_of(suite, store)
        written = publish_from_store(suite, store_path=store, out_dir=out, seeds=seeds,
                                     device=device)  # fmt: skip
        for path in written:
            typer.echo(str(path))
    if all_suites:
        from bench.report.board.site import write_site_index
        from bench.run.publish import shipped_suites

        typer.echo(str(write_site_index(boards, *shipped_suites()).resolve()))


def _store_of(suite: str, store: Path | None) -> Path:
    """The store `bench leaderboard --suite` reads: --store, else the one the suite's last
    `bench run` here wrote (bench.report.tools.status_cache.last_store), else the default;
    said in one line when it is not the one named."""
    if store is not None:
        return store
    from bench.report.tools.status_cache import last_store
    from bench.suite.read import read_suite

    name = str(read_suite(suite).raw.get("name", suite))  # an unknown suite: one line here
    found = last_store(name)
    if found is None:
        return DEFAULT_STORE
    typer.echo(f"store: {found} (the last `bench run --suite {suite}` here)")
    return found


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
        from bench.run.publish import expand_suite

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


def status(
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", help="Only these suites (repeatable; default: every shipped one)."),
    ] = None,
    boards: Annotated[
        Path | None,
        typer.Option(
            "--root",
            "--boards",
            help="Directory holding one leaderboard directory per suite [the checkout's "
            "leaderboards/, else the boards installed with bench].",
        ),
    ] = None,
    check: Annotated[
        bool, typer.Option(help="Exit 1 when a board is stale (for CI or a release check).")
    ] = False,
) -> None:
    """Which committed leaderboards are current: a board is stale when its suite's version
    or its jobs' code changed since it was written, so a re-run may give other numbers. A
    suite checked before with every input unchanged is answered from that check
    (bench.report.tools.status_cache), without importing the components. The first line
    names the boards read."""
    from bench.api import board_statuses
    from bench.core.places import boards_root
    from bench.report.tools.status import STALE, status_lines
    from bench.suite.read import available_suites

    root = boards_root(boards)
    typer.echo(root.line())
    statuses = board_statuses(suite or available_suites(), root.path)
    for line in status_lines(statuses):
        typer.echo(line)
    if check and any(s.state == STALE for s in statuses):
        raise typer.Exit(1)


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
    Both boards must follow the leaderboard JSON Schema (exit 2 naming the first violation).
    Asked again about the same two files with the same options, the answer is the kept one
    (bench.cli.kept)."""
    from bench.cli.kept import answer_key, answered

    _check_metric_names(tolerance or [])
    options = [tolerance or [], cost_tolerance, exact, cost, ignore_param or []]
    key = answer_key("compare", options, [baseline, candidate], by_content=True)
    compute = partial(_compare, baseline, candidate, *options)
    answered(key, compute).emit()


def _compare(
    baseline: Path,
    candidate: Path,
    tolerance: list[str],
    cost_tolerance: float,
    exact: bool,
    cost: bool,
    ignore_param: list[str],
) -> Answer:  # the order of `compare`'s options
    """`bench compare`'s report and exit code (0: no regression, 1: a regression)."""
    from bench.cli.kept import Answer
    from bench.report.board.load import load_leaderboard
    from bench.report.board.schema_check import check_schema
    from bench.report.tools.compare import compare as compare_boards
    from bench.report.tools.compare import parse_tolerances, without_params

    default, per_metric = parse_tolerances(tolerance)
    boards = []
    for path in (baseline, candidate):
        board = load_leaderboard(path)
        check_schema(board, path)  # after load: a missing file or bad JSON says so first
        boards.append(without_params(board, ignore_param))
    report = compare_boards(
        *boards,
        tolerance=0.05 if default is None else default,
        metric_tolerances=per_metric,
        cost_tolerance=cost_tolerance,
        exact=exact,
        cost=cost,
    )
    return Answer(report.format().splitlines(), [], 0 if report.ok else 1)


def _check_metric_names(specs: list[str]) -> None:
    """A tolerance naming an unknown metric is one line with the nearest name."""
    if not any("=" in spec for spec in specs):
        return
    from bench.metrics import METRICS

    for spec in specs:
        name = spec.partition("=")[0].strip() if "=" in spec else ""
        if name and name not in METRICS:
            raise UnknownNameError(
                f"bad tolerance {spec!r}: unknown metric '{name}'"
                f"{did_you_mean(name, sorted(METRICS))} (bench list metrics)"
            )
