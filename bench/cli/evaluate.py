"""`bench evaluate`: a mechanism's settings on a standard track, ranked among its committed
rows (bench.api.evaluate)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from bench.cli.options import DEFAULT_STORE, JobsOpt, ProgressOpt, StoreOpt
from bench.cli.run import announce_failure


def evaluate(
    mechanism: Annotated[str, typer.Argument(help="Registered name or module:Class.")],
    track: Annotated[str, typer.Option("--track", help="A standard track, e.g. track-fmnist.")],
    param: Annotated[
        list[str] | None,
        typer.Option("--param", help="Fixed parameter KEY=VALUE (repeatable), e.g. eps=2.0."),
    ] = None,
    grid: Annotated[
        list[str] | None,
        typer.Option(
            "--grid", help="A swept parameter KEY=V1,V2,... (repeatable), e.g. eps=1,10,100."
        ),
    ] = None,
    store: StoreOpt = DEFAULT_STORE,
    out: Annotated[
        Path | None, typer.Option(help="Board directory [.bench/boards/TRACK+MECHANISM].")
    ] = None,
    boards: Annotated[
        Path | None,
        typer.Option(
            help="Where the committed track boards live [the checkout's leaderboards/, else "
            "the boards installed with bench]."
        ),
    ] = None,
    jobs: JobsOpt = 1,
    progress: ProgressOpt = True,
) -> None:
    """Run MECHANISM's settings on a track (its task, battery, seeds and scoring rule) and
    rank them among the track's committed rows, which are reused, not re-run: refused when
    the committed board is not current for today's code (`bench status`)."""
    from bench import api
    from bench.cli.values import parse_grid, parse_params

    try:
        outcome = api.evaluate(
            mechanism, track, params=parse_params(param or []), grid=parse_grid(grid or []),
            store_path=store, out_dir=out, boards=boards, workers=jobs, progress=progress,
            on_failure=announce_failure,
        )  # fmt: skip
    except api.RunFailedError as failed:
        typer.echo(failed.counts)
        print(*failed.details, sep="\n", file=sys.stderr)
        raise
    for line in outcome.lines:
        typer.echo(line)
