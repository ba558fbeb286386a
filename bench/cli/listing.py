"""`bench list`: the registered tasks, mechanisms, attacks and metrics, and the shipped
suites (read from their files and boards alone: nothing imported)."""

from __future__ import annotations

from typing import Annotated

import typer

from bench.core.errors import ConfigError


def _echo_params(cls: type) -> None:
    """The component's parameter declaration (bench.plugin.params): name, type, default, range
    and allowed values."""
    for spec in cls.param_specs().values():
        typer.echo(f"{'':16s}   {spec.describe()}")


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
