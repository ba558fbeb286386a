"""Exact per-sample Tr(J^T J) of the Fashion-MNIST dFIL encoder: bench.certify.fisher.trace
(torch.func JVPs / VJPs batched with vmap) side by side with a naive per-sample
torch.autograd.functional.jacobian (one backward pass per output coordinate).
`make bench-perf` prints each group's two rows; the ratio of their means is the speed-up.

Measured on the shared 2-core CPU (one thread): early split (784 inputs -> 6,272 outputs)
27x, since the exact trace takes the 784-input side where the naive Jacobian makes 6,272
backward passes; late split (784 -> 784) about 3x, since both make 784 passes of a tiny CNN
and batching only saves the per-pass overhead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from bench.certify.fisher.trace import jacobian_trace
from bench.core.hashing import seeded_init
from mechanisms.dfil.smooth_nets import split_model

X = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    """Both methods on one thread: on a shared 2-core machine two OpenMP threads mostly wait
    on each other, and the comparison should not depend on the neighbours' load."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _encoder(split: str) -> torch.nn.Module:
    with seeded_init(0, "perf-encoder"):
        model = split_model("cnn", (1, 28, 28), 10, (0.2860,), (0.3530,), split)
    return model.client.eval().requires_grad_(False)


def _naive(encoder: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    def single(z: torch.Tensor) -> torch.Tensor:
        return encoder(z.unsqueeze(0)).flatten()

    jacobians = [torch.autograd.functional.jacobian(single, xi) for xi in x]
    return torch.stack([j.double().pow(2).sum() for j in jacobians])


@pytest.mark.parametrize("method", ["torch.func", "naive-jacobian"])
@pytest.mark.parametrize("split", ["early", "late"])
def test_exact_dfil_trace_per_sample(benchmark, split: str, method: str) -> None:
    """2 samples; early: 784 inputs -> 6,272 outputs, late: 784 -> 784."""
    benchmark.group = f"exact-trace-fmnist-{split}-2-samples"
    encoder = _encoder(split)
    fn = jacobian_trace if method == "torch.func" else _naive
    traces = benchmark.pedantic(fn, args=(encoder, X), rounds=3, iterations=1, warmup_rounds=1)
    assert torch.allclose(traces, jacobian_trace(encoder, X), rtol=1e-4)
