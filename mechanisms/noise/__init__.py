"""Additive-noise mechanisms on the input or on the model's output.

Paper: "Inference Privacy: Properties and Mechanisms" (2024): (eps, delta, r)-IP by Gaussian /
Laplace noise on the input or on logits, with noise calibrated to a certified Lipschitz
constant; ldp-image is the eps-LDP reference.

Entry points (registered names -> module):
- `identity` (identity.py): no protection, the reference row.
- `ldp-image`, `gauss-input` (input_noise.py): Laplace / Gaussian noise on the input.
- `lap-output`, `gauss-output` (output_noise.py): noise on the served model's logits.

Support: bench.plugin.accounting (every noise-scale formula, shared with dfil/ and posthoc/),
served_models.py (the model an IP mechanism serves, optionally noise-fine-tuned),
lipschitz_nets.py (1-Lipschitz SLL networks).

To add a sibling: a module here with a class derived from `bench.plugin.
InputSpaceMechanism` (noise on the input) or `Mechanism`, decorated with
`@register_mechanism`; put its scale formula in bench/plugin/accounting.py with a test
against the formula in tests/bench/test_calibration.py, and let `bench validate NAME` audit it.
"""

# The doc page this family's mechanisms link to from a leaderboard (relative to the repository).
DOC_PAGE = "docs/inference-privacy.md"
