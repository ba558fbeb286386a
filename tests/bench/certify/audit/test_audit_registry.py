"""The audit a mechanism gets is the one its family registered, found along its class bases,
for the claims that audit answers; the job hash of an audited job covers that audit's code
and no other family's."""

from __future__ import annotations

from bench.certify.audit.registry import audit_modules, registered_audit
from bench.plugin.notions import Claim
from bench.run.plan import code_files_of
from mechanisms.label_only.lucid import LabelOnly, LeaveOneOutAccess, NaiveIDP
from mechanisms.noise.input_noise import GaussInput
from mechanisms.posthoc.mechanism import PosthocPTR

PTR_AUDIT = "mechanisms.posthoc.audit"
KEEP_RATE_AUDIT = "mechanisms.label_only.audit"


class DerivedPTR(PosthocPTR):
    """A subclass inherits its family's audit."""


def test_families_register_their_audits_and_subclasses_inherit_them() -> None:
    assert audit_modules(PosthocPTR) == audit_modules(DerivedPTR) == (PTR_AUDIT,)
    assert audit_modules(NaiveIDP) == (KEEP_RATE_AUDIT,)
    assert registered_audit(GaussInput) is None  # the input-pair audit


def test_a_family_audit_answers_only_the_claims_it_tests() -> None:
    keep_rate = registered_audit(LeaveOneOutAccess)
    assert keep_rate is not None
    assert keep_rate.applies(Claim("idp", 1.0, 0.0, None, "training-set/leave-one-out"))
    assert not keep_rate.applies(Claim("none"))  # label-only: no claim
    ptr = registered_audit(PosthocPTR)
    assert ptr is not None and not ptr.applies(Claim("ip", 1.0, 0.0, 0.5, "l2/input"))
    assert registered_audit(LabelOnly) is keep_rate


def test_an_audited_job_hash_covers_its_own_family_audit_only() -> None:
    ptr_files = {p.as_posix() for p in code_files_of(PosthocPTR, audited=True)}
    gauss_files = {p.as_posix() for p in code_files_of(GaussInput, audited=True)}
    assert any(f.endswith("posthoc/audit.py") for f in ptr_files)
    assert any(f.endswith("certify/audit/core.py") for f in gauss_files)
    assert not any(f.endswith("posthoc/audit.py") for f in gauss_files)
    assert not any(f.endswith("label_only/audit.py") for f in gauss_files)
    unaudited = {p.as_posix() for p in code_files_of(PosthocPTR, audited=False)}
    assert not any(f.endswith("posthoc/audit.py") for f in unaudited)
