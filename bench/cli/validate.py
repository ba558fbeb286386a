"""`bench validate`: a mechanism's contract checks, then the privacy audit of its claim."""

from __future__ import annotations

from typing import Annotated

import typer

from bench.api import DEFAULT_STORE, checked_cache_root

INCONCLUSIVE_EXIT = 3  # no check failed, but the audit had too little power


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
    from bench.cli.values import parse_params
    from bench.plugin.checks.validation import prepare, run_checks

    progress = AuditProgress()  # on stderr: stdout keeps the report alone
    mut = prepare(
        mechanism,
        parse_params(param or []),
        task,
        seed,
        cache_root=checked_cache_root(DEFAULT_STORE),
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
