"""`bench validate`: run every contract check of bench.testing, the privacy audit last, on
one mechanism and report each outcome: PASS, FAIL, XFAIL (a declared expected failure,
shown with its reason) or XPASS (declared, but it passed)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.errors import BenchError
from bench.registry import MECHANISMS
from bench.testing import (
    CHECKS,
    CheckFailed,
    MechanismUnderTest,
    expected_failures_of,
    under_test,
)

Status = Literal["PASS", "FAIL", "XFAIL", "XPASS"]


def attach_expected_failures(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`rows` with `expected_failures` ({check: reason}) added to every row of a mechanism
    that declares any, so a waived contract check shows where its numbers are read. A
    mechanism no longer importable (a plug-in since uninstalled) is left as it is."""
    out = []
    for row in rows:
        try:
            declared = expected_failures_of(MECHANISMS.get(row["mechanism"]))
        except BenchError:
            declared = {}
        out.append(
            {**row, "expected_failures": dict(sorted(declared.items()))} if declared else row
        )
    return out


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

    @property
    def ok(self) -> bool:
        return all(o.status != "FAIL" for o in self.outcomes)

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
        verdict = "PASS" if self.ok else "FAIL"
        lines.append(
            f"validate: {verdict} — {self.count('PASS')} passed, {self.count('FAIL')} failed, "
            f"{self.count('XFAIL')} expected failures, {self.count('XPASS')} unexpected passes"
        )
        return "\n".join(lines)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def run_checks(mut: MechanismUnderTest) -> ValidationReport:
    """Run CHECKS in order on `mut`. A check fails by raising (CheckFailed, or any error
    from the mechanism); declared expected failures become XFAIL with their reason. Bad
    `expected_failures` declarations raise ConfigError before anything runs."""
    expected = expected_failures_of(mut.cls)
    options = ", ".join(
        f"{k}={v}" for k, v in sorted(mut.task.config().items()) if k not in ("name", "version")
    )
    report = ValidationReport(mut.label, f"{mut.task.name} ({options})", mut.seed)
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
    return report


def parse_params(specs: list[str]) -> dict[str, Any]:
    """`KEY=VALUE` strings to a parameter dict; VALUE is read as a TOML value (2.0, 1e-5,
    true, "text", [1, 2]) and as a plain string otherwise. Malformed specs: ConfigError."""
    import tomllib

    from bench.errors import ConfigError

    params: dict[str, Any] = {}
    for spec in specs:
        key, sep, text = (part.strip() for part in spec.partition("="))
        if not (sep and key):
            raise ConfigError(f"bad --param {spec!r}: expected KEY=VALUE, e.g. eps=2.0")
        if key in params:
            raise ConfigError(f"bad --param {spec!r}: {key!r} is given twice")
        try:
            params[key] = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            params[key] = text
    return params


def prepare(
    mechanism: str, params: dict[str, Any], task: str | None, seed: int, **options: Any
) -> MechanismUnderTest:
    """The mechanism under validation, with every user mistake found up front as a one-line
    BenchError (exit 2): an unknown name or module, a class that is not a Mechanism, bad
    parameters, a task it does not support, malformed expected_failures. `task` None picks
    the validation task by the mechanism's modality (fmnist for image, spam for tabular)."""
    from bench.errors import BenchError, ConfigError

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


__all__ = ["CheckOutcome", "ValidationReport", "parse_params", "prepare", "run_checks"]
