"""The utility model an IP mechanism serves: the task's standard CNN or a 1-Lipschitz SLL
network, optionally fine-tuned with the mechanism's own calibrated noise (the IP paper's
"optimally tuned" models, Sec. V). Every model is trained once per (task, data, seed) and
cached; fine-tuning starts from a copy of the cached model and really updates its weights.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from bench.core.hashing import seeded_init, source_digest
from bench.plugin.protocols import FitContext, NoiseModel, Task
from bench.plugin.training import train_classifier, utility_model
from mechanisms.noise.lipschitz_nets import sll_network

ServedModel = Literal["cnn", "sll"]  # the task's CNN or the 1-Lipschitz network
SLL_LR = 3e-3  # Adam; 1e-3 underfits the 1-Lipschitz nets in the task's few epochs
NoiseSite = Literal["input", "output"]


@dataclass(frozen=True)
class GaussianIPParams:
    """The parameters of a Gaussian (eps, delta, r)-IP mechanism whose server classifies with
    `model`, first fine-tuned with the calibrated noise when `finetune` is set."""

    eps: float = 1.0
    delta: float = 1e-5
    r: float = 0.1
    model: ServedModel = "sll"
    finetune: bool = False


_CODE = (  # the code a served model's artifact depends on (part of its cache recipe)
    __name__,
    "mechanisms.noise.lipschitz_nets",
    "bench.plugin.training",
    "bench.plugin.models",
)


def _epochs(task: Task) -> int:
    return int(task.config().get("train_epochs", 3))


def _recipe(task: Task, ctx: FitContext, kind: str) -> dict[str, Any]:
    """What determines the base model of `kind`."""
    return {
        "task": task.config(),
        "data": task.data_fingerprint(),
        "model": kind,
        "epochs": _epochs(task),
        "seed": ctx.seed,
        "code": source_digest(*_CODE),
    }


def _fresh_sll(task: Task) -> nn.Module:
    mean = getattr(task, "mean", tuple(0.0 for _ in range(task.input_shape[0])))
    return sll_network(task.input_shape, task.num_classes, mean)


def lipschitz_model(task: Task, ctx: FitContext) -> nn.Module:
    """The task's 1-Lipschitz SLL network trained on clean train data with the job seed, on
    the job's device."""
    recipe = {"artifact": "sll-model", "lr": SLL_LR, **_recipe(task, ctx, "sll")}

    def build() -> dict[str, torch.Tensor]:
        with seeded_init(ctx.seed, "sll-model-init"):
            model = _fresh_sll(task).to(ctx.device)  # initialised on the CPU, then moved
        train_classifier(
            model,
            task.splits().train,
            epochs=_epochs(task),
            generator=ctx.generator("sll-model"),
            lr=SLL_LR,
            progress=ctx.progress,
            desc=f"{task.name} SLL model",
        )
        return model.state_dict()

    model = _fresh_sll(task)
    model.load_state_dict(ctx.cache.get_or_build(recipe, build))
    return model.to(ctx.device).eval()


def base_model(task: Task, ctx: FitContext, kind: str) -> nn.Module:
    """The clean-trained model of `kind`: "cnn" (bench.plugin.training.utility_model) or "sll"."""
    return utility_model(task, ctx) if kind == "cnn" else lipschitz_model(task, ctx)


class _TrainingNoise(nn.Module):
    """Adds `noise` to its input in training mode only (noise-aware output fine-tuning)."""

    def __init__(self, noise: NoiseModel, generator: torch.Generator) -> None:
        super().__init__()
        self.noise, self.generator = noise, generator

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        if not self.training:
            return z
        return z + self.noise.sample(z.shape, self.generator, z.device)


def noise_finetuned(
    task: Task, ctx: FitContext, kind: str, noise: NoiseModel, site: NoiseSite
) -> nn.Module:
    """The model of `kind` after `train_epochs` more epochs on train data with `noise` added
    where the mechanism adds it: to the inputs (Gauss-Input) or to the logits (output
    mechanisms). A copy: the cached clean model is left untouched."""
    recipe = {
        "artifact": "noise-finetuned",
        "noise": {"kind": noise.kind, "scale": repr(noise.scale)},
        "site": site,
        **_recipe(task, ctx, kind),
    }
    base = base_model(task, ctx, kind)

    def build() -> dict[str, torch.Tensor]:
        model = copy.deepcopy(base)
        lr = SLL_LR if kind == "sll" else 1e-3
        common: dict[str, Any] = {
            "epochs": _epochs(task),
            "generator": ctx.generator(f"finetune-{site}"),
            "lr": lr,
            "progress": ctx.progress,
            "desc": f"{task.name} {kind} noise fine-tuning",
        }
        if site == "input":
            train_classifier(
                model,
                task.splits().train,
                transform=lambda x, g: x + noise.sample(x.shape, g, x.device),
                **common,
            )
        else:
            noisy = nn.Sequential(model, _TrainingNoise(noise, ctx.generator("finetune-noise")))
            train_classifier(noisy, task.splits().train, **common)
        return model.state_dict()

    model = copy.deepcopy(base)
    model.load_state_dict(ctx.cache.get_or_build(recipe, build))
    return model.eval()


def ip_model(
    task: Task, ctx: FitContext, kind: str, noise: NoiseModel | None, site: NoiseSite
) -> nn.Module:
    """The clean model of `kind`, or its noise-fine-tuned copy when `noise` is given."""
    if noise is None:
        return base_model(task, ctx, kind)
    return noise_finetuned(task, ctx, kind, noise, site)
