"""The split model a discrete-input task (modality "ids" or "text") hands its mechanisms.

The private input is a tensor of integer ids (tokens, user and movie ids). The client looks
up rows of an embedding table and runs the model up to the split; the intermediate there is
what crosses to the server. Attacks get `client` as the encoder from the looked-up embeddings
(N, *input_shape, D) to the release and `table` to match embeddings back to ids (`lookup`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from bench.core.device import on_device, to_device

ENCODE_BATCH = 256


@dataclass
class EmbeddingSplit:
    """A trained model cut at its split: embedding rows, client part and server part."""

    table: torch.Tensor  # (V, D): row i is the embedding of id i
    client: nn.Module  # embeddings (N, *input_shape, D) -> intermediate at the split
    server: nn.Module  # intermediate -> class scores (N, C)
    trainable: str = ""  # submodule of `server` that noise-aware tuning trains ("" = all)

    def to(self, device: torch.device | str) -> EmbeddingSplit:
        """This split with its table and parts on `device` (itself when they are there; moved
        parts are copies, since a task's backbone is shared by the splits cut from it)."""
        table = to_device(self.table, device)
        client, server = on_device(self.client, device), on_device(self.server, device)
        if table is self.table and client is self.client and server is self.server:
            return self
        return EmbeddingSplit(table, client, server, self.trainable)

    @torch.no_grad()
    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        """The noiseless intermediate of a batch of ids, computed in batches on the table's
        device."""
        self.client.eval()
        ids = to_device(ids, self.table.device)
        parts = [
            self.client(self.table[ids[i : i + ENCODE_BATCH]])
            for i in range(0, len(ids), ENCODE_BATCH)
        ]
        return torch.cat(parts)
