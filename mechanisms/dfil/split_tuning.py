"""Noise-aware fine-tuning of a discrete task's server (dFIL paper, Sec. 4.1): train the
layers after the split on train intermediates carrying the mechanism's calibrated noise, so
the server learns to read noisy releases. Privacy is unchanged (post-processing)."""

from __future__ import annotations

import copy
from pathlib import Path

import torch
from torch import nn

from bench.core.hashing import files_digest
from bench.plugin.discrete import EmbeddingSplit
from bench.plugin.protocols import DataSplit, FitContext, NoiseModel, Task
from bench.plugin.training import train_classifier


def noise_tuned_server(
    task: Task, split: EmbeddingSplit, noise: NoiseModel, ctx: FitContext
) -> nn.Module:
    """A copy of `split.server` with its trainable part (`split.trainable`) fine-tuned for
    `train_epochs` epochs on noisy train intermediates (cached per task, data, seed, noise)."""
    recipe = {
        "artifact": "noise-tuned-server",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "seed": ctx.seed,
        "noise": {"kind": noise.kind, "scale": repr(noise.scale)},
        "server": str(split.server),  # which blocks follow the split
        "code": files_digest([Path(__file__)]),
    }
    server = copy.deepcopy(split.server)

    def build() -> dict[str, torch.Tensor]:
        train = task.splits().train
        tuned = copy.deepcopy(split.server).requires_grad_(False)
        tuned.get_submodule(split.trainable).requires_grad_(True)
        train_classifier(
            tuned,
            DataSplit(split.encode(train.x), train.y),
            epochs=int(task.config().get("train_epochs", 3)),
            generator=ctx.generator("server-noise-tuning"),
            transform=lambda h, g: h + noise.sample(h.shape, g, h.device),
            progress=ctx.progress,
            desc=f"{task.name} server noise tuning",
        )
        return tuned.state_dict()

    server.load_state_dict(ctx.cache.get_or_build(recipe, build))
    return server.eval().requires_grad_(False)
