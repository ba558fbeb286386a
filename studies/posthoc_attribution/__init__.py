"""The code of the Posthoc attribution study (studies/posthoc-attribution/README.md): why
bench's Posthoc PTR falls short of Table 1 of "Posthoc privacy guarantees for collaborative
inference with modified Propose-Test-Release" (Singh et al., NeurIPS 2023), measured by
switching, one at a time, bench's choices to those of the paper's public code.

- mechanism.py: `posthoc-ptr-reference-code` (`PosthocPTRReferenceCode`), the product's
  `posthoc-ptr` with six switches (sensitivity, recipe, checkpoint, classifier, adversary,
  proposal) whose defaults are bench's, so that at its defaults it is `posthoc-ptr`.
- training.py: the public code's training choices as a `TrainingRecipe` of
  mechanisms.posthoc.models (its obfuscator width and step, posterior samples, noise and
  contrastive terms, affine classifier, convolutional decoder, checkpoint rule).

Suites name the mechanism `studies.posthoc_attribution.mechanism:PosthocPTRReferenceCode`.
"""
