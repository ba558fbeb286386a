"""Split inference with Gaussian noise calibrated to Fisher information leakage (dFIL).

Paper: "Bounding the Invertibility of Privacy-Preserving Instance Encoding using Fisher
Information" (Maeng et al. 2023): noise sigma set so that 1/dFIL reaches a target, with
Cramer-Rao and van Trees lower bounds on any attack's reconstruction MSE (bench.certify.fisher).

Entry points (registered names -> module):
- `dfil` (mechanism.py): smooth encoder + N(0, sigma^2) at the split, 1/dFIL = `inv_dfil`.
- `dp-encoder` (dp_encoder.py): the paper's DP baseline, clipped encoding + Gaussian noise.

Support: split.py (the shared split-model machinery, calibration and bounds of both),
smooth_nets.py (GELU / avg-pool encoders, ResNet-18, projections), training.py (split training,
noise-aware training, SNR regulariser), compression.py (the bottleneck on discrete tasks),
split_tuning.py (noise-aware fine-tuning of a discrete task's server; also used by noise/).

To add a sibling: derive from `split.FisherSplitMechanism` and calibrate sigma in `calibrate`;
cached artifacts are keyed by the code of the sibling's module and all it imports.
"""

from mechanisms.dfil import hooks as hooks  # the family's audit and board plots

# The doc page this family's mechanisms link to from a leaderboard (relative to the repository).
DOC_PAGE = "docs/dfil.md"
