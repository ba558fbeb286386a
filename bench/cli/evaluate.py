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
    boards: Annotated[Path, typer.Option(help="Where the committed track boards live.")] = Path(
        "leaderboards"
    ),
    jobs: JobsOpt = 1,
    progress: ProgressOpt = True,
) -> None:
    """Run MECHANISM's settings on a track (its task, battery, seeds and scoring rule) and
    rank them among the track's committed rows, which are reused, not re-run: refused when
    the committed board is not current for today's code (`bench status`)."""
    from bench import api
    from bench.plugin.checks.validation import parse_params

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


def parse_grid(specs: list[str]) -> dict[str, list[object]]:
    """`KEY=V1,V2,...` strings to a suite's `grid` table; each value read as --param reads
    one (a TOML value, else a plain string). Malformed specs: ConfigError."""
    from bench.core.errors import ConfigError
    from bench.plugin.checks.validation import parse_params

    grid: dict[str, list[object]] = {}
    for spec in specs:
        key, sep, text = (part.strip() for part in spec.partition("="))
        values = [v.strip() for v in text.split(",") if v.strip()]
        if not (sep and key and values):
            raise ConfigError(f"bad --grid {spec!r}: expected KEY=V1,V2,..., e.g. eps=1,10")
        if key in grid:
            raise ConfigError(f"bad --grid {spec!r}: {key!r} is given twice")
        grid[key] = [parse_params([f"v={v}"])["v"] for v in values]
    return grid
