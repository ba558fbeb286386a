"""Posthoc privacy (Singh et al., NeurIPS 2023, and its supplement): a beta-VAE embedder, an
obfuscator network, and modified Propose-Test-Release that answers bottom or a Laplace-noised
embedding, with DeltaP from exact local Lipschitz MILPs (bench.certify.lipschitz).

Entry points (registered names -> module):
- `posthoc-ptr` (mechanism.py): the 8 obfuscator variants (`variant`) under modified PTR.
- `ldp-embedding` (mechanism.py): Laplace on the clipped embedding (the LDP baseline).

Support: models.py (beta-VAE, obfuscators, their training), ptr.py (one certified decision
per query, Alg. 1 of the supplement), audit.py (the audit of PTR's test and release steps,
registered in hooks.py).

To add a sibling (e.g. another obfuscator): add the variant to models.py and to the
`variant` choices of mechanism.py; a new release rule goes in ptr.py with a test against
Alg. 1's bisection. A choice that only a study needs (the paper's public code's, say) stays
out of these parameters: a study subclasses `PosthocPTR` and overrides its override points
(`out_norm`, `training_recipe`, `training_settings`, `proposed_delta_p`), as the attribution
study's `posthoc-ptr-reference-code` does (studies/posthoc_attribution).
"""

from mechanisms.posthoc import hooks as hooks  # the family's audit and board plots

# The doc page this family's mechanisms link to from a leaderboard (relative to the repository).
DOC_PAGE = "docs/posthoc.md"
