"""The command line's options, declared once: `bench run` and the commands that share its
options (--store, --device) read their names, help texts and limits from here."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from bench.api import DEFAULT_STORE as DEFAULT_STORE  # one default store for every command
from bench.core.preflight import MAX_SEEDS

StoreOpt = Annotated[Path, typer.Option("--store", help="SQLite result store.")]
DeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device",
        help="Where jobs run: cpu, cuda, cuda:N, mps or auto (CUDA, else MPS, else CPU); "
        "default: the suite's `device`, else cpu. Non-CPU jobs are other jobs (own hashes).",
    ),
]
SuiteOpt = Annotated[str, typer.Option("--suite", help="Suite name or path to a .toml file.")]
TaskOpt = Annotated[str | None, typer.Option(help="Only this task.")]
MechanismOpt = Annotated[str | None, typer.Option(help="Only this mechanism.")]
AttackOpt = Annotated[str | None, typer.Option(help="Only this attack (utility jobs are kept).")]
SeedsOpt = Annotated[
    int | None, typer.Option(min=1, max=MAX_SEEDS, help="Override the suite's seed count.")
]
JobsOpt = Annotated[int, typer.Option("--jobs", min=1, help="Worker processes (local).")]
ExecutorOpt = Annotated[str, typer.Option(help="Where jobs run: local or ray.")]
AddressOpt = Annotated[
    str | None, typer.Option(help="Ray cluster address; default: start a local Ray.")
]
BoardOutOpt = Annotated[
    Path | None, typer.Option(help="Leaderboard directory [leaderboards/SUITE].")
]
ProgressOpt = Annotated[bool, typer.Option(help="Show progress.")]
DryRunOpt = Annotated[
    bool, typer.Option(help="List what would run and estimate its time; run nothing.")
]
MaxFailuresOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Stop the run once this many jobs have failed (default: never)."),
]
JobTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--job-timeout",
        help="Seconds any job may run before it is stopped as a TimedOut failure; default: "
        "the suite's job_timeout, else max(30 min, 10 x the mean time of its kind of job).",
    ),
]
