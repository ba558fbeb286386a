"""`posthoc-ptr-reference-code`: the product's Posthoc PTR (mechanisms/posthoc, after
"Posthoc privacy guarantees for collaborative inference with modified Propose-Test-Release",
Singh et al., NeurIPS 2023) with the switches of the attribution study
(studies/posthoc-attribution/README.md), each of which replaces one of bench's choices by the
paper's public code's. Every default is bench's, so at its defaults this mechanism computes
exactly what `posthoc-ptr` computes (only its cache keys and job hashes differ).

A plug-in in bench's sense (bench.plugin): not registered by name, suites name it as
`studies.posthoc_attribution.mechanism:PosthocPTRReferenceCode`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch

from bench.certify.lipschitz.local import OutNorm
from bench.core.codeversion import code_digest
from bench.core.device import to_device
from bench.core.errors import ConfigError
from bench.plugin.protocols import Guarantee
from mechanisms.posthoc.mechanism import PosthocPTR
from studies.posthoc_attribution.training import (
    Adversary,
    Checkpoint,
    Classifier,
    Recipe,
    ReferenceCodeRecipe,
)

# The study's modules, whose code keys the networks it trains (bench's code version of a job
# follows the project's packages only, so the study adds its own to its cache keys).
STUDY_CODE = ("studies.posthoc_attribution.training", "studies.posthoc_attribution.mechanism")

# The sensitivity PTR calibrates to (parameter `sensitivity`) and the output norm of its local
# Lipschitz constants. "l1": the l_inf -> l_1 constant, the l_1 sensitivity the Laplace
# release needs (Theorem 4.4's release step), bench's. "reference-code": LipMIP's 'l1Ball1',
# the l_inf -> l_inf constant max_j ||grad f_j||_1 that the paper's public code used, up to k
# times smaller: a diagnostic, whose rows make no valid claim (`NOT_PRIVATE`).
Sensitivity = Literal["l1", "reference-code"]
SENSITIVITIES: dict[str, OutNorm] = {"l1": "l1", "reference-code": "linf"}
NOT_PRIVATE = (
    "not private: the release noise is calibrated to the l_inf -> l_inf local Lipschitz "
    "constant (the paper's public code), not the l_1 sensitivity the Laplace release needs "
    "(up to k times larger), so Theorem 4.4's release step does not hold"
)
# The switches this mechanism adds to posthoc-ptr's parameters, with bench's values.
SWITCH_DEFAULTS: dict[str, Any] = {
    "sensitivity": "l1",
    "recipe": "bench",
    "checkpoint": "last",
    "classifier": "bench",
    "adversary": "bench",
    "proposal": 0.0,
}


class PosthocPTRReferenceCode(PosthocPTR):
    """Posthoc PTR with the public code's choices as switches (module docstring):
    `sensitivity` (the norm PTR calibrates to; "reference-code" is not private), `recipe`,
    `checkpoint`, `classifier`, `adversary` (studies.posthoc_attribution.training) and
    `proposal` (a hand-set DeltaP, 0: calibrated; PTR's test checks any DeltaP fixed before
    the query, so it keeps Theorem 4.4)."""

    name = "posthoc-ptr-reference-code"

    @dataclass(frozen=True)
    class Params(PosthocPTR.Params):
        sensitivity: Sensitivity = "l1"
        recipe: Recipe = "bench"
        checkpoint: Checkpoint = "last"
        classifier: Classifier = "bench"
        adversary: Adversary = "bench"  # the ARL term's proxy adversary
        proposal: float = 0.0  # DeltaP given by hand; 0: calibrated (mean + 3 std)

    p: Params

    def check_params(self) -> None:
        super().check_params()
        if not (self.p.proposal >= 0 and math.isfinite(self.p.proposal)):
            raise ConfigError(f"{self.name}: proposal must be a finite DeltaP (0: calibrated)")

    @property
    def out_norm(self) -> OutNorm:
        """The output norm of the local Lipschitz constants (SENSITIVITIES)."""
        return SENSITIVITIES[self.p.sensitivity]

    def training_recipe(self, train_x: torch.Tensor | None = None) -> ReferenceCodeRecipe:
        """The switches' recipe; the public code's trains on posterior samples, so given the
        training inputs it reads the embedder's posterior spread there."""
        p = self.p
        z_std = None
        if train_x is not None and p.recipe == "reference-code":
            z_std = self._posterior_std(train_x)
        return ReferenceCodeRecipe(p.recipe, p.checkpoint, p.classifier, p.adversary, z_std)

    def training_settings(self) -> dict[str, Any]:
        p = self.p
        return {
            "recipe": p.recipe,
            "checkpoint": p.checkpoint,
            "classifier": p.classifier,
            "adversary": p.adversary,
            "study_code": code_digest(*STUDY_CODE),
        }

    def proposed_delta_p(self, calibrated: float) -> float:
        return self.p.proposal or calibrated

    @torch.no_grad()
    def _posterior_std(self, x: torch.Tensor) -> torch.Tensor:
        """The VAE posterior's standard deviation at each training input (the embedder is in
        evaluation mode: no draw)."""
        _, logvar = self.vae.encode(to_device(x, self.device))
        return (0.5 * logvar).exp()

    def guarantee(self) -> Guarantee:
        """posthoc-ptr's claim; under the public code's sensitivity the same numbers carry
        `not_private` with the reason (the reports never rank such rows)."""
        base = super().guarantee()
        if self.p.sensitivity == "l1":
            return base
        return Guarantee(base.notion, {**base.params, "not_private": NOT_PRIVATE}, base.distance)
