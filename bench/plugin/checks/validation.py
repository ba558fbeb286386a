"""`bench validate`: run every contract check of bench.plugin.checks, the privacy audit last, on
one mechanism and report each outcome: PASS, FAIL, XFAIL (a declared expected failure,
shown with its reason), XPASS (declared, but it passed) or SKIP (the audit tested nothing);
and the verdict: FAIL, else INCONCLUSIVE when no audit tested the claim or the audit lacked
the power to refute a violation, else PASS. A claim over training sets, which the input
audit cannot test, is audited by refitting (bench.certify.audit.training_sets), which
refutes or is inconclusive."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.core.errors import BenchError
from bench.plugin.checks import (
    CHECKS,
    CheckFailed,
    MechanismUnderTest,
    under_test,
)
from bench.plugin.checks.waivers import expected_failures_of
from bench.plugin.notions import notion_spec
from bench.report.board.audit_power import POWER_LEVEL as REPORT_POWER_LEVEL

Status = Literal["PASS", "FAIL", "XFAIL", "XPASS", "SKIP"]
AUDIT_CHECK = "check_privacy_audit"

# The power an audit needs for its pass to count: the chance, at the draws it used, of
# refuting a mechanism of the declared noise family at 1.25x the claimed eps (its `power`,
# bench.certify.audit.power). Below it a pass is "inconclusive": the audit would most
# likely have passed a mechanism that breaks its claim too. 0.8, the usual power asked of
# a statistical test; leaderboard audit cells use the same level (bench.report.board.audit_power).
POWER_LEVEL = REPORT_POWER_LEVEL


@dataclass(frozen=True)
class CheckOutcome:
    """One check's verdict, a one-line detail (note, failure or reason) and its time."""

    check: str
    status: Status
    detail: str
    seconds: float


@dataclass
class ValidationReport:
    """Every check's outcome for one mechanism; `ok` is False when any check FAILed."""

    mechanism: str
    task: str
    seed: int
    outcomes: list[CheckOutcome] = field(default_factory=list)
    audit: Any = None  # bench.certify.audit.core.AuditResult when the audit ran
    min_power: float = POWER_LEVEL

    @property
    def ok(self) -> bool:
        return all(o.status != "FAIL" for o in self.outcomes)

    @property
    def inconclusive(self) -> str | None:
        """Why the audit's pass says little (it had no testable pair, or power below
        `min_power`); None when it is conclusive, failed, or tested no eps claim."""
        return audit_inconclusive(self.audit, self.min_power)

    def count(self, status: Status) -> int:
        return sum(o.status == status for o in self.outcomes)

    def format(self) -> str:
        """The report as aligned text: one line per check, then the audit and a verdict."""
        width = max(len(o.check) for o in self.outcomes)
        lines = [f"validate {self.mechanism} on {self.task}, seed {self.seed}"]
        for o in self.outcomes:
            lines.append(f"  {o.status:<5}  {o.check:<{width}}  {o.detail}".rstrip())
        if self.audit is not None:
            lines.append(f"audit: {self.audit.summary()}")
        why = self.inconclusive if self.ok else None
        verdict = "PASS" if self.ok and why is None else "INCONCLUSIVE" if self.ok else "FAIL"
        lines.append(
            f"validate: {verdict} — {self.count('PASS')} passed, {self.count('FAIL')} failed, "
            f"{self.count('XFAIL')} expected failures, {self.count('XPASS')} unexpected passes"
            + (f", {self.count('SKIP')} skipped" if self.count("SKIP") else "")
            + (f"; the audit is inconclusive: {why}" if why else "")
        )
        return "\n".join(lines)


def audit_inconclusive(audit: Any, min_power: float = POWER_LEVEL) -> str | None:
    """Why an audit that passed cannot count as evidence for its claim, or None: no audit
    tested the claim (a mechanism that claims nothing needs none), the audit says so itself
    (a training-set audit that did not refute), it audited an eps claim on no testable pair
    (0 draws), or with `power` below `min_power`. A failed audit is conclusive (it refuted
    the claim)."""
    if audit is None or not audit.passed:
        return None
    own = getattr(audit, "inconclusive", None)
    if isinstance(own, str):
        return own
    if not audit.audited:
        return None if audit.notion == "none" else f"no audit tested the claim: {audit.reason}"
    if audit.n_draws == 0:
        return "no testable pair (0 draws): the bound says nothing"
    if audit.power is not None and audit.power < min_power:
        return (
            f"power {audit.power:.0%} < {min_power:.0%} to refute {audit.ratio:g}x the "
            f"claimed eps at {audit.n_draws:,} draws; drop --draws (the plan sizes it) or "
            "pass --allow-inconclusive"
        )
    return None


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def run_checks(mut: MechanismUnderTest, min_power: float = POWER_LEVEL) -> ValidationReport:
    """Run CHECKS in order on `mut`. A check fails by raising (CheckFailed, or any error
    from the mechanism); declared expected failures become XFAIL with their reason. Bad
    `expected_failures` declarations raise ConfigError before anything runs. An audit
    with less than `min_power` makes the report inconclusive."""
    expected = expected_failures_of(mut.cls)
    options = ", ".join(
        f"{k}={v}" for k, v in sorted(mut.task.config().items()) if k not in ("name", "version")
    )
    report = ValidationReport(
        mut.label, f"{mut.task.name} ({options})", mut.seed, min_power=min_power
    )
    for check in CHECKS:
        name = check.__name__
        start = time.perf_counter()
        try:
            detail, failed = check(mut), False
        except CheckFailed as exc:
            detail, failed = str(exc), True
        except Exception as exc:  # the mechanism raised: that is its failure, not bench's
            detail, failed = f"raised {type(exc).__name__}: {exc}", True
        seconds = time.perf_counter() - start
        if name in expected:
            status: Status = "XFAIL" if failed else "XPASS"
            detail = f"expected failure ({expected[name]})" + (f": {detail}" if failed else "")
        else:
            status = "FAIL" if failed else "PASS"
        report.outcomes.append(CheckOutcome(name, status, _one_line(detail), seconds))
    report.audit = mut.audit_result
    _audit_training_sets(mut, report)
    _mark_skipped_audit(report)
    return report


def _audit_training_sets(mut: MechanismUnderTest, report: ValidationReport) -> None:
    """A claim over training sets, which the input audit leaves untested, audited by
    refitting (bench.certify.audit.training_sets): its result becomes the report's audit
    and the audit check's outcome (FAIL when it refutes the claim)."""
    from bench.certify.audit.training_sets import applies, audit_training_sets

    audit = report.audit
    if audit is None or audit.audited or not applies(audit.notion) or mut.fit_seconds is None:
        return  # no claim over training sets, or the mechanism did not even fit once
    start = time.perf_counter()
    options = {k: v for k, v in mut.audit_options.items() if k == "progress"}
    result = audit_training_sets(mut.new, mut.task, mut.seed, **options)
    report.audit = result
    status: Status = "PASS" if result.passed else "FAIL"
    detail = result.verdict()
    if not result.passed:
        detail = f"claim refuted at {result.confidence:.0%} confidence: {detail}"
    outcome = CheckOutcome(AUDIT_CHECK, status, _one_line(detail), time.perf_counter() - start)
    report.outcomes = [outcome if o.check == AUDIT_CHECK else o for o in report.outcomes]


def _mark_skipped_audit(report: ValidationReport) -> None:
    """The audit check of a claim no audit tested is SKIP, not PASS (the verdict then says
    INCONCLUSIVE, with the reason)."""
    audit = report.audit
    if audit is None or audit.audited or not notion_spec(audit.notion).claims_privacy:
        return
    report.outcomes = [
        CheckOutcome(o.check, "SKIP", o.detail, o.seconds)
        if o.check == AUDIT_CHECK and o.status == "PASS"
        else o
        for o in report.outcomes
    ]


def prepare(
    mechanism: str, params: dict[str, Any], task: str | None, seed: int, **options: Any
) -> MechanismUnderTest:
    """The mechanism under validation, with every user mistake found up front as a one-line
    BenchError (exit 2): an unknown name or module, a class that is not a Mechanism, bad
    parameters, a task it does not support, malformed expected_failures. `task` None picks
    the validation task by the mechanism's modality (fmnist for image, spam for tabular)."""
    from bench.core.errors import ConfigError

    mut = under_test((mechanism, params), task_name=task, seed=seed, **options)
    try:
        mut.new()
    except BenchError:
        raise
    except Exception as exc:
        raise ConfigError(
            f"cannot construct mechanism {mut.name} with {params}: {type(exc).__name__}: {exc}"
        ) from exc
    modalities = getattr(mut.cls, "modalities", frozenset())
    if mut.task.modality not in modalities:
        raise ConfigError(
            f"mechanism {mut.name} supports {sorted(modalities)} inputs, task {mut.task.name} is "
            f"{mut.task.modality}; pass --task"
        )
    expected_failures_of(mut.cls)
    return mut


__all__ = [
    "POWER_LEVEL",
    "CheckOutcome",
    "ValidationReport",
    "audit_inconclusive",
    "prepare",
    "run_checks",
]
