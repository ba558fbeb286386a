"""Expected failures a mechanism declares (`expected_failures = {check: reason}`): checked
against the contract checks' names and attached to its leaderboard rows, without importing
the checks themselves (bench.plugin.checks), so publishing a board needs no test code."""

from __future__ import annotations

from bench.core.errors import BenchError, ConfigError
from bench.plugin.registry import MECHANISMS
from bench.report.board.row import Row

# The contract checks of bench.plugin.checks, by name
# (tests/bench/plugin/checks/test_validate.py keeps the two equal).
CHECK_NAMES = (
    "check_declares_guarantee",
    "check_unknown_parameter_refused",
    "check_fit",
    "check_release_contract",
    "check_predict_contract",
    "check_no_nan",
    "check_deterministic_under_seed",
    "check_randomness_from_generator_only",
    "check_randomness_not_reused",
    "check_input_not_modified",
    "check_encoder_and_noise_exposed",
    "check_label_release",
    "check_repeated_queries_agree",
    "check_label_noise_calibration",
    "check_time_budget",
    "check_privacy_audit",
)
UNWAIVABLE = frozenset({"check_privacy_audit"})


def expected_failures_of(cls: type) -> dict[str, str]:
    """The class's declared expected failures, validated: known check names, a written
    reason for each, and never an unwaivable check (else a one-line ConfigError)."""
    declared = getattr(cls, "expected_failures", None) or {}
    who = f"mechanism {getattr(cls, 'name', cls.__name__)}"
    if not isinstance(declared, dict):
        raise ConfigError(f"{who}: expected_failures must be a dict {{check_name: reason}}")
    for check, reason in declared.items():
        if check not in CHECK_NAMES:
            raise ConfigError(f"{who}: expected_failures names unknown check {check!r}")
        if check in UNWAIVABLE:
            raise ConfigError(f"{who}: {check} cannot be declared an expected failure")
        if not (isinstance(reason, str) and reason.strip()):
            raise ConfigError(f"{who}: expected failure {check!r} needs a written reason")
    return dict(declared)


def waivers_of(mechanism: str) -> dict[str, str]:
    """The checks a registered mechanism declares it fails, by check name; {} for none and
    for a mechanism no longer importable (a plug-in since uninstalled)."""
    try:
        return dict(sorted(expected_failures_of(MECHANISMS.get(mechanism)).items()))
    except BenchError:
        return {}


def attach_expected_failures(rows: list[Row]) -> list[Row]:
    """`rows` with `expected_failures` ({check: reason}) added to every row of a mechanism
    that declares any, so a waived contract check shows where its numbers are read."""
    out = []
    for row in rows:
        declared = waivers_of(row["mechanism"])
        out.append(Row(row, expected_failures=declared) if declared else row)
    return out
