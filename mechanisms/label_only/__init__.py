"""Label-only access: the server answers a class label, never scores.

Paper: LUCID, "Guarding the Privacy of Label-Only Access to Neural Network Classifiers via iDP
Verification" (2025): individual DP (iDP) for label-only access, with the iDP decision bound
computed soundly by MILP over the network and its leave-one-out networks (bench.certify.idp),
compared with training-set DP baselines.

Entry points (registered names -> module):
- `lucid`, `naive-idp`, `naive-noise`, `label-only` (lucid.py): iDP label access over the
  leave-one-out networks, and its references.
- `dp-sgd` (dp_sgd.py), `alibi` (alibi.py): the same network trained with DP-SGD, or on
  ALIBI's noised soft labels.

Support: base.py (the label-only mechanism base: canonical records, the exponential
mechanism), leave_one_out.py (N and its n leave-one-out networks, vmapped training),
audit.py (the audit of the iDP keep rate, registered in hooks.py).

To add a sibling: derive from `base.LabelOnlyMechanism` (or lucid.LeaveOneOutAccess to reuse
the cached leave-one-out networks) and decorate with `@register_mechanism`; a bound its
guarantee rests on must be a certified solver bound (bench.certify.idp.bound.certified_maximum).
"""

from mechanisms.label_only import hooks as hooks  # the family's audit and board plots

# The doc page this family's mechanisms link to from a leaderboard (relative to the repository).
DOC_PAGE = "docs/lucid.md"
