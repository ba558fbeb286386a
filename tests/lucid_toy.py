"""A 2-D toy for LUCID's decision bounds: 14 points, N and its 14 leave-one-out 2x6 networks
(built so that they disagree), and the brute-force grid the bounds are checked against."""

from __future__ import annotations

import math

import torch

from bench.certify.idp.bound import Layer, dense_layers
from bench.plugin.protocols import DataSplit
from bench.tasks.tabular import tabular_model
from mechanisms.label_only.leave_one_out import LooRecipe, leave_one_out, stacked_logits

ToyNetworks = tuple[torch.nn.Module, dict[str, torch.Tensor], list[list[Layer]]]


def toy_data(n: int = 14, seed: int = 0) -> DataSplit:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 2, generator=g)
    y = ((x[:, 0] - x[:, 1]) + 0.25 * torch.randn(n, generator=g) > 0).long()
    return DataSplit(x, y)


def toy_networks() -> ToyNetworks:
    """The architecture, the stacked parameters and every network's dense layers."""
    arch = tabular_model("2x6", 2, 2)
    stacked = leave_one_out(arch, toy_data(), LooRecipe(lr=0.5, epochs=60, batch_size=8, seed=0))
    n = next(iter(stacked.values())).shape[0]
    layers = [dense_layers(arch, {k: v[i] for k, v in stacked.items()}, 2) for i in range(n)]
    return arch, stacked, layers


def grid_max(
    arch: torch.nn.Module, stacked: dict[str, torch.Tensor], target: int, member: int | None = None
) -> float:
    """Brute force on a 301 x 301 grid of [0, 1]^2: N's largest confidence in `target` where
    some leave-one-out network (or only network `member`) does not predict `target` (a lower
    estimate of DB)."""
    axis = torch.linspace(0, 1, 301)
    x = torch.cartesian_prod(axis, axis)
    with torch.no_grad():
        logits = stacked_logits(arch, stacked, x)
    others = logits[1:] if member is None else logits[1 + member : 2 + member]
    leaks = (others.argmax(-1) != target).any(0)
    margin = logits[0][:, target] - logits[0][:, 1 - target]
    return float(margin[leaks].max()) if leaks.any() else -math.inf
