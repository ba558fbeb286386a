"""`sst2`: sentence sentiment with split inference on a transformer, tokens as input.

Embedded default: the 10,605 Rotten Tomatoes snippets with mean human ratings (Hutto &
Gilbert 2014, shipped in the vaderSentiment 3.3.2 source archive): positive when the rating
is > 0, negative when < 0, the 37 neutral ones dropped. That is the same source family as
SST (Pang & Lee's Rotten Tomatoes sentences) but not SST itself: numbers on it are not GLUE
SST-2 numbers. Fixed splits: 1,000 test, 1,000 aux (the attacker's), the rest train. With
`data_root` the real GLUE SST-2 is used (train.tsv + dev.tsv, or a `datasets` directory):
dev is the test split, aux a fixed 5,000 of train.

The model is all-MiniLM-L6-v2 (embedded) or any local BERT / DistilBERT directory (`model`),
frozen, with a linear sentiment head on mean-pooled outputs fine-tuned per seed (cached);
`split` chooses the last client block (early 0, middle 2, late 4).
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from bench.core.device import to_device
from bench.core.errors import ConfigError
from bench.core.hashing import files_digest, seeded_init
from bench.data import readers as sources
from bench.plugin.discrete import ENCODE_BATCH, EmbeddingSplit
from bench.plugin.protocols import DataSplit, FitContext, Splits
from bench.plugin.registry import register_task
from bench.plugin.training import train_classifier
from bench.tasks.discrete import DiscreteTask
from bench.tasks.transformer_split import (
    EMBEDDED,
    SPLITS,
    Client,
    Server,
    hidden_size,
    load_backbone,
    word_table,
)

SPLIT_SEED = 20260108
RT_TEST, RT_AUX, GLUE_AUX = 1000, 1000, 5000
Labelled = list[tuple[str, int]]
_CODE = [Path(__file__), Path(__file__).parent / "transformer_split.py"]


@cache
def _sentences(root: str | None) -> tuple[Labelled, Labelled, Labelled]:
    """(train, aux, test) labelled sentences of the fixed splits."""
    rng = np.random.default_rng(SPLIT_SEED)
    if root is not None:
        raw = sources.glue_sst2(Path(root))
        train = [raw.train[i] for i in rng.permutation(len(raw.train))]
        return train[GLUE_AUX:], train[:GLUE_AUX], raw.test
    rows = [(text, int(rating > 0)) for text, rating in sources.rotten_tomatoes() if rating != 0]
    rows = [rows[i] for i in rng.permutation(len(rows))]
    return rows[RT_TEST + RT_AUX :], rows[RT_TEST : RT_TEST + RT_AUX], rows[:RT_TEST]


def _tokenize(tokenizer: Any, rows: Labelled, max_length: int) -> DataSplit:
    ids = tokenizer(
        [text for text, _ in rows],
        padding="max_length",
        truncation=True,
        max_length=max_length,
        return_tensors="pt",
    )["input_ids"]
    return DataSplit(ids.long(), torch.tensor([label for _, label in rows], dtype=torch.long))


@cache
def _tokenized(root: str | None, model: str, max_length: int) -> Splits:
    _, tokenizer = load_backbone(model)
    return Splits(*(_tokenize(tokenizer, rows, max_length) for rows in _sentences(root)))


class TextClassifier(nn.Module):
    """Token ids -> class scores: word embeddings, client, server (the whole model)."""

    def __init__(self, split: EmbeddingSplit) -> None:
        super().__init__()
        self.register_buffer("table", split.table)
        self.client, self.server = split.client, split.server

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.server(self.client(self.table[ids]))


@register_task
class SST2(DiscreteTask):
    """Binary sentence sentiment: Rotten Tomatoes snippets (embedded) or GLUE SST-2.

    Options: `n_train`, `n_aux`, `n_test` (first n of each fixed split), `data_root` (GLUE
    SST-2; also BENCH_SST2_ROOT), `model` (minilm or a local model directory), `max_length`
    (tokens per sentence, padded / truncated), `split` (early, middle, late),
    `train_epochs` (of the head).
    """

    name = "sst2"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "Rotten Tomatoes snippets"
    version = "1"
    modality = "text"
    num_classes = 2
    data_range = (0.0, 1.0)  # unused for tokens; reconstruction is scored by token recovery

    def __init__(
        self,
        n_train: int | None = None,
        n_aux: int | None = None,
        n_test: int | None = None,
        data_root: str | None = None,
        model: str = EMBEDDED,
        max_length: int = 32,
        split: str = "early",
        train_epochs: int = 30,
    ) -> None:
        self._init_sizes(n_train, n_aux, n_test, train_epochs)
        if not (isinstance(max_length, int) and 4 <= max_length <= 512):
            raise ConfigError(
                f"task sst2: max_length must be an integer in [4, 512], got {max_length}"
            )
        if split not in SPLITS:
            raise ConfigError(f"task sst2: split must be one of {', '.join(SPLITS)}, got {split!r}")
        self.data_root = data_root or os.environ.get("BENCH_SST2_ROOT")
        self.model_name, self.max_length, self.split = model, max_length, split
        self.input_shape = (max_length,)

    def config(self) -> dict[str, Any]:
        return {
            **self._size_config(),
            "model": self.model_name,
            "max_length": self.max_length,
            "split": self.split,
        }

    @property
    def public_ids(self) -> tuple[int, ...]:
        """Special tokens ([CLS], [SEP], [PAD], ...) are in every input and known to the
        attacker: token recovery is scored on the sentence's own tokens only."""
        return tuple(sorted(load_backbone(self.model_name)[1].all_special_ids))

    def splits(self) -> Splits:
        if self._splits is None:
            full = _tokenized(self.data_root, self.model_name, self.max_length)
            self._splits = full.head(self.n_train, self.n_aux, self.n_test)
        return self._splits

    def sentences(self, ids: torch.Tensor) -> list[str]:
        """Token ids back to text (special and padding tokens dropped), for leaderboards."""
        tokenizer = load_backbone(self.model_name)[1]
        return tokenizer.batch_decode(ids.tolist(), skip_special_tokens=True)

    def _cut(self, head: nn.Linear, last_block: int) -> EmbeddingSplit:
        net, _ = load_backbone(self.model_name)
        return EmbeddingSplit(
            word_table(net), Client(net, last_block), Server(net, last_block, head), "head"
        )

    def model(self, arch: str = "default") -> nn.Module:
        if arch != "default":
            raise ConfigError(f"task sst2 has no model architecture '{arch}'; use default")
        net, _ = load_backbone(self.model_name)
        return TextClassifier(self._cut(nn.Linear(hidden_size(net), self.num_classes), -1))

    def _features(self, ctx: FitContext) -> torch.Tensor:
        """Mean-pooled outputs of the frozen encoder on the train split (cached; no seed)."""
        recipe = {
            "artifact": "sst2-features",
            "task": {**self.config(), "split": None, "train_epochs": None},
            "data": self.data_fingerprint(),
            "code": files_digest(_CODE),
        }

        def build() -> torch.Tensor:
            whole = self._cut(nn.Linear(1, 1), -1).to(ctx.device)
            ids = to_device(self.splits().train.x, ctx.device)
            parts = []
            with torch.no_grad():
                batches = range(0, len(ids), ENCODE_BATCH)
                for i in tqdm(batches, desc="sst2 features", disable=not ctx.progress, leave=False):
                    words = whole.table[ids[i : i + ENCODE_BATCH]]
                    parts.append(whole.server.features(whole.client(words)))
            return torch.cat(parts)

        return ctx.cache.get_or_build(recipe, build)

    def split_model(self, ctx: FitContext, split: str | None = None) -> EmbeddingSplit:
        """The frozen encoder cut after block `split` (default: the task's), with the
        sentiment head fine-tuned on the clean train split (cached per data and seed), on
        the job's device."""
        split = split or self.split
        if split not in SPLITS:
            raise ConfigError(f"task sst2: split must be one of {', '.join(SPLITS)}, got {split!r}")
        net, _ = load_backbone(self.model_name)
        recipe = {
            "artifact": "sst2-head",
            "task": {**self.config(), "split": None},
            "data": self.data_fingerprint(),
            "seed": ctx.seed,
            "code": files_digest(_CODE),
        }

        def build() -> dict[str, torch.Tensor]:
            with seeded_init(ctx.seed, "sst2-head-init"):
                head = nn.Linear(hidden_size(net), self.num_classes).to(ctx.device)
            data = DataSplit(self._features(ctx), self.splits().train.y)
            gen = ctx.generator("sst2-head")
            train_classifier(head, data, epochs=self.train_epochs, generator=gen, batch_size=64)
            return head.state_dict()

        head = nn.Linear(hidden_size(net), self.num_classes)
        head.load_state_dict(ctx.cache.get_or_build(recipe, build))
        cut = self._cut(head.eval().requires_grad_(False), SPLITS[split]).to(ctx.device)
        cut.client.eval()
        cut.server.eval()
        return cut
