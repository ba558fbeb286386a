"""What a mechanism family may add to the harness (a public module, for in-tree families and
plug-ins alike), each registered when the family's code is imported:
- an audit of its own claims (`register_audit`), used instead of the input-pair audit for
  its mechanisms and their subclasses;
- plots of its own sweeps on every board with its rows (`register_board_plot`);
- the parameter that states its notion's privacy level when that is not eps
  (`register_privacy_level`)."""

from __future__ import annotations

from bench.certify.audit.bounds import eps_lower_bound
from bench.certify.audit.registry import AuditOptions, Claim, FamilyAudit, register_audit
from bench.certify.audit.result import AuditResult, audit_generator
from bench.report.board.families import (
    BoardPlot,
    PrivacyLevel,
    register_board_plot,
    register_privacy_level,
)

__all__ = [
    "AuditOptions",
    "AuditResult",
    "BoardPlot",
    "Claim",
    "FamilyAudit",
    "PrivacyLevel",
    "audit_generator",
    "eps_lower_bound",
    "register_audit",
    "register_board_plot",
    "register_privacy_level",
]
