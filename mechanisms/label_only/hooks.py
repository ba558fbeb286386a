"""What the label-only family adds to the harness: the audit of its iDP claims' keep rate
over the leave-one-out networks (mechanisms.label_only.audit)."""

from __future__ import annotations

from bench.plugin.hooks import register_audit
from mechanisms.label_only.audit import audit_label_only, claims_idp
from mechanisms.label_only.lucid import LeaveOneOutAccess

register_audit(LeaveOneOutAccess, audit_label_only, claims_idp)
