"""What a mechanism family may add to the harness (a public module, for in-tree families and
plug-ins alike), each registered when the family's code is imported (its hooks module):
- a privacy notion of its own (`register_notion` with a `NotionSpec`: how a reader names
  it, the parameter stating its level, how its bounds are judged, what audits it);
- an audit of its own claims (`register_audit`), used instead of the input-pair audit for
  its mechanisms and their subclasses;
- plots of its own sweeps on every board with its rows (`register_board_plot`)."""

from __future__ import annotations

from bench.certify.audit.bounds import eps_lower_bound
from bench.certify.audit.registry import AuditOptions, Claim, FamilyAudit, register_audit
from bench.certify.audit.result import AuditResult, audit_generator
from bench.plugin.families import BoardPlot, register_board_plot
from bench.plugin.notions import NotionSpec, PrivacyLevel, register_notion

__all__ = [
    "AuditOptions",
    "AuditResult",
    "BoardPlot",
    "Claim",
    "FamilyAudit",
    "NotionSpec",
    "PrivacyLevel",
    "audit_generator",
    "eps_lower_bound",
    "register_audit",
    "register_board_plot",
    "register_notion",
]
