"""Audit power gates `bench validate`'s verdict: a pass by an audit that could not have
refuted a violation (power below the stated level at the draws used, or no testable pair)
is INCONCLUSIVE, exit 3, unless --allow-inconclusive."""

from __future__ import annotations

import inspect
from dataclasses import replace

import pytest

from bench.certify.audit.result import AuditResult
from bench.plugin.checks.validation import (
    POWER_LEVEL,
    CheckOutcome,
    ValidationReport,
    audit_inconclusive,
)
from tests.conftest import cli_here

AUDIT = AuditResult(
    mechanism="gauss-input",
    notion="ip",
    claimed_eps=1.0,
    delta=1e-5,
    radius=0.5,
    audited=True,
    passed=True,
    eps_lb=0.31,
    eps_detectable=3.2,
    n_pairs=4,
    n_select=62_500,
    n_draws=1_000_000,
    pair="worst pair",
    statistic="projection",
    threshold=0.0,
    fpr=0.2,
    fnr=0.3,
    eps_ideal=0.75,
    power=0.85,
    mu_gdp=0.5,
)


def _report(audit: AuditResult | None, ok: bool = True) -> ValidationReport:
    status = "PASS" if ok else "FAIL"
    return ValidationReport(
        "gauss-input", "fmnist", 0, [CheckOutcome("check_privacy_audit", status, "", 0.1)], audit
    )


def test_the_stated_level_is_80_percent_and_the_cli_default_matches() -> None:
    from bench.cli.validate import validate

    assert POWER_LEVEL == 0.8
    default = inspect.signature(validate).parameters["min_power"].default
    assert default == POWER_LEVEL


POWER_CASE_IDS = [
    "power-85",
    "power-80",
    "power-79",
    "power-0",
    "no-pair",
    "refuted",
    "not-audited",
    "no-claim",
]


@pytest.mark.parametrize(
    ("changes", "verdict"),
    [
        ({}, "PASS"),
        ({"power": 0.8}, "PASS"),  # at the level: enough
        ({"power": 0.79}, "INCONCLUSIVE"),
        ({"power": 0.0, "n_draws": 1000}, "INCONCLUSIVE"),
        ({"n_draws": 0, "power": None}, "INCONCLUSIVE"),  # no testable pair
        ({"passed": False, "eps_lb": 1.4, "power": 0.0}, "FAIL"),  # refuted: conclusive
        # A claim no audit tested is no pass; a mechanism that claims nothing needs none.
        ({"audited": False, "reason": "no eps claim", "power": None}, "INCONCLUSIVE"),
        ({"audited": False, "notion": "none", "reason": "no claim", "power": None}, "PASS"),
    ],
    ids=POWER_CASE_IDS,
)
def test_verdict_follows_the_audit_power(changes: dict, verdict: str) -> None:
    audit = replace(AUDIT, **changes)
    report = _report(audit, ok=audit.passed)
    text = report.format()
    assert f"validate: {verdict} " in text
    assert (report.inconclusive is not None) == (verdict == "INCONCLUSIVE")
    if verdict == "INCONCLUSIVE":
        assert "the audit is inconclusive" in text and "\n" not in report.inconclusive


def test_inconclusive_names_the_power_the_level_and_the_draws() -> None:
    why = audit_inconclusive(replace(AUDIT, power=0.0, n_draws=1000))
    assert why is not None
    assert "power 0% < 80%" in why and "1.25x the claimed eps" in why and "1,000 draws" in why


def test_a_lower_level_makes_the_same_audit_count() -> None:
    weak = replace(AUDIT, power=0.6)
    assert audit_inconclusive(weak) is not None
    assert audit_inconclusive(weak, min_power=0.5) is None


@pytest.mark.parametrize(
    ("power", "flags", "code", "verdict"),
    [
        (0.85, (), 0, "PASS"),
        (0.0, (), 3, "INCONCLUSIVE"),
        (0.0, ("--allow-inconclusive",), 0, "INCONCLUSIVE"),
        (0.6, ("--min-power", "0.5"), 0, "PASS"),
    ],
)
def test_cli_exit_code_follows_the_verdict(
    monkeypatch, capsys, power, flags, code, verdict
) -> None:
    """The CLI's exit code from a report (prepare and the checks stubbed: the audits
    themselves are exercised in test_validate.py)."""
    import bench.plugin.checks.validation as validation

    def checks(mut: object, min_power: float = POWER_LEVEL) -> ValidationReport:
        report = _report(replace(AUDIT, power=power))
        report.min_power = min_power
        return report

    monkeypatch.setattr(validation, "prepare", lambda *a, **k: object())
    monkeypatch.setattr(validation, "run_checks", checks)
    done = cli_here(monkeypatch, capsys, "validate", "gauss-input", *flags)
    assert done.returncode == code, done.stdout + done.stderr
    assert f"validate: {verdict} " in done.stdout
