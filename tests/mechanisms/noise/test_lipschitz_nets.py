"""SLL blocks and networks (mechanisms.noise.lipschitz_nets): the measured l2 constant of random
blocks is <= 1, the diagonal T dominates W^T W as Araujo et al.'s Thm 3 needs, and the
certified bounds of whole networks hold."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn
from torch.autograd.functional import jacobian

from bench.certify.lipschitz.global_bounds import lipschitz_upper_bound
from mechanisms.noise.lipschitz_nets import (
    PadChannels,
    SLLConv,
    SLLDense,
    SpectralLinear,
    sll_network,
)

TOL = 1e-4


def _randomised(block: nn.Module, seed: int) -> nn.Module:
    """A block with random rescaling q and biases (fresh blocks have q = 1)."""
    torch.manual_seed(seed)
    with torch.no_grad():
        block.log_q.normal_(0, 1)
        block.bias.normal_(0, 1)
    return block


def jacobian_norm(f: nn.Module, x: torch.Tensor) -> float:
    """||J_f(x)||_2 exactly: the spectral norm of the full Jacobian at one input (the local
    Lipschitz constant there; ReLU networks are piecewise linear)."""
    jac = jacobian(lambda v: f(v.view(1, *x.shape[1:])).flatten(), x.flatten())
    return float(torch.linalg.matrix_norm(jac.double(), ord=2))


def max_pair_ratio(f: nn.Module, shape: tuple[int, ...], seed: int) -> float:
    """Largest ||f(x) - f(y)|| / ||x - y|| over random pairs pushed up by gradient ascent."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(16, *shape, generator=gen)
    y = (x + 0.5 * torch.randn(x.shape, generator=gen)).requires_grad_(True)
    opt = torch.optim.Adam([y], lr=1e-2)
    for _ in range(30):
        ratio = (f(x) - f(y)).flatten(1).norm(dim=1) / (x - y).flatten(1).norm(dim=1)
        opt.zero_grad()
        (-ratio.sum()).backward()
        opt.step()
    with torch.no_grad():
        return float(((f(x) - f(y)).flatten(1).norm(dim=1) / (x - y).flatten(1).norm(dim=1)).max())


BLOCKS = [
    (lambda: SLLDense(12, 20), (12,)),
    (lambda: SLLDense(20, 6), (20,)),
    (lambda: SLLConv(3, 5), (3, 5, 5)),
    (lambda: SLLConv(2, 4, kernel_size=5), (2, 6, 6)),
]


@pytest.mark.parametrize(("make", "shape"), BLOCKS, ids=["dense", "dense-narrow", "conv", "conv5"])
def test_random_sll_blocks_are_one_lipschitz(make, shape) -> None:
    block = _randomised(make(), seed=1).requires_grad_(False)
    gen = torch.Generator().manual_seed(2)
    worst_jacobian = max(
        jacobian_norm(block, torch.randn(1, *shape, generator=gen)) for _ in range(3)
    )
    assert 0.5 < worst_jacobian <= 1 + TOL
    assert max_pair_ratio(block, shape, seed=3) <= 1 + TOL


@pytest.mark.parametrize(("make", "shape"), BLOCKS[::2], ids=["dense", "conv"])
def test_the_measurement_detects_a_block_whose_t_is_too_small(make, shape, monkeypatch) -> None:
    block = _randomised(make(), seed=1).requires_grad_(False)
    original = type(block).t_inverse
    monkeypatch.setattr(type(block), "t_inverse", lambda self: 20 * original(self))
    gen = torch.Generator().manual_seed(2)
    worst = max(jacobian_norm(block, torch.randn(1, *shape, generator=gen)) for _ in range(2))
    assert worst > 1.05
    assert max_pair_ratio(block, shape, seed=3) > 1.05


def _operator(layer: nn.Module, shape: tuple[int, ...]) -> torch.Tensor:
    n = math.prod(shape)
    with torch.no_grad():
        return layer(torch.eye(n).view(n, *shape)).reshape(n, -1).T


def test_t_dominates_w_transpose_w_for_dense_blocks() -> None:
    block = _randomised(SLLDense(9, 14), seed=4)
    with torch.no_grad():
        m = block.weight @ block.weight.T  # W^T W with W^T stored as `weight`
        gap = torch.diag(1 / block.t_inverse()) - m
    assert float(torch.linalg.eigvalsh(gap.double()).min()) >= -1e-5


def test_t_dominates_c_c_transpose_for_zero_padded_conv_blocks() -> None:
    # The conv block's T is built from full filter correlations; zero padding makes the
    # border entries of C C^T partial sums. T must still dominate (module docstring).
    block = _randomised(SLLConv(2, 3), seed=5)
    conv = nn.Conv2d(2, 3, 3, padding=1, bias=False)
    conv.weight = block.weight
    c = _operator(conv, (2, 5, 5)).double()  # (hidden * 25, channels * 25)
    with torch.no_grad():
        t = (1 / block.t_inverse()).double().repeat_interleave(25)
    gap = torch.diag(t) - c @ c.T
    assert float(torch.linalg.eigvalsh(gap).min()) >= -1e-5


def test_spectral_linear_and_channel_padding_are_one_lipschitz() -> None:
    torch.manual_seed(6)
    layer = SpectralLinear(30, 5)
    with torch.no_grad():
        layer.weight.mul_(10)
    w = layer.effective_weight().detach().double()
    assert float(torch.linalg.matrix_norm(w, 2)) <= 1 + 1e-5
    pad = PadChannels(4)
    x = torch.randn(2, 1, 3, 3)
    assert pad(x).shape == (2, 4, 3, 3) and torch.equal(pad(x)[:, :1], x)
    assert pad(x).norm() == x.norm()


def test_fmnist_sll_network_is_certified_one_lipschitz() -> None:
    torch.manual_seed(7)
    net = sll_network((1, 28, 28), 10, (0.5,)).eval()
    l2 = lipschitz_upper_bound(net, (1, 28, 28), "l2")
    l1 = lipschitz_upper_bound(net, (1, 28, 28), "l1")
    assert l2.value <= 1 + 1e-3
    assert l1.value <= math.sqrt(10) * l2.value * (1 + 1e-9)
    with torch.no_grad():
        assert net(torch.rand(2, 1, 28, 28)).shape == (2, 10)


@pytest.mark.slow
def test_cifar_sll_small_is_certified_one_lipschitz() -> None:
    # 41M parameters (Araujo et al.'s small configuration): l2 only, l1 takes ~20 s.
    torch.manual_seed(7)
    net = sll_network((3, 32, 32), 10, (0.5, 0.5, 0.5)).eval()
    bound = lipschitz_upper_bound(net, (3, 32, 32), "l2")
    assert bound.value <= 1 + 1e-3
    assert sum(p.numel() for p in net.parameters()) > 40e6


def test_fmnist_sll_network_measured_constant_is_within_its_bound() -> None:
    torch.manual_seed(8)
    net = sll_network((1, 28, 28), 10, (0.3,)).eval().requires_grad_(False)
    for block in net:
        if isinstance(block, SLLConv | SLLDense):
            _randomised(block, seed=9)
    x = torch.rand(1, 1, 28, 28, generator=torch.Generator().manual_seed(10))
    assert 0.1 < jacobian_norm(net, x) <= 1 + TOL
