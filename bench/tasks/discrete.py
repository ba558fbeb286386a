"""The split model a discrete-input task (modality "ids" or "text") hands its mechanisms.

The private input is a tensor of integer ids (tokens, user and movie ids). The client looks
up rows of an embedding table and runs the model up to the split; the intermediate there is
what crosses to the server. Attacks get `client` as the encoder from the looked-up embeddings
(N, *input_shape, D) to the release and `table` to match embeddings back to ids (`lookup`).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from bench.errors import ConfigError
from bench.protocols import FitContext, Splits, Task

ENCODE_BATCH = 256


@dataclass
class EmbeddingSplit:
    """A trained model cut at its split: embedding rows, client part and server part."""

    table: torch.Tensor  # (V, D): row i is the embedding of id i
    client: nn.Module  # embeddings (N, *input_shape, D) -> intermediate at the split
    server: nn.Module  # intermediate -> class scores (N, C)
    trainable: str = ""  # submodule of `server` that noise-aware tuning trains ("" = all)

    @torch.no_grad()
    def encode(self, ids: torch.Tensor) -> torch.Tensor:
        """The noiseless intermediate of a batch of ids, computed in batches."""
        self.client.eval()
        parts = [
            self.client(self.table[ids[i : i + ENCODE_BATCH]])
            for i in range(0, len(ids), ENCODE_BATCH)
        ]
        return torch.cat(parts)


class TwoClassScores(nn.Module):
    """One logit z -> class scores (0, z): softmax gives sigmoid(z) for class 1, so
    cross-entropy on them is the binary cross-entropy of a click model."""

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        z = z.reshape(len(z), 1)
        return torch.cat([torch.zeros_like(z), z], 1)


class DiscreteTask(Task):
    """What sst2 and movielens share: first-n subsampling of fixed splits (`n_train`,
    `n_aux`, `n_test`), `train_epochs`, a cached data fingerprint, and `split_model`."""

    public_ids: tuple[int, ...] = ()  # ids every input carries (not scored by recovery)

    def _init_sizes(
        self, n_train: int | None, n_aux: int | None, n_test: int | None, train_epochs: int
    ) -> None:
        for key, value in (("n_train", n_train), ("n_aux", n_aux), ("n_test", n_test)):
            if value is not None and value < 1:
                raise ConfigError(f"task {self.name}: {key} must be >= 1, got {value}")
        if train_epochs < 1:
            raise ConfigError(f"task {self.name}: train_epochs must be >= 1")
        self.n_train, self.n_aux, self.n_test = n_train, n_aux, n_test
        self.train_epochs = train_epochs
        self._splits: Splits | None = None
        self._fingerprint: str | None = None

    def _size_config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "n_train": self.n_train,
            "n_aux": self.n_aux,
            "n_test": self.n_test,
            "train_epochs": self.train_epochs,
        }

    def _heads(self, full: Splits) -> Splits:
        """The first n of each fixed (pre-shuffled) split."""
        return Splits(
            full.train.head(self.n_train or len(full.train)),
            full.aux.head(self.n_aux or len(full.aux)),
            full.test.head(self.n_test or len(full.test)),
        )

    def data_fingerprint(self) -> str:
        if self._fingerprint is None:
            self._fingerprint = super().data_fingerprint()
        return self._fingerprint

    @abstractmethod
    def split_model(self, ctx: FitContext, split: str | None = None) -> EmbeddingSplit:
        """The task's trained model cut at `split` (None: the task's own split)."""
