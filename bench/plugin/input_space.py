"""Shared base for mechanisms that release (a noisy copy of) the input itself, or, for
discrete inputs (token or user / movie ids), of the task's split intermediate."""

from __future__ import annotations

import torch
from torch import nn

from bench.core.device import to_cpu, to_device
from bench.plugin.protocols import FitContext, Mechanism, NoiseModel, Release, Splits, Task
from bench.plugin.training import predict_scores, utility_model

DISCRETE = frozenset({"ids", "text"})


class InputSpaceMechanism(Mechanism):
    """Release x + noise; the server classifies the release with the task's utility model.

    The encoder is the identity, so white-box attacks see the noise model directly. On a
    discrete task the release is the split intermediate of the task's model on the
    looked-up embeddings, plus noise (`discrete_fit`). Models and noise draws are on the
    job's device; releases and predictions are handed back on the CPU.
    """

    modalities = frozenset({"image", "tabular", "vector"})

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.task, self.device = task, ctx.device
        if task.modality in DISCRETE:
            self.discrete_fit(task, ctx)
            return
        self.model = utility_model(task, ctx)
        self._noise = self.calibrate(task)

    def discrete_fit(self, task: Task, ctx: FitContext) -> None:
        """Take the task's trained split model (bench.plugin.discrete.EmbeddingSplit)."""
        self._split = task.split_model(ctx)  # type: ignore[attr-defined]
        self.model = self._split.server
        self._noise = self.calibrate(task)

    def calibrate(self, task: Task) -> NoiseModel | None:
        """The noise model for the current parameters (None: no noise)."""
        return None

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        split = getattr(self, "_split", None)
        x = to_device(x, self.device)
        values = x.clone() if split is None else split.encode(x)
        if self._noise is not None:
            values = values + self._noise.sample(values.shape, generator, values.device)
        return Release.all_released(values).cpu()

    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(predict_scores(self.model, release.values))

    def encoder(self) -> nn.Module:
        split = getattr(self, "_split", None)
        return nn.Identity() if split is None else split.client

    def embedding_table(self) -> torch.Tensor | None:
        split = getattr(self, "_split", None)
        return None if split is None else split.table

    def noise(self) -> NoiseModel | None:
        return self._noise
