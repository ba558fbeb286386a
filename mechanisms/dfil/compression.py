"""The dFIL paper's split-inference optimisations (Maeng et al. 2023, Sec. 4.1) on
discrete-input tasks (`sst2`, `movielens`): a compression bottleneck at the split, noise-aware
training of it and of the server, and the SNR regulariser.

Model. The task's trained client (MiniLM's embedding layer and blocks 0..k, or NCF-MLP's
first linear layer) stays frozen, and so does the embedding table: dFIL is taken with
respect to the looked-up embeddings, and a trainable table could grow its scale until the
1/dFIL floor (in the table's units) means nothing. After it come mean pooling over positions
(sst2: the server's own pooling, moved to the client) and a linear layer to `k` dimensions,
the compression; the server decompresses (linear k -> 64, GELU) and classifies. The noise
then lands on k coordinates instead of L x 384 (sst2) or 64 (movielens).

Training. With the frozen part's features f(x) (m-dim) and the bottleneck e = W f + b, the
Jacobian is J(x) = W J_f(x), so the calibration mean Tr(J^T J) = Tr(W G W^T) with
G = E_x[J_f J_f^T] (m x m), computed once: exactly (W_f W_f^T) for an affine client, else
by Gaussian JVP probes (E_v[(J_f v)(J_f v)^T] = J_f J_f^T, Hutchinson 1990). Every step then
recalibrates sigma = sqrt(target Tr(W G W^T) / d) (the dFIL calibration, dFIL paper Eqs.
4-5) for the current W, with its gradient, so the encoder sees the noise its Jacobian buys.
The served sigma is NOT this one: `dfil` recalibrates on the final encoder with exact traces.
Everything runs on the device of the base split (the job's, bench.core.device).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torch.func import jvp

from bench.core.device import randn, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import files_digest, seeded_init, tensor_digest
from bench.plugin.discrete import ENCODE_BATCH, EmbeddingSplit
from bench.plugin.protocols import DataSplit, FitContext, Task

HIDDEN = 64  # width of the server's decompression layer
GRAM_PROBES = 2  # Gaussian JVP probes per sample for G when the client is not affine
GRAM_SAMPLES = 1024  # train inputs G is estimated on (relative error of Tr(W G W^T) ~3%)
_CODE = [Path(__file__)]


@dataclass(frozen=True)
class CompressionTraining:
    """How the bottleneck and server are trained: epochs, Adam step, batch size, the 1/dFIL
    of noise-aware training (None: clean) and the SNR regulariser's alpha."""

    epochs: int
    lr: float = 3e-3
    batch_size: int = 128
    target: float | None = None
    snr_reg: float = 0.0


class CompressedClient(nn.Module):
    """Embeddings -> the frozen client, mean pooling over positions if it keeps them, then a
    linear bottleneck to k dimensions (what crosses to the server)."""

    def __init__(self, base: nn.Module, width: int, k: int) -> None:
        super().__init__()
        self.base = base.eval().requires_grad_(False)
        self.compress = nn.Linear(width, k)

    def features(self, words: torch.Tensor) -> torch.Tensor:
        """The frozen part's output, pooled to (N, width)."""
        h = self.base(words)
        return h.mean(1) if h.dim() > 2 else h

    def forward(self, words: torch.Tensor) -> torch.Tensor:
        return self.compress(self.features(words))


def decompressing_server(k: int, classes: int) -> nn.Module:
    """The server behind a k-dim bottleneck: decompression to HIDDEN, GELU, classifier."""
    return nn.Sequential(nn.Linear(k, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, classes))


def _affine_weight(base: nn.Module) -> torch.Tensor | None:
    """W when `base` is Flatten / Linear layers with one Linear (J = W everywhere), else None."""
    layers = list(base) if isinstance(base, nn.Sequential) else [base]
    linear = [m for m in layers if isinstance(m, nn.Linear)]
    if len(linear) != 1 or not all(isinstance(m, nn.Flatten | nn.Linear) for m in layers):
        return None
    return linear[0].weight.detach().double()


def feature_gram(
    client: CompressedClient, table: torch.Tensor, ids: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """G = mean_x J_f(x) J_f(x)^T of the frozen features f (float64, m x m) over the
    embeddings of `ids`: exactly W W^T for an affine client, else GRAM_PROBES Gaussian JVP
    probes on each of the first GRAM_SAMPLES inputs (unbiased: E[v v^T] = I). Then the mean
    Tr(J^T J) of the bottleneck W f + b is Tr(W G W^T)."""
    weight = _affine_weight(client.base)
    if weight is not None:
        return weight @ weight.T
    ids = to_device(ids[:GRAM_SAMPLES], table.device)
    total = torch.zeros((), device=table.device)
    with torch.no_grad():
        for start in range(0, len(ids), ENCODE_BATCH):
            batch = table[ids[start : start + ENCODE_BATCH]].clone()
            for _ in range(GRAM_PROBES):
                v = randn(batch.shape, generator, batch.device, batch.dtype)
                cols = jvp(client.features, (batch,), (v,))[1].double()
                total = total + cols.T @ cols
    return total / (GRAM_PROBES * len(ids))


def bottleneck_trace(compress: nn.Linear, gram: torch.Tensor) -> torch.Tensor:
    """Mean Tr(J^T J) = Tr(W G W^T) of the bottleneck over the data G was taken on, with
    its gradient in W."""
    w = compress.weight.double()
    return ((w @ gram) * w).sum()


def snr_penalty(trace: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Mean Tr(J^T J) / mean ||e - e_bar||^2 over the batch: the inverse SNR of the release at
    a fixed dFIL (sigma^2 is proportional to the trace; dFIL paper Sec. 4.1, item 3). Energy
    around the batch mean: an offset carries no information yet would inflate e^T e."""
    centred = e - e.mean(0, keepdim=True)
    return trace / centred.pow(2).sum(1).mean().double().clamp_min(1e-12)


def train_bottleneck(
    client: CompressedClient,
    server: nn.Module,
    data: DataSplit,
    gram: torch.Tensor,
    input_dim: int,
    recipe: CompressionTraining,
    generator: torch.Generator,
) -> None:
    """Adam on cross-entropy over (bottleneck, server) from precomputed features `data.x`;
    noise-aware: N(0, sigma^2) at the split with sigma recalibrated at every step. Runs on
    the bottleneck's device."""
    params = [*client.compress.parameters(), *server.parameters()]
    opt = torch.optim.Adam(params, lr=recipe.lr)
    device = client.compress.weight.device
    xs, ys, gram = (to_device(t, device) for t in (data.x, data.y, gram))
    server.train()
    for _ in range(recipe.epochs):
        order = to_device(torch.randperm(len(data), generator=generator), device)
        for start in range(0, len(data), recipe.batch_size):
            idx = order[start : start + recipe.batch_size]
            e = client.compress(xs[idx])
            loss = torch.zeros((), dtype=torch.float64, device=device)
            if recipe.target is not None or recipe.snr_reg > 0:
                trace = bottleneck_trace(client.compress, gram)
                if recipe.snr_reg > 0:
                    loss = loss + recipe.snr_reg * snr_penalty(trace, e)
                if recipe.target is not None:
                    # sigma for mean dFIL = 1/target (Eqs. 4-5), for the current W.
                    sigma = torch.sqrt(recipe.target * trace / input_dim).float()
                    e = e + sigma * randn(e.shape, generator, device)
            loss = loss + nn.functional.cross_entropy(server(e), ys[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    server.eval()


def _features(client: CompressedClient, table: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """Frozen pooled features of `ids`, in batches (on the table's device)."""
    ids = to_device(ids, table.device)
    with torch.no_grad():
        return torch.cat(
            [
                client.features(table[ids[i : i + ENCODE_BATCH]])
                for i in range(0, len(ids), ENCODE_BATCH)
            ]
        )


def _base_features(
    client: CompressedClient, base: EmbeddingSplit, ids: torch.Tensor, ctx: FitContext
) -> dict[str, torch.Tensor]:
    """Pooled features of the frozen client on `ids` and their Jacobian Gram G (cached per
    client weights and data, not per seed: G's probes use a fixed seed, like the features a
    property of the frozen model and the data)."""
    recipe = {
        "artifact": "dfil-compression-features",
        "base": tensor_digest(*client.base.state_dict().values(), base.table),
        "base_arch": str(client.base),
        "ids": tensor_digest(ids),
        "gram": [GRAM_PROBES, GRAM_SAMPLES],
        "code": files_digest(_CODE),
    }

    def build() -> dict[str, torch.Tensor]:
        gen = torch.Generator().manual_seed(0)
        return {
            "features": _features(client, base.table, ids),
            "gram": feature_gram(client, base.table, ids, gen),
        }

    return ctx.cache.get_or_build(recipe, build)


def compressed_split(
    task: Task, base: EmbeddingSplit, k: int, recipe: CompressionTraining, ctx: FitContext
) -> EmbeddingSplit:
    """`base` with a k-dim bottleneck at its split and a decompressing server, both trained
    on the task's train split per `recipe` (cached per task, data, seed, base and recipe)."""
    train = task.splits().train
    with torch.no_grad():
        probe = base.client(base.table[to_device(train.x[:1], base.table.device)])
    width = int(probe.shape[-1]) if probe.dim() > 2 else int(probe[0].numel())
    if k >= width:
        raise ConfigError(
            f"mechanism dfil: compression must be below the split width {width} on "
            f"{task.name}, got {k}"
        )
    classes = int(task.num_classes)

    def fresh() -> tuple[CompressedClient, nn.Module]:
        with seeded_init(ctx.seed, "dfil-compression-init"):  # initialised on the CPU
            client = CompressedClient(base.client, width, k)
            server = decompressing_server(k, classes)
        return client.to(ctx.device), server.to(ctx.device)

    client, server = fresh()
    key = {
        "artifact": "dfil-discrete-compression",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "seed": ctx.seed,
        "base": tensor_digest(*base.client.state_dict().values(), base.table),
        "k": k,
        "training": repr(recipe),
        "code": files_digest(_CODE),
    }

    def build() -> dict[str, dict[str, torch.Tensor]]:
        tuned, head = fresh()
        pre = _base_features(tuned, base, train.x, ctx)
        input_dim = math.prod(train.x.shape[1:]) * int(base.table.shape[1])
        data = DataSplit(pre["features"], train.y)
        gen = ctx.generator("dfil-compression-train")
        train_bottleneck(tuned, head, data, pre["gram"], input_dim, recipe, gen)
        return {"compress": tuned.compress.state_dict(), "server": head.state_dict()}

    state = ctx.cache.get_or_build(key, build)
    client.compress.load_state_dict(state["compress"])
    server.load_state_dict(state["server"])
    client.eval().requires_grad_(False)
    server.eval().requires_grad_(False)
    return EmbeddingSplit(base.table, client, server, trainable="")
