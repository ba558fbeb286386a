"""`lookup`: token / id recovery for discrete inputs (dFIL paper, MovieLens and text).

Reconstruct the embeddings by inverting the encoder (the unbiased optimisation attack in
embedding space), then return the nearest rows of the mechanism's embedding table.
"""

from __future__ import annotations

import torch

from attacks.optimization import EncoderInversion
from bench.core.device import to_cpu, to_device
from bench.core.errors import ConfigError
from bench.plugin.protocols import DataSplit, FitContext, Mechanism, Release, Task
from bench.plugin.registry import register_attack


@register_attack
class LookupAttack(EncoderInversion):
    """Invert the encoder to embeddings, then rank embedding-table rows by l2 distance."""

    name = "lookup"
    modalities = frozenset({"ids", "text"})

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        table = mechanism.embedding_table()
        if table is None:
            raise ConfigError(
                f"attack lookup needs an embedding table; mechanism {mechanism.name} has none"
            )
        self.table = to_device(table.detach().float(), ctx.device)
        super().fit(mechanism, task, aux, ctx)  # optimises embeddings: (*input_shape, D)

    def initial(self, n: int) -> torch.Tensor:
        """Start at the mean embedding plus N(0, init_std^2) jitter."""
        jitter = super().initial(n)
        return self.table.mean(0) + jitter

    def ranked(self, release: Release, k: int) -> torch.Tensor:
        """The k nearest table rows of each reconstructed embedding, ranked on the attack's
        device, handed back on the CPU."""
        embeddings = to_device(self.reconstruct_on_device(release), self.device)
        distances = torch.cdist(embeddings.flatten(0, -2), self.table)
        top = distances.topk(min(k, len(self.table)), largest=False).indices
        return to_cpu(top.view(*embeddings.shape[:-1], -1))

    def reconstruct(self, release: Release) -> torch.Tensor:
        return self.ranked(release, 1)[..., 0]
