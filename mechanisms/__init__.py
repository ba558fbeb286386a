"""In-tree privacy mechanisms, one subpackage per family; each module registers its classes
with bench's registry when the registry imports the package.

- `noise/`: additive noise on the input or the output (identity, ldp-image, gauss-input,
  gauss-output, lap-output) and the noise calibration formulas ("Inference Privacy: Properties
  and Mechanisms", 2024).
- `dfil/`: split inference calibrated to Fisher-information leakage (dfil, dp-encoder;
  Maeng et al. 2023).
- `posthoc/`: Posthoc privacy by modified Propose-Test-Release (posthoc-ptr,
  ldp-embedding; Singh et al. 2023 and its supplement).
- `label_only/`: label-only access under individual DP (lucid, naive-idp, naive-noise,
  label-only) and the training-set DP baselines (dp-sgd, alibi; LUCID, 2025).
- `base.py`: the shared base class of mechanisms that release a noisy copy of the input.

A new family is a new subpackage with an `__init__.py` docstring like its siblings'; a new
mechanism in a family is a module whose class is decorated with `@register_mechanism`.
"""
