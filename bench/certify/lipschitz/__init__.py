"""Lipschitz certificates: global upper bounds of whole networks (global_bounds.py, the
sensitivity of IP's output noise), exact local constants of ReLU MLPs over l_inf boxes by MILP
(local.py) and the sound input-splitting test "L(f, box) <= t?" (split.py), both for
Posthoc PTR's DeltaP."""
