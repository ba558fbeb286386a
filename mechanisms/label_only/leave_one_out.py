"""Leave-one-out training for iDP (LUCID paper, 2025, Sec. 4): the network N on D and one
network N_i on D \\ {d_i} per training point, all from the same initialisation and the
same batch order, the removed point masked out of its batches.

The n + 1 networks train together: parameters are stacked along a leading model axis and
one SGD step of every model is a single `torch.func.vmap` of the per-model gradient, with
each model's 0/1 mask over the batch. A model's loss is the mean cross-entropy over its
unmasked batch points, exactly what training it alone on its dataset computes, so the
stacked result equals sequential training (to 1e-6:
tests/mechanisms/label_only/test_leave_one_out.py).

The stacked step is the vectorised path an accelerator pays off on: the initialisation is
drawn on the CPU (the same on every device), then parameters, masks and data move to the
device given (bench.core.device) and every step runs there.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap
from tqdm.auto import tqdm

from bench.core.device import CPU, on_device, to_device
from bench.core.hashing import seeded_init
from bench.plugin.protocols import DataSplit

Params = dict[str, torch.Tensor]


@dataclass(frozen=True)
class LooRecipe:
    """What determines the networks: SGD learning rate, epochs, batch size and seed."""

    lr: float = 0.1
    epochs: int = 30
    batch_size: int = 1024
    seed: int = 0


def masked_loss(
    model: nn.Module, params: Params, mask: torch.Tensor, x: torch.Tensor, y: torch.Tensor
) -> torch.Tensor:
    """Mean cross-entropy over the batch points whose mask is 1 (0 if none is)."""
    logits = functional_call(model, params, (x,))
    losses = F.cross_entropy(logits, y, reduction="none")
    return (losses * mask).sum() / mask.sum().clamp_min(1.0)


def batch_order(n: int, recipe: LooRecipe) -> Iterator[torch.Tensor]:
    """The index batches of every epoch, shared by all n + 1 networks."""
    generator = torch.Generator().manual_seed(recipe.seed)
    for _ in range(recipe.epochs):
        yield from torch.randperm(n, generator=generator).split(recipe.batch_size)


def initial_params(model: nn.Module, seed: int) -> Params:
    """The common initialisation: `model`'s parameters re-drawn under `seed`."""
    with seeded_init(seed, "leave-one-out-init"):
        for module in model.modules():
            if hasattr(module, "reset_parameters") and module is not model:
                module.reset_parameters()
    return {k: v.detach().clone() for k, v in model.named_parameters()}


def removal_masks(n: int, removed: torch.Tensor) -> torch.Tensor:
    """(len(removed), n) 0/1 masks; a removed index of -1 keeps every point (N on D)."""
    masks = torch.ones(len(removed), n)
    keep = removed >= 0
    masks[keep.nonzero().squeeze(1), removed[keep]] = 0.0
    return masks


def train_stacked(
    model: nn.Module,
    data: DataSplit,
    removed: torch.Tensor,
    recipe: LooRecipe,
    *,
    progress: bool = False,
    device: torch.device = CPU,
) -> Params:
    """Parameters of one network per entry of `removed` (a training index, or -1 for the
    full dataset), stacked on a leading axis, trained together with vmapped SGD on `device`
    (`model` stays on the CPU, where the common initialisation is drawn)."""
    n = len(data)
    init = initial_params(model, recipe.seed)
    params = {
        k: to_device(v, device).unsqueeze(0).repeat(len(removed), *([1] * v.ndim))
        for k, v in init.items()
    }
    masks = to_device(removal_masks(n, removed), device)
    xs, ys = to_device(data.x, device), to_device(data.y, device)
    template = on_device(model, device)

    def loss(p: Params, mask: torch.Tensor, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return masked_loss(template, p, mask, x, y)

    step = vmap(grad(loss), in_dims=(0, 0, None, None))
    batches = list(batch_order(n, recipe))
    for batch in tqdm(batches, desc="leave-one-out SGD", disable=not progress, leave=False):
        index = to_device(batch, device)
        grads = step(params, masks[:, index], xs[index], ys[index])
        params = {k: p - recipe.lr * grads[k] for k, p in params.items()}
    return params


def train_sequential(
    model: nn.Module,
    data: DataSplit,
    removed: int,
    recipe: LooRecipe,
    device: torch.device = CPU,
) -> nn.Module:
    """One network trained alone with torch.optim.SGD on D minus point `removed` (-1: none),
    same initialisation and batches: the reference the stacked training must equal. The
    initialisation is drawn on the CPU; the model is then moved to `device` and trained."""
    initial = initial_params(model, recipe.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(initial[name])
    model = model.to(device)
    mask = to_device(removal_masks(len(data), torch.tensor([removed]))[0], device)
    xs, ys = to_device(data.x, device), to_device(data.y, device)
    optimiser = torch.optim.SGD(model.parameters(), lr=recipe.lr)
    for batch in batch_order(len(data), recipe):
        index = to_device(batch, device)
        optimiser.zero_grad()
        logits = model(xs[index])
        losses = F.cross_entropy(logits, ys[index], reduction="none")
        m = mask[index]
        ((losses * m).sum() / m.sum().clamp_min(1.0)).backward()
        optimiser.step()
    return model


def leave_one_out(
    model: nn.Module,
    data: DataSplit,
    recipe: LooRecipe,
    *,
    chunk: int = 256,
    progress: bool = False,
    device: torch.device = CPU,
) -> Params:
    """N (index 0) and N_1..N_n (index i + 1 without point i), stacked; trained `chunk`
    networks at a time to bound memory, on `device`."""
    removed = torch.arange(-1, len(data))
    parts = [
        train_stacked(model, data, part, recipe, progress=progress, device=device)
        for part in tqdm(removed.split(chunk), desc="leave-one-out networks", disable=not progress)
    ]
    return {k: torch.cat([p[k] for p in parts]) for k in parts[0]}


class StackMember(nn.Module):
    """One network of a stack (`params`, its slice of the stacked parameters), callable
    like a module."""

    def __init__(self, arch: nn.Module, params: Params) -> None:
        super().__init__()
        self.arch, self.params = arch, params

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return functional_call(self.arch, self.params, (x,))


def stacked_logits(model: nn.Module, params: Params, x: torch.Tensor) -> torch.Tensor:
    """(models, N, C) logits of every stacked network on inputs x, on the parameters'
    device."""
    x = to_device(x, next(iter(params.values())).device)
    return vmap(lambda p: functional_call(model, p, (x,)))(params)
