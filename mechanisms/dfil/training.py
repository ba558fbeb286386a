"""Training of split models for dFIL-calibrated split inference, with the dFIL paper's
optimisations (Sec. 4.1): noise-aware training and the SNR regulariser (the compression layer
is architecture, see mechanisms.dfil.smooth_nets).

Noise-aware training. The release noise is sigma = sqrt(target * E[Tr(J^T J)] / d), and it
depends on the encoder being trained: with a fixed sigma the encoder could raise its SNR by
scaling its output up, a gain the final calibration takes back. So sigma is recalibrated at
every step from an unbiased Hutchinson estimate of Tr(J^T J) on the batch (detached), which
makes the training noise scale with the encoder exactly as the release noise will.

SNR regulariser. alpha * Tr(J^T J) / ||e - e_bar||^2 per sample (Hutchinson estimate, with
its graph). The paper writes e^T e; we use the energy of the encoding around the batch mean,
because a constant offset carries no information about x yet would shrink the paper's ratio
for free (a bias is enough), leaving the noise, which depends on J only, unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from tqdm.auto import tqdm

from bench.certify.fisher.trace import hutchinson_trace
from bench.core.device import module_device, randn, to_device
from bench.plugin.protocols import DataSplit
from mechanisms.dfil.smooth_nets import SplitModel


@dataclass(frozen=True)
class SplitTraining:
    """How to train a split model: epochs, Adam step, batch size, and the optimisations
    (`target`: the 1/dFIL of noise-aware training, None for clean; `snr_reg`: alpha)."""

    epochs: int
    lr: float = 1e-3
    batch_size: int = 128
    target: float | None = None
    snr_reg: float = 0.0


def snr_penalty(trace: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Per-sample Tr(J^T J) / ||e - e_bar||^2: the inverse SNR at a fixed dFIL (Sec. 4.1)."""
    centred = e.flatten(1) - e.flatten(1).mean(0, keepdim=True)
    return trace / centred.pow(2).sum(1).clamp_min(1e-12)


def _step_loss(
    model: SplitModel,
    x: torch.Tensor,
    y: torch.Tensor,
    recipe: SplitTraining,
    input_dim: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """Cross-entropy on the (noisy, if noise-aware) encoding, plus the SNR penalty."""
    needs_trace = recipe.target is not None or recipe.snr_reg > 0
    if not needs_trace:
        return nn.functional.cross_entropy(model(x), y)
    trace, e = hutchinson_trace(model.client, x, generator)
    loss = torch.zeros((), device=e.device)
    if recipe.snr_reg > 0:
        loss = loss + recipe.snr_reg * snr_penalty(trace, e).mean()
    if recipe.target is not None:
        sigma = math.sqrt(recipe.target * float(trace.detach().mean().clamp_min(0)) / input_dim)
        e = e + sigma * randn(e.shape, generator, e.device)
    return loss + nn.functional.cross_entropy(model.server(e), y)


def train_split(
    model: SplitModel,
    data: DataSplit,
    recipe: SplitTraining,
    generator: torch.Generator,
    *,
    progress: bool = False,
    desc: str = "split model",
) -> SplitModel:
    """Train the parameters of `model` that require grad with Adam on cross-entropy (plus
    the optimisations in `recipe`), on the model's device; batches and noise come from
    `generator` only."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=recipe.lr)
    input_dim = math.prod(data.x.shape[1:])
    device = module_device(model)
    xs, ys = to_device(data.x, device), to_device(data.y, device)
    model.train()
    for _ in tqdm(range(recipe.epochs), desc=desc, disable=not progress, leave=False):
        order = to_device(torch.randperm(len(data), generator=generator), device)
        for start in range(0, len(data), recipe.batch_size):
            idx = order[start : start + recipe.batch_size]
            loss = _step_loss(model, xs[idx], ys[idx], recipe, input_dim, generator)
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model
