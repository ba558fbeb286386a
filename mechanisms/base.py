"""Shared base for mechanisms that release (a noisy copy of) the input itself."""

from __future__ import annotations

import torch
from torch import nn

from bench.protocols import FitContext, Mechanism, NoiseModel, Release, Splits, Task
from bench.training import predict_scores, utility_model


class InputSpaceMechanism(Mechanism):
    """Release x + noise; the server classifies the release with the task's utility model.

    The encoder is the identity, so white-box attacks see the noise model directly.
    """

    modalities = frozenset({"image", "tabular", "vector"})

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.task = task
        self.model = utility_model(task, ctx)
        self._noise = self.calibrate(task)

    def calibrate(self, task: Task) -> NoiseModel | None:
        """The noise model for the current parameters (None: no noise)."""
        return None

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        values = x.clone()
        if self._noise is not None:
            values = values + self._noise.sample(x.shape, generator)
        return Release.all_released(values)

    def predict(self, release: Release) -> torch.Tensor:
        return predict_scores(self.model, release.values)

    def encoder(self) -> nn.Module:
        return nn.Identity()

    def noise(self) -> NoiseModel | None:
        return self._noise
