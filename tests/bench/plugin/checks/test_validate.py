"""Submission checks: every in-tree mechanism passes bench.plugin.checks's checks (one pytest id
per check), each check catches the fault it names, expected failures need a reason, and
`bench validate` reports and exits 0 / 1 / 2."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from bench.cli.values import parse_params
from bench.core.errors import BenchError, ConfigError
from bench.plugin.checks import (
    CHECKS,
    CheckFailed,
    MechanismUnderTest,
    expected_failures_of,
    parametrize_with_checks,
    under_test,
)
from bench.plugin.checks.validation import prepare, run_checks
from bench.plugin.protocols import Guarantee, NoiseModel, Release, Task
from bench.plugin.registry import MECHANISMS
from mechanisms.label_only.base import keep_probability
from mechanisms.label_only.lucid import LabelOnly, NaiveNoise
from mechanisms.noise.identity import Identity
from mechanisms.noise.input_noise import GaussInput
from tests.conftest import ROOT, run_cli
from tests.plugins.bench_test_plugins import HalfNoiseGauss, NaNMechanism, ShortMechanism

PLUGINS = ROOT / "tests" / "plugins"
# Audits smaller than `bench validate`'s (10,000 + 50,000 draws) keep these tests fast; the
# miscalibration needs enough draws to be refuted at eps = 2.
FAST_AUDIT = {"audit_options": {"n_select": 1000, "n_draws": 5000}}
REFUTING_AUDIT = {"audit_options": {"n_select": 6000, "n_draws": 24000, "n_random": 0}}


pytestmark = pytest.mark.usefixtures("one_thread")


# Every registered image mechanism, at its default parameters, on the validation task;
# posthoc-ptr with short training and few calibration MILPs (its defaults train for minutes).
FAST_POSTHOC = {"vae_epochs": 5, "obf_epochs": 5, "n_calib": 8, "eps": 10.0, "R": 0.05}
IMAGE_MECHANISMS: list = [
    n for n in MECHANISMS.names() if "image" in MECHANISMS.get(n).modalities and n != "posthoc-ptr"
] + [("posthoc-ptr", FAST_POSTHOC)]


@parametrize_with_checks(IMAGE_MECHANISMS, **FAST_AUDIT)
def test_in_tree_mechanism(mechanism: MechanismUnderTest, check) -> None:
    check(mechanism)


# ----------------------------------------------------- each check catches its fault


class ReusedNoise(GaussInput):
    """Re-seeds its own generator on every call: the same noise every time."""

    name = "test-reused-noise"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        return super().release(x, torch.Generator().manual_seed(0))


class SharedRowNoise(GaussInput):
    """Draws one noise image and adds it to every row of the batch."""

    name = "test-shared-row-noise"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        noise = self._noise.sample(x.shape[1:], generator)
        return Release.all_released(x + noise)


class GlobalRNG(GaussInput):
    """Draws its noise from torch's global RNG instead of the generator it is given."""

    name = "test-global-rng"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        return Release.all_released(x + self._noise.scale * torch.randn(x.shape))


class InPlace(GaussInput):
    """Adds the noise into its input tensor."""

    name = "test-in-place"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        x += self._noise.sample(x.shape, generator)
        return Release.all_released(x)


class UnderstatedNoise(GaussInput):
    """Declares twice the noise it adds (attacks would be misled)."""

    name = "test-understated-noise"

    def noise(self) -> NoiseModel:
        return NoiseModel("gaussian", 2 * self._noise.scale)


class NoEncoder(GaussInput):
    """Hides its encoder from white-box attacks."""

    name = "test-no-encoder"

    def encoder(self) -> None:
        return None


class NoRadius(GaussInput):
    """An IP claim without a radius."""

    name = "test-no-radius"

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": 1.0, "delta": 1e-5}, "l2/input")


class BadScores(GaussInput):
    """Returns one score per sample instead of one per class."""

    name = "test-bad-scores"

    def predict(self, release: Release) -> torch.Tensor:
        return super().predict(release)[:, :1]


class TakesAnything(GaussInput):
    """Swallows unknown parameters."""

    name = "test-takes-anything"

    def __init__(self, **params: Any) -> None:
        params.pop("no_such_parameter", None)
        super().__init__(**params)


class BrokenFit(GaussInput):
    """Fails to fit."""

    name = "test-broken-fit"

    def fit(self, task: Task, splits, ctx) -> None:
        raise RuntimeError("out of memory")


FAULTS = [
    (NaNMechanism, "check_no_nan"),
    (ShortMechanism, "check_release_contract"),
    (ReusedNoise, "check_randomness_not_reused"),
    (SharedRowNoise, "check_randomness_not_reused"),
    (GlobalRNG, "check_randomness_from_generator_only"),
    (GlobalRNG, "check_deterministic_under_seed"),
    (InPlace, "check_input_not_modified"),
    (UnderstatedNoise, "check_encoder_and_noise_exposed"),
    (NoEncoder, "check_encoder_and_noise_exposed"),
    (NoRadius, "check_declares_guarantee"),
    (BadScores, "check_predict_contract"),
    (TakesAnything, "check_unknown_parameter_refused"),
    (BrokenFit, "check_fit"),
    ((HalfNoiseGauss, {"eps": 2.0, "r": 0.5}), "check_privacy_audit"),
]


@pytest.mark.parametrize(
    ("spec", "check_name"),
    FAULTS,
    ids=[f"{getattr(s, 'name', None) or s[0].name}-{c}" for s, c in FAULTS],
)
def test_each_check_catches_its_fault(spec, check_name: str) -> None:
    check = {c.__name__: c for c in CHECKS}[check_name]
    options = REFUTING_AUDIT if check_name == "check_privacy_audit" else FAST_AUDIT
    with pytest.raises(CheckFailed):
        check(under_test(spec, **options))


def test_time_budget_is_enforced() -> None:
    mut = under_test(GaussInput, fit_budget_s=0.0)
    with pytest.raises(CheckFailed, match="budget"):
        {c.__name__: c for c in CHECKS}["check_time_budget"](mut)


# --------------------------------------------------------- reports, expected failures


class WaivedEncoder(NoEncoder):
    """Declares its missing encoder as an expected failure, with a reason."""

    name = "test-waived-encoder"
    expected_failures: ClassVar[dict[str, str]] = {
        "check_encoder_and_noise_exposed": "the encoder is a remote service"
    }


def test_report_marks_failures_and_expected_failures() -> None:
    # min_power 0: this audit's 5,000 draws have no power
    # (tests/bench/plugin/checks/test_validate_power.py).
    report = run_checks(under_test(WaivedEncoder, **FAST_AUDIT), min_power=0.0)
    status = {o.check: o for o in report.outcomes}
    assert status["check_encoder_and_noise_exposed"].status == "XFAIL"
    assert "the encoder is a remote service" in status["check_encoder_and_noise_exposed"].detail
    assert report.ok and report.count("PASS") == len(CHECKS) - 1
    assert report.audit is not None and report.audit.passed
    text = report.format()
    assert "XFAIL" in text and "validate: PASS" in text and "audit: eps_lb" in text

    broken = run_checks(under_test(BrokenFit, **FAST_AUDIT))
    assert not broken.ok
    assert "out of memory" in {o.check: o for o in broken.outcomes}["check_fit"].detail
    assert "not run: fit failed" in {o.check: o for o in broken.outcomes}["check_no_nan"].detail


def test_parametrize_with_checks_gives_one_id_per_check_and_xfail_marks() -> None:
    mark = parametrize_with_checks([WaivedEncoder, (GaussInput, {"eps": 2.0})])
    params = mark.args[1]
    ids = [p.id for p in params]
    assert len(ids) == 2 * len(CHECKS) == len(set(ids))
    assert "test-waived-encoder-check_no_nan" in ids
    assert "gauss-input(eps=2.0)-check_privacy_audit" in ids
    xfails = [p.id for p in params if p.marks]
    assert xfails == ["test-waived-encoder-check_encoder_and_noise_exposed"]
    assert params[0].values[0] is params[1].values[0]  # one fitted instance per mechanism


@pytest.mark.parametrize(
    ("declared", "message"),
    [
        ({"check_no_nan": ""}, "needs a written reason"),
        ({"check_nothing": "why"}, "unknown check"),
        ({"check_privacy_audit": "trust me"}, "cannot be declared"),
    ],
)
def test_expected_failures_need_a_reason_and_cannot_waive_the_audit(declared, message) -> None:
    cls = type("Declared", (Identity,), {"name": "test-declared", "expected_failures": declared})
    with pytest.raises(ConfigError, match=message):
        expected_failures_of(cls)


def test_parse_params() -> None:
    assert parse_params(["eps=2", "delta = 1e-6", "name=abc", "flag=true"]) == {
        "eps": 2,
        "delta": 1e-6,
        "name": "abc",
        "flag": True,
    }
    for bad in (["eps"], ["=1"], ["eps=1", "eps=2"]):
        with pytest.raises(ConfigError):
            parse_params(bad)


# ------------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """One working directory (and so one .bench/cache) for every CLI run of this module."""
    return tmp_path_factory.mktemp("validate")


def _validate(workdir: Path, *args: str):
    return run_cli("validate", *args, cwd=workdir, extra_path=(PLUGINS,))


@pytest.fixture(autouse=True)
def _one_thread_in_subprocesses(monkeypatch) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.mark.slow
def test_cli_validate_passes_a_correct_mechanism(workdir: Path) -> None:
    """Every check passes; at 20,000 draws the audit cannot refute 1.25x the claim (power
    0%), so the verdict is INCONCLUSIVE with exit 3 (0 with --allow-inconclusive).
    ldp-image: Laplace noise on every pixel, whose releases are drawn whole, so its audit
    draws for several seconds and gets a timed estimate (a Gaussian audit's projections,
    drawn from their law, finish before the first estimate is due)."""
    proc = _validate(workdir, "ldp-image", "--draws", "20000")
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "validate: INCONCLUSIVE" in proc.stdout and "FAIL " not in proc.stdout
    assert "power 0% < 80%" in proc.stdout
    assert "audit: eps_lb" in proc.stdout and "check_privacy_audit" in proc.stdout
    # While it draws, stderr (not a terminal here: no bar) estimates the audit's time.
    planned = 2 * 50_000 * 4 + 2 * 20_000  # 4 pairs' selection (at least 50,000) + evaluation
    assert f"audit: {planned:,} releases planned, about " in proc.stderr
    assert "planned" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "failed_check"),
    [
        # Half the calibrated noise is refuted at 20,000 evaluation draws a side (eps_lb
        # 2.54 > 2, about 12 s); the planned size took about 105 s.
        (
            ["test-half-noise", "--param", "eps=2.0", "--param", "r=0.5", "--draws", "20000"],
            "check_privacy_audit",
        ),
        (["bench_test_plugins:NaNMechanism"], "check_no_nan"),
    ],
    ids=["miscalibrated", "nan-module-class"],
)
@pytest.mark.slow
def test_cli_validate_fails_faulty_plugins(workdir: Path, args: list[str], failed_check) -> None:
    proc = _validate(workdir, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("  FAIL")]
    assert failed_check in failed
    assert "validate: FAIL" in proc.stdout


@pytest.mark.slow
def test_cli_validate_user_error_exits_2_with_one_line(workdir: Path) -> None:
    proc = _validate(workdir, "no-such-mechanism")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "unknown mechanism 'no-such-mechanism'" in lines[0] and "gauss-input" in lines[0]


@pytest.mark.parametrize(
    ("mechanism", "params", "fragment"),
    [
        ("gauss-input", {"sigma": 1.0}, "no parameter 'sigma'"),
        ("gauss-input", {"eps": -1.0}, "parameter 'eps' must be in"),
        ("bench.cli.app:main", {}, "not a bench Mechanism"),
        ("nowhere:Mechanism", {}, "cannot import mechanism module 'nowhere'"),
        (
            "tests.bench.plugin.checks.test_validate:WaivedEncoder",
            {"eps": "high"},
            "must be a number, got 'high'",
        ),
    ],
)
def test_prepare_refuses_user_mistakes(mechanism: str, params: dict, fragment: str) -> None:
    with pytest.raises(BenchError, match=fragment):
        prepare(mechanism, params, "fmnist", 0)


# ---------------------------------------------------------------- label-only mechanisms

# LUCID with a few seconds of branch and bound: a looser but still sound bound.
# Small work budgets and no clock: quick, and the same bounds on every machine.
FAST_LUCID = (
    "lucid",
    {"node_limit": 200, "max_milps": 4, "time_limit": 0.0, "budget": 0.0},
)
LABEL_MECHANISMS: list = [FAST_LUCID, "alibi", "naive-idp", ("naive-noise", {"eps": 1.0})]


@parametrize_with_checks(LABEL_MECHANISMS)
def test_label_only_mechanism(mechanism: MechanismUnderTest, check) -> None:
    check(mechanism)


def test_validation_task_follows_the_modality() -> None:
    assert under_test("lucid").task.name == "spam"
    assert under_test("alibi").task.name == "spam"
    assert under_test("gauss-input").task.name == "fmnist"
    spam = under_test("dp-sgd").task.config()
    assert (spam["subsample"], spam["arch"]) == (40, "2x10")
    assert under_test("alibi", task_name="german").task.name == "german"


class Forgetful(NaiveNoise):
    """Forgets its noisy answers: a repeated query gets a fresh draw."""

    name = "test-forgetful"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        self.memory = {}
        return super().release(x, generator)


class Overconfident(NaiveNoise):
    """Draws its exponential mechanism at eps + 3 while claiming eps."""

    name = "test-overconfident"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        declared = self.p
        self.p = dataclasses.replace(declared, eps=declared.eps + 3.0)
        try:
            return super().release(x, generator)
        finally:
            self.p = declared


class Unmarked(NaiveNoise):
    """Noises every answer but does not say which answers were noised."""

    name = "test-unmarked"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        return Release.all_released(super().release(x, generator).values)


class SoftScores(LabelOnly):
    """Releases the network's class probabilities instead of a label."""

    name = "test-soft-scores"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        with torch.no_grad():
            return Release.all_released(self.model(x).softmax(1))


class NoNeighbours(NaiveNoise):
    """An iDP claim that does not say which datasets are neighbours."""

    name = "test-no-neighbours"

    def guarantee(self) -> Guarantee:
        return Guarantee("idp", {"eps": 0.0})


LABEL_FAULTS = [
    (Forgetful, "check_repeated_queries_agree", "repeated queries got another answer"),
    (Overconfident, "check_label_noise_calibration", "above e\\^eps / \\(e\\^eps \\+ k - 1\\)"),
    (Unmarked, "check_label_noise_calibration", "not marked noised differ"),
    (SoftScores, "check_label_release", "not one-hot labels"),
    (NoNeighbours, "check_declares_guarantee", "must name its neighbouring datasets"),
]


@pytest.mark.parametrize(
    ("cls", "check_name", "message"), LABEL_FAULTS, ids=[c.name for c, _, _ in LABEL_FAULTS]
)
def test_label_only_checks_catch_their_fault(cls, check_name: str, message: str) -> None:
    check = {c.__name__: c for c in CHECKS}[check_name]
    with pytest.raises(CheckFailed, match=message):
        check(under_test(cls))


def test_keep_rate_bound_is_what_eps_allows() -> None:
    # The exponential mechanism (eps / 2 per answer) stays under the eps-DP keep rate, and
    # the Overconfident fault's eps + 3 exceeds it: the check separates the two.
    for eps in (0.0, 1.0):
        allowed = math.exp(eps) / (math.exp(eps) + 1)
        assert keep_probability(eps, 2) <= allowed < keep_probability(eps + 3.0, 2)


def test_validate_runs_label_only_mechanisms_on_spam(tmp_path: Path) -> None:
    mut = prepare("alibi", {"eps": 2.0}, None, 0, cache_root=tmp_path)
    report = run_checks(mut)
    assert report.ok, report.format()
    assert report.task.startswith("spam")
    detail = {o.check: o.detail for o in report.outcomes}
    assert "no query-time noise" in detail["check_label_noise_calibration"]
    assert "one-hot labels" in detail["check_label_release"]
    with pytest.raises(ConfigError, match="supports \\['tabular'\\] inputs, task fmnist"):
        prepare("lucid", {}, "fmnist", 0)


def test_the_waivable_check_names_are_the_checks() -> None:
    """bench.plugin.checks.waivers names the checks without importing them: the two lists agree."""
    from bench.plugin.checks.waivers import CHECK_NAMES

    assert tuple(check.__name__ for check in CHECKS) == CHECK_NAMES
