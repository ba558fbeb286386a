"""What the label-only family adds to the harness: the audit of its iDP claims' keep rate
over the leave-one-out networks (bench.certify.audit.label_only)."""

from __future__ import annotations

from bench.certify.audit.label_only import audit_label_only, claims_idp
from bench.hooks import register_audit
from mechanisms.label_only.lucid import LeaveOneOutAccess

register_audit(LeaveOneOutAccess, audit_label_only, claims_idp)
