"""What the discrete-input tasks (sst2, movielens) share: `DiscreteTask`, whose
`split_model` hands mechanisms the task's EmbeddingSplit (bench.plugin.discrete), and the
two-class head of a click model."""

from __future__ import annotations

from abc import abstractmethod

import torch
from torch import nn

from bench.plugin.discrete import EmbeddingSplit
from bench.plugin.protocols import FitContext
from bench.tasks.sized import SizedTask


class TwoClassScores(nn.Module):
    """One logit z -> class scores (0, z): softmax gives sigmoid(z) for class 1, so
    cross-entropy on them is the binary cross-entropy of a click model."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = z.reshape(len(z), 1)
        return torch.cat([torch.zeros_like(z), z], 1)


class DiscreteTask(SizedTask):
    """What sst2 and movielens share beyond their sizes: `split_model` and public ids."""

    public_ids: tuple[int, ...] = ()  # ids every input carries (not scored by recovery)

    @abstractmethod
    def split_model(self, ctx: FitContext, split: str | None = None) -> EmbeddingSplit:
        """The task's trained model cut at `split` (None: the task's own split)."""
