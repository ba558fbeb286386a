"""What the label-only family adds to the harness: its notion, individual differential
privacy (iDP), and the audit of its iDP claims' keep rate over the leave-one-out networks
(mechanisms.label_only.audit)."""

from __future__ import annotations

from bench.plugin.hooks import NotionSpec, register_audit, register_notion
from mechanisms.label_only.audit import audit_label_only, claims_idp
from mechanisms.label_only.lucid import LeaveOneOutAccess

# eps-iDP (Soria-Comas et al. 2017; "Guarding the Privacy of Label-Only Access to Neural
# Network Classifiers via iDP Verification", 2025): the served answers on the one training set
# D and on D without any one of its records are eps-indistinguishable. It is a property of D,
# not of a population: no membership game's DP ceiling applies, and its decision bound is an
# exact certificate (a single violation breaks it).
register_notion(NotionSpec("idp", "iDP", neighbours="training set", zero_level=True))
register_audit(LeaveOneOutAccess, audit_label_only, claims_idp)
