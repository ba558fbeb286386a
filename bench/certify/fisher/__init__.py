"""Fisher information leakage (dFIL, Maeng et al. 2023): trace.py computes Tr(J^T J) of an
encoder and the noise for a target 1/dFIL, bounds.py the Cramer-Rao / van Trees / RDP lower
bounds on reconstruction MSE and their validity checks, score_matching.py van Trees' prior
term."""
