"""`movielens`: click prediction with NCF-MLP (dFIL paper, Maeng et al. 2023, Sec. 4.2), ids as
input.

A click is a rating of 5 (the paper). Each user's ratings are sorted by time; the first 90%
are train, the last 10% test (per-user chronological split). The attacker's aux split is a
fixed 5% of the train ratings. The input is (user row, movie row) into one embedding table
(users first, then movies), so `lookup` recovers both ids against the same rows.
"""

from __future__ import annotations

import itertools
import os
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn

from bench.core.errors import ConfigError
from bench.core.hashing import files_digest, seeded_init
from bench.data import readers as sources
from bench.plugin.discrete import EmbeddingSplit
from bench.plugin.protocols import DataSplit, FitContext, Splits
from bench.plugin.registry import register_task
from bench.plugin.training import train_classifier
from bench.tasks.discrete import DiscreteTask, TwoClassScores

SPLIT_SEED = 20260108
TEST_FRACTION = 0.1
AUX_FRACTION = 0.05
EMBED_DIM = 32
MLP = (64, 32, 16, 1)  # output sizes of the MLP layers; the split follows the first


def _chronological(raw: sources.RawRatings) -> tuple[torch.Tensor, torch.Tensor, np.ndarray]:
    """Ids as rows of one table (users, then movies), click labels, and a test mask holding
    each user's last 10% of ratings by time (at least one when the user has two or more)."""
    users, user_idx = np.unique(raw.user, return_inverse=True)
    _, movie_idx = np.unique(raw.movie, return_inverse=True)
    x = np.stack([user_idx, len(users) + movie_idx], 1)
    y = (raw.rating >= 5.0).astype(np.int64)
    order = np.lexsort((raw.timestamp, user_idx))  # by user, then time
    counts = np.bincount(user_idx, minlength=len(users))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order)) - np.repeat(starts, counts)
    n_test = np.where(counts >= 2, np.maximum(1, np.round(TEST_FRACTION * counts)), 0)
    test = rank >= (counts - n_test)[user_idx]
    return torch.from_numpy(x), torch.from_numpy(y), test


@cache
def _full(root: str | None) -> tuple[Splits, int]:
    raw = sources.movielens_csv(Path(root)) if root else sources.movielens_small()
    x, y, test = _chronological(raw)
    rng = np.random.default_rng(SPLIT_SEED)
    train_idx = rng.permutation(np.flatnonzero(~test))
    test_idx = rng.permutation(np.flatnonzero(test))
    n_aux = int(AUX_FRACTION * len(train_idx))

    def take(idx: np.ndarray) -> DataSplit:
        index = torch.from_numpy(idx)
        return DataSplit(x[index], y[index])

    splits = Splits(take(train_idx[n_aux:]), take(train_idx[:n_aux]), take(test_idx))
    return splits, int(x.max()) + 1


class NCF(nn.Module):
    """NCF-MLP (He et al. 2017): 32-d user and movie embeddings, MLP [64, 32, 16, 1]."""

    def __init__(self, n_rows: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(n_rows, EMBED_DIM)
        nn.init.normal_(self.embedding.weight, std=0.1)
        self.first = nn.Linear(2 * EMBED_DIM, MLP[0])
        layers: list[nn.Module] = []
        for width_in, width_out in itertools.pairwise(MLP):
            layers += [nn.ReLU(), nn.Linear(width_in, width_out)]
        self.rest = nn.Sequential(*layers, TwoClassScores())

    def client(self) -> nn.Module:
        """Embeddings (N, 2, 32) -> the first linear layer's output (N, 64)."""
        return nn.Sequential(nn.Flatten(1), self.first)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.rest(self.client()(self.embedding(ids)))


@register_task
class MovieLens(DiscreteTask):
    """MovieLens latest-small (embedded) or MovieLens-20M (`data_root`), clicks with NCF-MLP.

    Options: `n_train`, `n_aux`, `n_test` (first n of each fixed, shuffled split),
    `data_root` (directory with ratings.csv; also BENCH_MOVIELENS_ROOT), `train_epochs`.
    """

    name = "movielens"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "MovieLens latest-small"
    version = "1"
    modality = "ids"
    utility_metric = "auc"
    num_classes = 2
    input_shape = (2,)
    data_range = (0.0, 1.0)  # unused for ids; reconstruction is scored by id recovery

    def __init__(
        self,
        n_train: int | None = None,
        n_aux: int | None = None,
        n_test: int | None = None,
        data_root: str | None = None,
        train_epochs: int = 2,
    ) -> None:
        self._init_sizes(n_train, n_aux, n_test, train_epochs)
        self.data_root = data_root or os.environ.get("BENCH_MOVIELENS_ROOT")

    def config(self) -> dict[str, Any]:
        return {**self._size_config(), "full": self.data_root is not None}

    def splits(self) -> Splits:
        if self._splits is None:
            full, self.n_rows = _full(self.data_root)
            self._splits = full.head(self.n_train, self.n_aux, self.n_test)
        return self._splits

    def model(self, arch: str = "default") -> nn.Module:
        if arch != "default":
            raise ConfigError(f"task movielens has no model architecture '{arch}'; use default")
        self.splits()
        return NCF(self.n_rows)

    def split_model(self, ctx: FitContext, split: str | None = None) -> EmbeddingSplit:
        """NCF-MLP trained on the train clicks (cached per data and seed), cut after its
        first linear layer (the only split; `split` is accepted and ignored). Adam (lr 1e-3,
        batch 256, 2 epochs) instead of the paper's one epoch of Nesterov SGD on
        MovieLens-20M: on the 100k small set it reaches the paper's AUC (~0.82) where one
        SGD epoch does not."""
        recipe = {
            "artifact": "ncf-mlp",
            "task": self.config(),
            "data": self.data_fingerprint(),
            "seed": ctx.seed,
            "code": files_digest([Path(__file__)]),
        }

        def build() -> dict[str, torch.Tensor]:
            with seeded_init(ctx.seed, "ncf-init"):
                model = self.model().to(ctx.device)
            train_classifier(
                model,
                self.splits().train,
                epochs=self.train_epochs,
                generator=ctx.generator("ncf-train"),
                batch_size=256,
                progress=ctx.progress,
                desc="movielens NCF-MLP",
            )
            return model.state_dict()

        model = self.model()
        model.load_state_dict(ctx.cache.get_or_build(recipe, build))
        model.to(ctx.device).eval().requires_grad_(False)
        return EmbeddingSplit(model.embedding.weight.detach(), model.client(), model.rest)
