"""The label-only data-augmentation attack (Choquette-Choo et al. 2021, "Label-Only
Membership Inference Attacks", Sec. 4): training makes a network's label robust around the
points it was fitted on, so the attacker asks for the record and for random perturbations
of it and scores membership by the share answered with the record's true label."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from attacks.membership.perturb import with_perturbations
from bench.membership import LabelAccess, MembershipAttack
from bench.registry import register_attack


@register_attack
class BoundaryAttack(MembershipAttack):
    """Score: the share of the record and its `perturbations` served with its true label;
    continuous columns get N(0, sigma^2), each categorical feature is redrawn with
    probability `resample`."""

    name = "mia-boundary"
    defaults: ClassVar[dict[str, Any]] = {
        "records": 0,
        "perturbations": 20,
        "sigma": 0.05,
        "resample": 0.1,
    }
    param_ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "perturbations": (1, 10_000),
        "resample": (0.0, 1.0),
    }

    def queries_of(self, x: torch.Tensor) -> torch.Tensor:
        """(N, perturbations + 1, d): the records and their perturbations, drawn from the
        job's seed (the same draws in every job of the seed)."""
        p = self.params
        generator = self.ctx.generator("mia-perturbations")
        return with_perturbations(
            x,
            self.task,
            int(p["perturbations"]),
            float(p["sigma"]),
            float(p["resample"]),
            generator,
        )

    def score(
        self, access: LabelAccess, x: torch.Tensor, y: torch.Tensor, train_index: torch.Tensor
    ) -> torch.Tensor:
        queries = self.queries_of(x)
        n, k, d = queries.shape
        served = access.labels(queries.reshape(n * k, d)).reshape(n, k)
        return (served == y.unsqueeze(1)).double().mean(1)
