"""Certificates that mechanisms calibrate against: sound bounds, never estimates alone.

- `milp.py`: the MILP / LP layer (HiGHS, Gurobi where licensed): a guarantee uses the
  solver's certified bound, never an incumbent; a time or node limit yields a sound answer.
- `lipschitz/`: global Lipschitz upper bounds (global_bounds.py; IP output noise), exact
  local Lipschitz constants over boxes (local.py) and the splitting test "L <= t?"
  (split.py; Posthoc PTR).
- `idp/`: LUCID's iDP decision bound (bound.py: hyper-network MILP and its ablations;
  diff.py: per-network differential bounds).
- `fisher/`: dFIL (trace.py: Tr(J^T J) via torch.func), the Cramer-Rao / van Trees / RDP
  bounds (bounds.py) and the van Trees prior term (score_matching.py).
- `audit/`: the empirical privacy audit behind `bench validate` and `eps_audit_lb`
  (core.py: the input-pair audit; pairs.py: input pairs at the claimed radius; bounds.py:
  Clopper-Pearson lower bounds on eps; registry.py: where a family registers the audit of
  its own mechanisms' randomised tests, which lives in the family's folder, e.g.
  mechanisms/posthoc/audit.py, mechanisms/label_only/audit.py).
- `accounting.py`: the noise calibrations (Laplace, classic and analytic Gaussian), public
  as bench.plugin.accounting.

Architecture: mechanisms calibrate against these modules, and the audit tests what they
claim; nothing here imports a mechanism. A family's own audit is registered by the family
(bench.plugin.hooks.register_audit), so the audit package never recognises a mechanism by name.

A new certificate goes in the subpackage of the quantity it bounds, with a test that checks
it against brute force or a closed form on a small case.
"""
