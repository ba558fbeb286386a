"""Fisher information leakage of an encoder with additive Gaussian noise (dFIL paper, Sec.
3.1): for e = Enc(x) + N(0, sigma^2 I) the Fisher information matrix is J^T J / sigma^2 (Eq. 5,
Hannun et al. 2021), so dFIL(x) = Tr(J^T J) / (sigma^2 d) with d the input dimension.

Tr(J^T J) = ||J||_F^2 = sum_k ||J e_k||^2 over the d input coordinates (forward-mode JVPs with
one-hot tangents) = sum_j ||J^T u_j||^2 over the m output coordinates (reverse-mode VJPs with
one-hot cotangents). `jacobian_trace` takes whichever side is smaller, batches samples and
directions with torch.func.vmap, and bounds memory by chunking the directions.
`jacobian_trace_estimate` subsamples the directions without replacement: an unbiased estimate
with its standard error. `hutchinson_trace` is the differentiable estimate used as a training
regulariser: E_u ||J^T u||^2 = Tr(J J^T) = Tr(J^T J) for u ~ N(0, I).

Every computation runs the encoder in eval mode: a training-mode BatchNorm mixes the samples
of a batch, so the Jacobian of one sample's encoding would depend on the other samples. It
runs on the encoder's device (bench.core.device): the vmapped JVP / VJP batches are what an
accelerator speeds up; the traces come back on that device (float64; on the CPU for MPS).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn
from torch.func import jvp, vjp, vmap

from bench.core.device import as_float64, module_device, randn, to_device

Side = Literal["auto", "input", "output"]
DEFAULT_PAIRS = 512  # (sample, direction) pairs per vmap call: peak memory; 512 was fastest too


@contextmanager
def eval_mode(module: nn.Module) -> Iterator[nn.Module]:
    """Run `module` in eval mode (BatchNorm on running statistics, no dropout), then restore
    each submodule's own training flag."""
    flags = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield module
    finally:
        for m, flag in flags:
            m.train(flag)


@dataclass(frozen=True)
class TraceEstimate:
    """A per-sample estimate of Tr(J^T J) with its standard error (both (N,) float64)."""

    value: torch.Tensor
    se: torch.Tensor


def _sides(encoder: nn.Module, x: torch.Tensor) -> tuple[int, int]:
    """(input dimension d, output dimension m) of `encoder` on one sample of `x` (in eval mode,
    so a BatchNorm's running statistics are not updated by the probe)."""
    with eval_mode(encoder), torch.no_grad():
        out = encoder(to_device(x[:1], module_device(encoder)))
    return math.prod(x.shape[1:]), out[0].numel()


def _pick_side(side: Side, d: int, m: int) -> Literal["input", "output"]:
    if side == "auto":
        return "input" if d <= m else "output"
    if side not in ("input", "output"):
        raise ValueError(f"side must be 'auto', 'input' or 'output', got {side!r}")
    return side


def _squared_norms(
    encoder: nn.Module,
    side: Literal["input", "output"],
    x: torch.Tensor,
    dirs: torch.Tensor,
    out_dim: int,
) -> torch.Tensor:
    """||J e_k||^2 (input side) or ||J^T u_k||^2 (output side, `out_dim` outputs) for every
    sample of `x` (B, ...) and every one-hot direction index in `dirs` (K,): a (B, K) tensor."""
    sample_shape = x.shape[1:]

    def single(xi: torch.Tensor) -> torch.Tensor:
        return encoder(xi.unsqueeze(0)).flatten()

    if side == "input":
        d = math.prod(sample_shape)
        basis = torch.zeros(len(dirs), d, dtype=x.dtype, device=x.device)
        basis[torch.arange(len(dirs), device=x.device), dirs] = 1.0
        basis = basis.view(len(dirs), *sample_shape)

        def columns(xi: torch.Tensor) -> torch.Tensor:
            return vmap(lambda t: jvp(single, (xi,), (t,))[1])(basis)

    else:
        basis = torch.zeros(len(dirs), out_dim, dtype=x.dtype, device=x.device)
        basis[torch.arange(len(dirs), device=x.device), dirs] = 1.0

        def columns(xi: torch.Tensor) -> torch.Tensor:
            _, pullback = vjp(single, xi)
            return vmap(lambda u: pullback(u)[0])(basis)

    cols = vmap(columns)(x)  # (B, K, *) : J e_k or J^T u_k
    return cols.flatten(2).pow(2).sum(2)


def _blocks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def _per_direction(
    encoder: nn.Module,
    x: torch.Tensor,
    dirs: torch.Tensor,
    side: Literal["input", "output"],
    out_dim: int,
    max_pairs: int,
    reduce: Callable[[torch.Tensor], torch.Tensor],
) -> torch.Tensor:
    """Apply `reduce` to the (B, K) squared norms of each chunk (giving (B, ...)) and sum the
    results over chunks; samples and directions are chunked so that one vmap call sees at
    most `max_pairs` (sample, direction) pairs."""
    k_chunk = max(1, min(len(dirs), max_pairs))
    b_chunk = max(1, max_pairs // k_chunk)
    # A copy with its own storage: making a forward-mode dual of a view costs time in the
    # size of the view's base (a row slice of a whole dataset took seconds per chunk).
    device = module_device(encoder)
    x = to_device(x, device).detach().clone()
    dirs = to_device(dirs, device)
    parts = []
    with eval_mode(encoder), torch.no_grad():
        for rows in _blocks(len(x), b_chunk):
            total = None
            for cols in _blocks(len(dirs), k_chunk):
                squared = _squared_norms(encoder, side, x[rows], dirs[cols], out_dim)
                part = reduce(as_float64(squared))
                total = part if total is None else total + part
            parts.append(total)
    return torch.cat(parts)


def jacobian_trace(
    encoder: nn.Module, x: torch.Tensor, *, side: Side = "auto", max_pairs: int = DEFAULT_PAIRS
) -> torch.Tensor:
    """Exact Tr(J^T J) of `encoder` at every sample of `x` (N, ...): an (N,) float64 tensor.

    One JVP per input coordinate or one VJP per output coordinate, whichever side is smaller
    (`side` forces one). Exact up to float32 rounding of the encoder itself. An nn.Linear
    encoder has the constant Jacobian W, so its trace is ||W||_F^2 with no passes at all.
    """
    if isinstance(encoder, nn.Linear):  # J = W at every x
        frob = float(as_float64(encoder.weight.detach()).pow(2).sum())
        return torch.full((len(x),), frob, dtype=torch.float64)
    d, m = _sides(encoder, x)
    chosen = _pick_side(side, d, m)
    dirs = torch.arange(d if chosen == "input" else m)
    return _per_direction(encoder, x, dirs, chosen, m, max_pairs, lambda sq: sq.sum(1))


def jacobian_trace_estimate(
    encoder: nn.Module,
    x: torch.Tensor,
    n_dirs: int,
    generator: torch.Generator,
    *,
    side: Side = "auto",
    max_pairs: int = DEFAULT_PAIRS,
) -> TraceEstimate:
    """Unbiased Tr(J^T J) per sample from `n_dirs` of the D one-hot directions drawn uniformly
    without replacement (the same draw for every sample).

    Simple random sampling of the terms a_k = ||J e_k||^2 (Cochran 1977, Thm 2.1 and 2.2):
    D * mean_S(a_k) is unbiased for sum_k a_k, with variance D^2 (1 - n/D) s^2 / n, s^2 the
    sample variance of the a_k; the standard error plugs in the observed s^2.
    """
    d, m = _sides(encoder, x)
    chosen = _pick_side(side, d, m)
    total = d if chosen == "input" else m
    if not 2 <= n_dirs <= total:
        raise ValueError(f"n_dirs must lie in [2, {total}], got {n_dirs}")
    dirs = torch.randperm(total, generator=generator)[:n_dirs]
    moments = _per_direction(
        encoder,
        x,
        dirs,
        chosen,
        m,
        max_pairs,
        lambda sq: torch.stack([sq.sum(1), sq.pow(2).sum(1)], 1),
    )
    sums, squares = moments[:, 0], moments[:, 1]
    mean = sums / n_dirs
    var = ((squares - n_dirs * mean.pow(2)) / (n_dirs - 1)).clamp_min(0.0)
    se = total * torch.sqrt((1 - n_dirs / total) * var / n_dirs)
    return TraceEstimate(total * mean, se)


def hutchinson_trace(
    encoder: nn.Module, x: torch.Tensor, generator: torch.Generator, probes: int = 1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Differentiable, unbiased Tr(J^T J) per sample from `probes` Gaussian output probes
    (Hutchinson 1990: E_u ||J^T u||^2 = Tr(J J^T)), and the encodings Enc(x).

    The graph is kept (create_graph), so the estimate can be minimised as a regulariser. It
    needs an encoder whose samples do not interact (no training-mode BatchNorm) to be exact
    in expectation; the caller chooses the mode.
    """
    x = to_device(x, module_device(encoder)).detach().requires_grad_(True)
    e = encoder(x)
    total = torch.zeros(len(x), dtype=e.dtype, device=e.device)
    for _ in range(probes):
        u = randn(e.shape, generator, e.device, e.dtype)
        (pulled,) = torch.autograd.grad((e * u).sum(), x, create_graph=True)
        total = total + pulled.flatten(1).pow(2).sum(1)
    return total / probes, e


def dfil(trace: torch.Tensor, sigma: float, input_dim: int) -> torch.Tensor:
    """dFIL(x) = Tr(J^T J) / (sigma^2 d) (dFIL paper Eqs. 4-5)."""
    if not (sigma > 0 and math.isfinite(sigma)):
        raise ValueError(f"sigma must be positive and finite, got {sigma}")
    return trace / (sigma**2 * input_dim)


def sigma_for_target(mean_trace: float, target_inv_dfil: float, input_dim: int) -> float:
    """sigma = sqrt(target * mean Tr(J^T J) / d): the noise whose mean dFIL is 1/target."""
    if not (target_inv_dfil > 0 and math.isfinite(target_inv_dfil)):
        raise ValueError(f"the 1/dFIL target must be positive and finite, got {target_inv_dfil}")
    if not mean_trace > 0:
        raise ValueError(f"mean Tr(J^T J) must be positive, got {mean_trace}")
    return math.sqrt(target_inv_dfil * mean_trace / input_dim)
