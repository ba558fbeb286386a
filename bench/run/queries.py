"""Repeated queries: an attacker who may ask about the same input k times averages the
answers (an estimate of the expectation over the mechanism's randomness)."""

from __future__ import annotations

import math

import torch
from torch import nn

from bench.core.hashing import derive_seed
from bench.plugin.protocols import Guarantee, Mechanism, NoiseModel, Release


class RepeatedQueries:
    """Wrap a mechanism so each release is the mean of `k` independent releases.

    A sample counts as released when any query was answered; its value is the mean over
    the answered queries. The noise model shrinks to std / sqrt(k): exact for Gaussian
    noise, the CLT approximation for Laplace (documented where it is used).
    """

    def __init__(self, mechanism: Mechanism, k: int) -> None:
        self.mechanism = mechanism
        self.k = k
        self.name = mechanism.name

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        base = int(torch.randint(0, 2**62, (1,), generator=generator))
        releases = [
            self.mechanism.release(
                x, torch.Generator().manual_seed(derive_seed(base, f"q{i}"))
            ).cpu()  # averaged on the CPU, where releases are handed over
            for i in range(self.k)
        ]
        answered = torch.stack([r.released for r in releases]).float()  # (k, N)
        values = torch.stack([r.values for r in releases])
        weights = answered.view(*answered.shape, *([1] * (values.ndim - 2)))
        total = (values * weights).sum(0)
        counts = weights.sum(0).clamp_min(1.0)
        return Release(total / counts, answered.sum(0) > 0, releases[0].meta)

    def encoder(self) -> nn.Module | None:
        return self.mechanism.encoder()

    def noise(self) -> NoiseModel | None:
        base = self.mechanism.noise()
        if base is None or self.k == 1:
            return base
        return NoiseModel("gaussian", base.std / math.sqrt(self.k))

    def embedding_table(self) -> torch.Tensor | None:
        return self.mechanism.embedding_table()

    def guarantee(self) -> Guarantee:
        return self.mechanism.guarantee()
