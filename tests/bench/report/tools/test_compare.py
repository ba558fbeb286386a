"""Regression comparison semantics: direction per metric, tolerance, CI, missing rows."""

from __future__ import annotations

import copy

import pytest

from bench.core.errors import ConfigError
from bench.report.tools.compare import compare, parse_tolerances, without_params


def _row(attack, metrics):
    return {
        "task": "fmnist",
        "mechanism": "gauss-input",
        "params": {"eps": 1.0},
        "guarantee": {"notion": "ip"},
        "attack": attack,
        "attack_params": {},
        "seeds": 3,
        "metrics": metrics,
    }


def _m(value, half_width=0.0):
    return {"value": value, "ci": [value - half_width, value + half_width], "n": 300}


BASE = {
    "suite": "s",
    "suite_version": "1",
    "generated_at": "t",
    "code_version": "c",
    "rows": [
        _row(None, {"accuracy": _m(0.80, 0.01), "fit_s": _m(10.0)}),
        _row("inverter", {"mse": _m(0.050, 0.002), "ssim": _m(0.40, 0.01)}),
    ],
}


def _with(row: int, metric: str, value: float) -> dict:
    doc = copy.deepcopy(BASE)
    doc["rows"][row]["metrics"][metric]["value"] = value
    return doc


def test_identical_boards_pass() -> None:
    report = compare(BASE, copy.deepcopy(BASE))
    assert report.ok and report.matched == 2 and not report.improvements


@pytest.mark.parametrize(
    ("row", "metric", "value"),
    [
        (0, "accuracy", 0.70),  # utility dropped
        (1, "mse", 0.030),  # the attack got stronger: lower error
        (1, "ssim", 0.60),  # the attack got stronger: higher similarity
        (0, "fit_s", 20.0),  # runtime doubled (> 50% cost tolerance)
    ],
)
def test_worse_beyond_tolerance_is_a_regression(row, metric, value) -> None:
    report = compare(BASE, _with(row, metric, value))
    assert not report.ok
    assert [c.metric for c in report.regressions] == [metric]


@pytest.mark.parametrize(
    ("row", "metric", "value"),
    [
        (0, "accuracy", 0.90),  # utility improved
        (1, "mse", 0.080),  # the attack got weaker
    ],
)
def test_better_is_an_improvement_not_a_failure(row, metric, value) -> None:
    report = compare(BASE, _with(row, metric, value))
    assert report.ok and [c.metric for c in report.improvements] == [metric]


def test_within_tolerance_or_inside_the_baseline_ci_is_not_flagged() -> None:
    assert compare(BASE, _with(0, "accuracy", 0.79)).ok  # inside CI
    assert compare(BASE, _with(0, "fit_s", 14.0)).ok  # 40% < cost tolerance
    assert compare(BASE, _with(0, "accuracy", 0.70), tolerance=0.2).ok
    assert compare(BASE, _with(0, "accuracy", 0.70), metric_tolerances={"accuracy": 0.2}).ok


def test_missing_rows_and_metrics_fail() -> None:
    fewer = copy.deepcopy(BASE)
    fewer["rows"].pop(1)
    assert not compare(BASE, fewer).ok
    no_ssim = copy.deepcopy(BASE)
    del no_ssim["rows"][1]["metrics"]["ssim"]
    report = compare(BASE, no_ssim)
    assert not report.ok and report.missing[0].metric == "ssim"
    # A row only in the candidate is reported, not a failure.
    assert compare(fewer, BASE).ok and len(compare(fewer, BASE).added) == 1


def test_tolerance_specs() -> None:
    assert parse_tolerances(["0.1", "mse=0.3"]) == (0.1, {"mse": 0.3})
    assert parse_tolerances([]) == (None, {})
    for bad in (["abc"], ["mse="], ["nosuch=0.1"], ["0.1", "0.2"], ["mse=-1"]):
        with pytest.raises(ConfigError):
            parse_tolerances(bad)


def test_beyond_tolerance_but_inside_a_wide_baseline_ci_is_noise() -> None:
    noisy = copy.deepcopy(BASE)
    noisy["rows"][0]["metrics"]["accuracy"] = _m(0.80, 0.15)  # a wide CI: few samples
    candidate = copy.deepcopy(noisy)
    candidate["rows"][0]["metrics"]["accuracy"]["value"] = 0.70  # -12.5%, beyond 5%
    assert compare(noisy, candidate).ok
    candidate["rows"][0]["metrics"]["accuracy"]["value"] = 0.60  # now outside the CI
    assert not compare(noisy, candidate).ok


def test_unknown_metric_is_skipped_and_named() -> None:
    base, cand = copy.deepcopy(BASE), copy.deepcopy(BASE)
    base["rows"][0]["metrics"]["plugin_score"] = _m(1.0)
    cand["rows"][0]["metrics"]["plugin_score"] = _m(0.1)
    report = compare(base, cand)
    assert report.ok and report.unknown_metrics == ["plugin_score"]


def test_format_names_the_regression_and_verdict() -> None:
    report = compare(BASE, _with(1, "mse", 0.030))
    text = report.format()
    assert text.startswith("compare: FAIL")
    assert "REGRESSIONS" in text and "inverter" in text and "mse" in text and "-40.0%" in text
    assert compare(BASE, BASE).format().startswith("compare: OK")


def test_exact_fails_on_any_non_timing_difference_and_ignores_timings() -> None:
    tiny = _with(0, "accuracy", 0.8001)  # inside tolerance and CI: not a regression
    assert compare(BASE, tiny).ok
    report = compare(BASE, tiny, exact=True)
    assert not report.ok and [c.metric for c in report.differing] == ["accuracy"]
    assert "1 of 3 non-timing metrics differ" in report.format()
    assert "DIFFERENT (exact)" in report.format()
    slower = _with(0, "fit_s", 12.0)  # a timing moved: never an exact difference
    assert compare(BASE, slower, exact=True).ok
    wider = copy.deepcopy(BASE)
    wider["rows"][1]["metrics"]["mse"]["ci"] = [0.047, 0.053]  # same value, another CI
    assert not compare(BASE, wider, exact=True).ok


def test_exact_holds_a_metric_without_a_spec_to_equality() -> None:
    """--exact promises that not one number moved: a metric whose spec is not loaded (no
    direction, so it cannot regress) is still compared value for value."""
    base, cand = copy.deepcopy(BASE), copy.deepcopy(BASE)
    base["rows"][0]["metrics"]["plugin_score"] = _m(1.0)
    cand["rows"][0]["metrics"]["plugin_score"] = _m(0.1)
    assert compare(base, cand).ok
    report = compare(base, cand, exact=True)
    assert not report.ok and [c.metric for c in report.differing] == ["plugin_score"]
    assert compare(base, copy.deepcopy(base), exact=True).ok


def test_metrics_that_mechanisms_register_are_compared() -> None:
    """Posthoc's local_lipschitz is registered when its module is imported; compare loads
    the registries, so it is compared (lower is better) rather than skipped as unknown."""
    base, cand = copy.deepcopy(BASE), copy.deepcopy(BASE)
    base["rows"][0]["metrics"]["local_lipschitz"] = _m(1.0)
    cand["rows"][0]["metrics"]["local_lipschitz"] = _m(1.0)
    report = compare(base, cand, exact=True)
    assert report.ok and "local_lipschitz" not in report.unknown_metrics
    cand["rows"][0]["metrics"]["local_lipschitz"] = _m(2.0)  # worse: a regression
    assert [c.metric for c in compare(base, cand).regressions] == ["local_lipschitz"]


def _timed(fit_s: float, release_ms: float, cpus: str = "2") -> dict:
    doc = copy.deepcopy(BASE)
    row = doc["rows"][0]
    row["metrics"]["fit_s"] = _m(fit_s)
    row["metrics"]["release_ms"] = _m(release_ms)
    for r in doc["rows"]:
        r["environment"] = {"platform": "Linux-x86_64", "cpus": cpus, "torch": "2.14.1"}
    return doc


def test_sub_floor_timing_growth_is_not_a_regression() -> None:
    # 0.04 ms -> 0.1 ms per release is +150%, but far below the 1 ms floor: jitter.
    report = compare(_timed(10.0, 0.04), _timed(10.0, 0.1))
    assert report.ok and not report.regressions
    # 10 s -> 20 s of fit is beyond both the 50% tolerance and the 1 s floor.
    report = compare(_timed(10.0, 0.04), _timed(20.0, 0.04))
    assert [c.metric for c in report.regressions] == ["fit_s"]


def test_timings_from_another_machine_or_no_cost_are_left_out() -> None:
    slower = _timed(40.0, 9.0, cpus="8")
    report = compare(_timed(10.0, 0.04), slower)
    assert report.ok and "different machines (cpus: 2 vs 8)" in report.format()
    report = compare(_timed(10.0, 0.04), _timed(40.0, 9.0), cost=False)
    assert report.ok and "timings not compared: --no-cost" in report.format()
    # A non-timing regression still fails when timings are left out.
    worse = _timed(10.0, 0.04, cpus="8")
    worse["rows"][0]["metrics"]["accuracy"] = _m(0.5)
    assert not compare(_timed(10.0, 0.04), worse).ok


def test_timings_from_cpus_with_other_vector_extensions_are_left_out() -> None:
    """Two hosts alike in every other field, one with AVX-512: their timings (and floats)
    are not comparable, and the report names the field; a board without the field (made
    before it was recorded) is not held against one that has it."""
    avx2, avx512 = _timed(10.0, 0.04), _timed(40.0, 9.0)
    for doc, features in ((avx2, "avx avx2 fma"), (avx512, "avx avx2 fma avx512f")):
        for row in doc["rows"]:
            row["environment"]["cpu_features"] = features
    report = compare(avx2, avx512)
    assert report.ok and "different machines (cpu_features: avx avx2 fma vs" in report.format()
    assert not compare(_timed(10.0, 0.04), avx512).ok  # no field on one side: timings compared


def test_boards_of_two_suites_are_refused() -> None:
    other = copy.deepcopy(BASE)
    other["suite"] = "smoke"
    with pytest.raises(ConfigError, match="cannot compare suite 's' with suite 'smoke'"):
        compare(BASE, other)


def test_rows_are_labelled_by_the_parameters_that_tell_them_apart() -> None:
    doc = copy.deepcopy(BASE)
    long = {"eps": 1.0, "variant": "arl-c-n", **{f"knob{i}": i for i in range(30)}}
    doc["rows"][0]["params"] = long
    doc["rows"][1]["params"] = long
    twin = copy.deepcopy(doc["rows"][0])
    twin["params"] = {**long, "eps": 5.0}
    doc["rows"].append(twin)
    worse = copy.deepcopy(doc)
    worse["rows"][2]["metrics"]["accuracy"] = _m(0.5)
    text = compare(doc, worse).format()
    assert "fmnist | gauss-input(eps=5.0) | -" in text
    assert max(len(line) for line in text.splitlines()) < 160


def test_a_parameter_added_since_the_baseline_is_matched_when_ignored() -> None:
    newer = copy.deepcopy(BASE)
    for row in newer["rows"]:
        row["params"]["method"] = "auto"  # a new parameter, at its default
    report = compare(BASE, newer)
    assert not report.ok and report.matched == 0  # rows keyed by every parameter
    report = compare(without_params(BASE, ["method"]), without_params(newer, ["method"]))
    assert report.ok and report.matched == 2


def test_a_parameter_ignored_at_its_default_keeps_other_values_apart() -> None:
    """NAME=VALUE leaves the parameter out only where it holds VALUE: rows at the default
    match the older board, a row that sets it otherwise is an added row, not a match."""
    newer = copy.deepcopy(BASE)
    newer["rows"][0]["params"]["proposal"] = 0.0
    newer["rows"][1]["params"]["proposal"] = 2.5
    report = compare(BASE, without_params(newer, ["proposal=0.0"]))
    assert report.matched == 1 and len(report.added) == 1
    assert without_params(newer, ["proposal=2.5"])["rows"][1]["params"] == BASE["rows"][1]["params"]
    text = copy.deepcopy(BASE)
    text["rows"][0]["params"]["recipe"] = "bench"
    assert without_params(text, ["recipe=bench"])["rows"][0]["params"] == BASE["rows"][0]["params"]


def test_ignoring_a_parameter_that_tells_rows_apart_is_refused() -> None:
    board = copy.deepcopy(BASE)
    other = copy.deepcopy(board["rows"][0])
    other["params"]["eps"] = 2.0
    board["rows"].append(other)
    with pytest.raises(ConfigError, match="two rows become"):
        without_params(board, ["eps"])


def _claimed(doc: dict) -> dict:
    """`doc` with an IP claim at eps 1 declared on every row."""
    doc = copy.deepcopy(doc)
    for row in doc["rows"]:
        row["guarantee"] = {"notion": "ip", "eps": 1.0, "delta": 1e-5, "radius": 0.1}
    return doc


def test_a_refuted_claim_leads_the_first_line_and_fails() -> None:
    base = _claimed(BASE)
    base["rows"][0]["metrics"]["eps_audit_lb"] = _m(0.8)
    candidate = copy.deepcopy(base)
    candidate["rows"][0]["metrics"]["eps_audit_lb"] = _m(3.0)  # above the claimed eps 1
    report = compare(base, candidate)
    first = report.format().splitlines()[0]
    assert not report.ok and first.startswith("compare: FAIL — refuted claim: ")
    assert "gauss-input" in first and "eps lower bound 3 > claimed 1" in first
    assert [p.key.attack for p in report.privacy] == [None]  # named once, by its setting
    # The same refutation in the baseline already is no new privacy regression.
    assert not compare(candidate, candidate).privacy


def test_a_broken_bound_is_a_privacy_regression() -> None:
    base = copy.deepcopy(BASE)
    base["rows"][1]["metrics"]["bound_validity"] = _m(1.0)
    candidate = copy.deepcopy(base)
    candidate["rows"][1]["metrics"]["bound_validity"] = _m(0.6)
    report = compare(base, candidate)
    assert not report.ok and not report.regressions
    assert "bound broken: bound_validity 1 -> 0.6" in report.format().splitlines()[0]


def test_utility_gained_where_the_attack_got_stronger_is_a_trade_off() -> None:
    candidate = copy.deepcopy(BASE)
    candidate["rows"][0]["metrics"]["accuracy"]["value"] = 0.90  # noise cut: more accuracy
    candidate["rows"][1]["metrics"]["ssim"]["value"] = 0.60  # ... and a stronger attack
    report = compare(BASE, candidate)
    assert [c.metric for c in report.trade_offs] == ["accuracy"]
    assert not report.improvements and [c.metric for c in report.regressions] == ["ssim"]
    assert "trade-offs (utility gained where privacy got worse):" in report.format()
    # Without the stronger attack the same gain is an improvement.
    only_gain = copy.deepcopy(BASE)
    only_gain["rows"][0]["metrics"]["accuracy"]["value"] = 0.90
    assert [c.metric for c in compare(BASE, only_gain).improvements] == ["accuracy"]
