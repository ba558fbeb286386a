"""The label-only data-augmentation attack (Choquette-Choo et al. 2021, "Label-Only
Membership Inference Attacks", Sec. 4): training makes a network's label robust around the
points it was fitted on, so the attacker asks for the record and for random perturbations
of it and scores membership by the share answered with the record's true label."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import torch

from attacks.membership.perturb import with_perturbations
from bench.plugin.membership import LabelAccess, MembershipAttack
from bench.plugin.params import Range
from bench.plugin.registry import register_attack


@register_attack
class BoundaryAttack(MembershipAttack):
    """Score: the share of the record and its `perturbations` served with its true label;
    continuous columns get N(0, sigma^2), each categorical feature is redrawn with
    probability `resample`."""

    name = "mia-boundary"

    @dataclass(frozen=True)
    class Params(MembershipAttack.Params):
        perturbations: Annotated[int, Range(1, 10_000)] = 20
        sigma: float = 0.05
        resample: Annotated[float, Range(0.0, 1.0)] = 0.1

    p: Params

    def queries_of(self, x: torch.Tensor) -> torch.Tensor:
        """(N, perturbations + 1, d): the records and their perturbations, drawn from the
        job's seed (the same draws in every job of the seed)."""
        p = self.p
        generator = self.ctx.generator("mia-perturbations")
        return with_perturbations(
            x,
            self.task,
            p.perturbations,
            p.sigma,
            p.resample,
            generator,
        )

    def score(
        self, access: LabelAccess, x: torch.Tensor, y: torch.Tensor, train_index: torch.Tensor
    ) -> torch.Tensor:
        queries = self.queries_of(x)
        n, k, d = queries.shape
        served = access.labels(queries.reshape(n * k, d)).reshape(n, k)
        return (served == y.unsqueeze(1)).double().mean(1)
