"""A skipped audit is never a pass: a claim no audit tests makes `bench validate`
INCONCLUSIVE (exit 3) with the reason, and a claim over training sets is audited by
refitting on neighbouring training sets, which refutes a planted liar (centroids with noise
of std 1e-3 claiming (1, 1e-5)-DP) and is inconclusive, never a pass, otherwise."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch

from bench.certify.audit.result import AuditResult
from bench.certify.audit.training_sets import audit_training_sets, neighbouring_sets
from bench.plugin.checks import under_test, validation_task
from bench.plugin.checks.validation import audit_inconclusive, run_checks
from bench.plugin.protocols import Guarantee, Release
from tests.plugins.bench_test_plugins import NoisyCentroids

pytestmark = pytest.mark.usefixtures("one_thread")
SMALL = {"n_select": 10, "n_eval": 50}  # 120 fits: perfect separation still refutes eps 1


@pytest.fixture(scope="module")
def spam():
    return validation_task("spam")


class Constant(NoisyCentroids):
    """Answers class 0 whatever it was trained on: nothing to refute, nothing shown."""

    name = "test-constant"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0, "delta": 1e-5, "std": 1e-3}

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        values = torch.zeros(len(x), self.classes)
        values[:, 0] = 1.0
        return Release.all_released(values)


def _unaudited(notion: str) -> AuditResult:
    return AuditResult("m", notion, 1.0, 0.0, None, audited=False, passed=True, reason="why")


def test_an_untested_claim_is_inconclusive_and_no_claim_needs_no_audit() -> None:
    assert audit_inconclusive(_unaudited("dfil")) == "no audit tested the claim: why"
    assert audit_inconclusive(_unaudited("ip")) is not None
    assert audit_inconclusive(_unaudited("none")) is None


def test_the_planted_liar_is_refuted(spam) -> None:
    result = audit_training_sets(NoisyCentroids, spam, 0, **SMALL)
    assert result.audited and not result.passed, result.summary()
    assert result.eps_lb > 1.0 and result.inconclusive is None
    assert (result.fpr, result.fnr) == (0.0, 0.0)
    again = audit_training_sets(NoisyCentroids, spam, 0, **SMALL)
    assert again.eps_lb == result.eps_lb and again.threshold == result.threshold


def test_a_mechanism_that_ignores_its_data_is_not_refuted_and_not_passed(spam) -> None:
    result = audit_training_sets(Constant, spam, 0, **SMALL)
    assert result.audited and result.passed and result.eps_lb == 0.0
    assert "no noise model says" in (result.inconclusive or "")
    assert audit_inconclusive(result) == result.inconclusive


def test_a_mechanism_too_slow_to_refit_is_inconclusive_with_the_reason(spam) -> None:
    result = audit_training_sets(NoisyCentroids, spam, 0, budget_s=1e-9, **SMALL)
    assert not result.audited and "exceed its 0 s budget" in result.reason
    assert audit_inconclusive(result) == result.reason


def test_neighbours_follow_the_claims_distance(spam) -> None:
    train = spam.splits().train
    removed = neighbouring_sets(spam, train, "training-set/add-remove")
    assert len(removed.d0) == len(train) + 1 and removed.d1 is train
    relabelled = neighbouring_sets(spam, train, "training-labels/replace-one")
    assert len(relabelled.d0) == len(relabelled.d1) == len(train) + 1
    assert torch.equal(relabelled.d0.x, relabelled.d1.x)
    assert int(relabelled.d0.y[-1]) != int(relabelled.d1.y[-1])


def test_validate_fails_the_liar_on_its_audit(tmp_path) -> None:
    report = run_checks(under_test(NoisyCentroids, cache_root=tmp_path))
    status = {o.check: o.status for o in report.outcomes}
    assert status.pop("check_privacy_audit") == "FAIL"
    assert set(status.values()) == {"PASS"}  # the audit alone catches it
    assert not report.ok and "validate: FAIL" in report.format()


def test_a_skipped_audit_is_skip_and_the_verdict_inconclusive(tmp_path) -> None:
    class Untestable(Constant):
        name = "test-untestable"

        def guarantee(self) -> Guarantee:
            return Guarantee("dfil", {"inv_dfil": 1.0})

    report = run_checks(under_test(Untestable, cache_root=tmp_path))
    audit = {o.check: o for o in report.outcomes}["check_privacy_audit"]
    assert audit.status == "SKIP" and "not audited" in audit.detail
    assert report.ok and report.inconclusive is not None
    assert "validate: INCONCLUSIVE" in report.format() and "1 skipped" in report.format()
