"""Membership-inference attacks for label-only access (bench.run.kinds.membership runs them).

- `mia-gap` (gap.py): member iff the served label is right (Yeom et al. 2018).
- `mia-boundary` (boundary.py): how robust the served label is to perturbations of the
  record (Choquette-Choo et al. 2021).
- `mia-loo` (leave_one_out.py): the same queries, calibrated per record against the network
  trained without it, bench's leave-one-out networks as shadow models (Carlini et al. 2022).
"""
