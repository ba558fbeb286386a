"""Synthetic Gaussian data with a known prior (dFIL paper, Sec. 3.3.1): x ~ N(0, tau^2 I_784),
tau = 0.05, where the van Trees prior term Tr(J(f_pi))/d = 1/tau^2 is exact and the MAP attack
has a closed form, so the Fisher bounds can be checked against attacks with no estimation.
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from bench.core.errors import ConfigError
from bench.plugin.protocols import DataSplit, Splits
from bench.plugin.registry import register_task
from bench.tasks.sized import SizedTask

SPLIT_SEED = 20260102  # fixed draw: the job seed never changes the data


@register_task
class GaussianTask(SizedTask):
    """x ~ N(0, tau^2 I_784); label = sign of the coordinate sum (a trivial task, so that split
    inference has a utility to report: every coordinate carries signal, so accuracy falls
    smoothly as the noise grows past tau). data_range (-5 tau, 5 tau) holds all but a fraction
    6e-7 of the coordinates; the data are not clipped, which keeps the prior exact.
    train_epochs defaults to 50: the tiny utility model needs several hundred Adam steps at
    the harness's learning rate (1e-3) and costs well under a second per epoch."""

    name = "gaussian"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "synthetic N(0, 0.05^2 I_784)"
    version = "1"
    modality = "vector"
    num_classes = 2
    dim = 784
    tau = 0.05

    def __init__(
        self, n_train: int = 2000, n_aux: int = 1000, n_test: int = 500, train_epochs: int = 50
    ) -> None:
        self._init_sizes(n_train, n_aux, n_test, train_epochs)
        self.input_shape = (self.dim,)
        self.data_range = (-5 * self.tau, 5 * self.tau)

    def config(self) -> dict[str, Any]:
        return {**self._size_config(), "tau": self.tau, "dim": self.dim}

    def _draw(self, n: int, generator: torch.Generator) -> DataSplit:
        x = self.tau * torch.randn(n, self.dim, generator=generator)
        return DataSplit(x, (x.sum(1) > 0).long())

    def splits(self) -> Splits:
        if self._splits is None:
            # One stream per split, so changing n_test never changes train or aux.
            gens = [torch.Generator().manual_seed(SPLIT_SEED + i) for i in range(3)]
            self._splits = Splits(
                train=self._draw(self.n_train, gens[0]),
                aux=self._draw(self.n_aux, gens[1]),
                test=self._draw(self.n_test, gens[2]),
            )
        return self._splits

    def model(self, arch: str = "default") -> nn.Module:
        """A small MLP on the standardised coordinate mean, the label's sufficient statistic
        (a 784-input MLP needs far more than a few thousand samples to find that direction).
        With noise N(0, s^2) on x its accuracy is 1 - arctan(s / tau) / pi at best."""
        if arch != "default":
            raise ConfigError(f"task {self.name} has no model architecture '{arch}'; use default")
        return nn.Sequential(
            _ScaledMean(self.dim**0.5 / self.tau), nn.Linear(1, 16), nn.GELU(), nn.Linear(16, 2)
        )

    def gaussian_prior(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The exact prior: mean zeros(784), per-coordinate variance tau^2 (the MAP attack's)."""
        return torch.zeros(self.dim), torch.full((self.dim,), self.tau**2)


class _ScaledMean(nn.Module):
    """x -> factor * mean(x) as a (N, 1) feature: N(0, 1) for clean inputs at factor
    sqrt(d) / tau."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.factor * x.flatten(1).mean(1, keepdim=True)
