"""Training of utility models, shared by all mechanisms and cached per (task, data, seed).

Training runs where the model is (bench.core.device): the data goes there once, batches are
drawn by index from the CPU generator, so the batch order, and on the CPU every number,
is the same on every device a job may run on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn
from tqdm.auto import tqdm

from bench.core.device import module_device, to_device
from bench.core.hashing import files_digest, seeded_init
from bench.plugin.protocols import DataSplit, FitContext, Task

InputTransform = Callable[[torch.Tensor, torch.Generator], torch.Tensor]


def train_classifier(
    model: nn.Module,
    data: DataSplit,
    *,
    epochs: int,
    generator: torch.Generator,
    batch_size: int = 128,
    lr: float = 1e-3,
    transform: InputTransform | None = None,
    progress: bool = False,
    desc: str = "train",
) -> nn.Module:
    """Train `model` with Adam and cross-entropy on the model's device; batches drawn from
    `generator` only.

    `transform` (e.g. the mechanism's noise) is applied to each batch (on that device)
    before the forward pass, which is how noise-aware training plugs in.
    """
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    device = module_device(model)
    xs, ys = to_device(data.x, device), to_device(data.y, device)
    n = len(data)
    steps = tqdm(range(epochs), desc=desc, disable=not progress, leave=False)
    for _ in steps:
        order = to_device(torch.randperm(n, generator=generator), device)
        for start in range(0, n, batch_size):
            idx = order[start : start + batch_size]
            x, y = xs[idx], ys[idx]
            if transform is not None:
                x = transform(x, generator)
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    model.eval()
    return model


@torch.no_grad()
def predict_scores(model: nn.Module, x: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """Class scores of `model` on `x`, in eval mode and batches, on the model's device."""
    model.eval()
    device = module_device(model)
    return torch.cat(
        [model(to_device(x[i : i + batch_size], device)) for i in range(0, len(x), batch_size)]
    )


def utility_model(task: Task, ctx: FitContext, arch: str = "default") -> nn.Module:
    """The task's utility model trained on clean train data with the job seed (cached), on
    the job's device."""
    epochs = int(task.config().get("train_epochs", 3))
    recipe = {
        "artifact": "utility-model",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "arch": arch,
        "epochs": epochs,
        "seed": ctx.seed,
        "code": files_digest([Path(__file__), Path(__file__).parent / "models.py"]),
    }

    def build() -> dict[str, torch.Tensor]:
        with seeded_init(ctx.seed, "utility-model-init"):
            model = task.model(arch).to(ctx.device)  # initialised on the CPU, then moved
        train_classifier(
            model,
            task.splits().train,
            epochs=epochs,
            generator=ctx.generator("utility-model"),
            progress=ctx.progress,
            desc=f"{task.name} utility model",
        )
        return model.state_dict()

    model = task.model(arch)
    model.load_state_dict(ctx.cache.get_or_build(recipe, build))
    return model.to(ctx.device).eval()
