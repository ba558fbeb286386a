"""Leave-one-out membership inference, calibrated per record: LiRA's per-example test
(Carlini et al. 2022, "Membership Inference Attacks From First Principles", Sec. IV, in its
offline form, Sec. VI-C) with bench's leave-one-out networks as the shadow models.

The adversary is the one differential privacy is stated against: it knows the training
recipe and every training record except the one in question. For a record it can therefore
rebuild the network trained without it, the exact OUT model: N_i (trained on D \\ {d_i}) for
a training record d_i, N itself for a held-out record (N never saw it). Where LiRA fits a
Gaussian to many OUT models' scores, here the OUT model is the very network the record's
absence would give, so the calibration is exact: the score is how much better the served
labels treat the record than that network does, on queries where a difference can show:
the record, random perturbations of it (as the boundary attack), and points on the line
from the record through the OUT network's nearest decision boundary, where one training
point moves labels first. A non-member's served labels are N's, its OUT model's, so on an
unprotected mechanism it scores exactly 0; a member scores above 0 wherever its presence
moved N's labels there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import torch
from torch import nn
from torch.func import functional_call, vmap

from attacks.membership.boundary import BoundaryAttack
from attacks.membership.perturb import task_groups
from bench.plugin.membership import LabelAccess
from bench.plugin.params import Range
from bench.plugin.registry import register_attack
from mechanisms.label_only.leave_one_out import LooRecipe
from mechanisms.label_only.lucid import loo_networks

Params = dict[str, torch.Tensor]
ROWS = 512  # records per vmapped forward pass


def forward_stacked(arch: nn.Module, params: Params, x: torch.Tensor) -> torch.Tensor:
    """(R, k, C) logits of record r's own network (params[...][r]) on its queries x[r]."""
    return vmap(lambda p, q: functional_call(arch, p, (q,)))(params, x)


def boundary_points(
    arch: nn.Module,
    params: Params,
    x: torch.Tensor,
    y: torch.Tensor,
    continuous: torch.Tensor,
    count: int,
    steps: int = 40,
) -> torch.Tensor:
    """(R, count) points per record on the line from x[r] through the nearest point where
    its network's margin for y[r] (logit_y minus the best other logit) is 0, found by Adam
    on |margin| over the continuous columns; the points lie at 0.5 to 1.5 times that step,
    clamped to [0, 1] (categorical columns unchanged, so every point is a valid record)."""
    z = x.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([z], lr=0.02)
    mask = continuous.to(x.dtype)
    for _ in range(steps):
        logits = forward_stacked(arch, params, z.unsqueeze(1)).squeeze(1)
        own = logits.gather(1, y.view(-1, 1)).squeeze(1)
        other = logits.scatter(1, y.view(-1, 1), -torch.inf).max(1).values
        optimiser.zero_grad()
        (own - other).abs().sum().backward()
        z.grad *= mask
        optimiser.step()
        with torch.no_grad():
            z.clamp_(0.0, 1.0)
    step = z.detach() - x
    scale = torch.linspace(0.5, 1.5, count).view(1, count, 1)
    return (x.unsqueeze(1) + scale * step.unsqueeze(1)).clamp(0.0, 1.0)


@register_attack
class LeaveOneOutAttack(BoundaryAttack):
    """The boundary attack's queries plus `boundary` points toward the OUT network's decision
    boundary, each record's score minus the same score of the network trained without it
    (its leave-one-out network, or N for a held-out record). The shadow networks follow the
    LUCID family's recipe (SGD lr 0.1, the task's epochs): exact for label-only, lucid,
    naive-idp and naive-noise; for dp-sgd and alibi they are the non-private networks of
    the same data, a reference the attacker may use but not the served network's own."""

    name = "mia-loo"

    @dataclass(frozen=True)
    class Params(BoundaryAttack.Params):
        boundary: Annotated[int, Range(1, 1000)] = 10  # points toward the decision boundary

    p: Params

    def out_networks(self, train_index: torch.Tensor) -> tuple[nn.Module, Params]:
        """The architecture and, per record, the parameters of the network trained without
        it: stack index i + 1 for training record i, index 0 (N) for a held-out record."""
        epochs = int(self.task.config().get("train_epochs", 30))
        recipe = LooRecipe(epochs=epochs, seed=self.ctx.seed)
        stacked = loo_networks(self.task, self.ctx, False, recipe)  # CPU, cached
        which = train_index + 1
        return self.task.model(), {k: v[which] for k, v in stacked.items()}

    def queries_with_boundary(
        self, x: torch.Tensor, y: torch.Tensor, arch: nn.Module, params: Params
    ) -> torch.Tensor:
        """(N, 1 + perturbations + boundary, d): the boundary attack's queries, then the
        points toward each record's OUT decision boundary."""
        continuous = torch.ones(x.shape[1], dtype=torch.bool)
        for group in task_groups(self.task):
            continuous[list(group)] = False
        parts = []
        for rows in torch.arange(len(x)).split(ROWS):
            sub = {k: v[rows] for k, v in params.items()}
            parts.append(boundary_points(arch, sub, x[rows], y[rows], continuous, self.p.boundary))
        return torch.cat([self.queries_of(x), torch.cat(parts)], dim=1)

    def score(
        self, access: LabelAccess, x: torch.Tensor, y: torch.Tensor, train_index: torch.Tensor
    ) -> torch.Tensor:
        arch, params = self.out_networks(train_index)
        queries = self.queries_with_boundary(x, y, arch, params)
        n, k, d = queries.shape
        served = access.labels(queries.reshape(n * k, d)).reshape(n, k)
        with torch.no_grad():
            reference = torch.cat(
                [
                    forward_stacked(
                        arch, {key: v[rows] for key, v in params.items()}, queries[rows]
                    )
                    for rows in torch.arange(n).split(ROWS)
                ]
            ).argmax(-1)
        truth = y.unsqueeze(1)
        return (served == truth).double().mean(1) - (reference == truth).double().mean(1)
