"""`optimization`: the unbiased white-box attack (dFIL paper, Attack-ub).

x_hat = argmin_x0 ||o - Enc(x0)||^2 / ||o||^2 by Adam from x0 ~ N(0, init_std^2), run
per sample in batches until the loss plateaus. It uses no prior, so its error is the
quantity the Cramer-Rao bound speaks about.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from bench.errors import ConfigError
from bench.protocols import Attack, DataSplit, FitContext, Mechanism, Release, Task
from bench.registry import register_attack


@register_attack
class OptimizationAttack(Attack):
    """Invert the mechanism's encoder by gradient descent on the release-matching loss."""

    name = "optimization"
    defaults: ClassVar[dict[str, Any]] = {
        "lr": 0.1,
        "max_steps": 500,
        "patience": 25,
        "rel_tol": 1e-4,
        "init_std": 0.1,
        "batch_size": 256,
    }

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        encoder = mechanism.encoder()
        if encoder is None:
            raise ConfigError(
                f"attack {self.name} needs a differentiable encoder; mechanism "
                f"{mechanism.name} exposes none (label-only mechanisms need label-only attacks)"
            )
        self.encoder = encoder.eval().requires_grad_(False)
        self.input_shape = tuple(aux.x.shape[1:])
        self.generator = ctx.generator("optimization-init")

    def reconstruct(self, release: Release) -> torch.Tensor:
        bs = int(self.params["batch_size"])
        parts = [self._invert(release.values[i : i + bs]) for i in range(0, len(release), bs)]
        return torch.cat(parts)

    def _invert(self, observed: torch.Tensor) -> torch.Tensor:
        p = self.params
        init = torch.randn((len(observed), *self.input_shape), generator=self.generator)
        x = nn.Parameter(init * float(p["init_std"]))
        opt = torch.optim.Adam([x], lr=float(p["lr"]))
        target = observed.flatten(1)
        norm = target.pow(2).sum(1).clamp_min(1e-12)
        best_x = x.detach().clone()
        best_loss = torch.full((len(observed),), float("inf"))
        best_total, stale = float("inf"), 0
        for _ in range(int(p["max_steps"])):
            per_sample = (self.encoder(x).flatten(1) - target).pow(2).sum(1) / norm
            improved = per_sample.detach() < best_loss
            best_loss = torch.where(improved, per_sample.detach(), best_loss)
            best_x[improved] = x.detach()[improved]
            total = float(per_sample.detach().sum())
            if total < best_total * (1 - float(p["rel_tol"])):
                best_total, stale = total, 0
            else:
                stale += 1
                if stale >= int(p["patience"]):
                    break
            opt.zero_grad()
            per_sample.sum().backward()
            opt.step()
        return best_x
