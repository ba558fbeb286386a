"""Global Lipschitz upper bounds (bench.certify.lipschitz.global_bounds) against exact values on
small linear maps and against measured ratios ||f(x) - f(y)|| / ||x - y|| of whole networks."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from bench.certify.lipschitz.global_bounds import (
    GELU_SLOPE,
    ROUNDING_MARGIN,
    lipschitz_upper_bound,
    power_iteration,
)
from bench.core.errors import ConfigError
from bench.plugin.models import Normalize, small_cnn


def _matrix(op: nn.Module, in_shape: tuple[int, ...]) -> torch.Tensor:
    """The explicit (out, in) matrix of a bias-free linear layer, column by column."""
    n = math.prod(in_shape)
    with torch.no_grad():
        cols = op(torch.eye(n, dtype=torch.float64).view(n, *in_shape))
    return cols.reshape(n, -1).T


def _exact(op: nn.Module, in_shape: tuple[int, ...], norm: str) -> float:
    m = _matrix(op.double(), in_shape)
    op.float()
    if norm == "l2":
        return float(torch.linalg.matrix_norm(m, ord=2))
    return float(m.abs().sum(0).max())


def _bias_free(layer: nn.Module) -> nn.Module:
    if getattr(layer, "bias", None) is not None:
        nn.init.zeros_(layer.bias)
    return layer


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_dense_layer_bound_is_the_exact_induced_norm(norm: str) -> None:
    torch.manual_seed(0)
    layer = _bias_free(nn.Linear(12, 7))
    exact = _exact(layer, (12,), norm)
    bound = lipschitz_upper_bound(layer, (12,), norm)
    assert bound.layers[0].bound == pytest.approx(exact, rel=1e-9)
    assert exact <= bound.value <= exact * (1 + 2 * ROUNDING_MARGIN)


@pytest.mark.parametrize(
    "conv",
    [
        dict(in_channels=3, out_channels=5, kernel_size=3, padding=1),
        dict(in_channels=2, out_channels=4, kernel_size=3, stride=2, padding=1),
        dict(in_channels=4, out_channels=4, kernel_size=3, padding=2, dilation=2, groups=2),
        dict(in_channels=1, out_channels=3, kernel_size=5),
    ],
    ids=["same", "strided", "dilated-grouped", "valid"],
)
def test_conv_bounds_against_the_explicit_operator(conv: dict) -> None:
    torch.manual_seed(1)
    layer = _bias_free(nn.Conv2d(**conv))
    in_shape = (conv["in_channels"], 7, 7)
    exact_l2 = _exact(layer, in_shape, "l2")
    exact_l1 = _exact(layer, in_shape, "l1")
    l2 = lipschitz_upper_bound(layer, in_shape, "l2").layers[0]
    l1 = lipschitz_upper_bound(layer, in_shape, "l1").layers[0]
    # l1 is exact; l2 is an upper bound (exact for circular padding).
    assert l1.bound == pytest.approx(exact_l1, rel=1e-9)
    assert l2.bound >= exact_l2 * (1 - 1e-9)
    assert l2.bound <= 1.6 * exact_l2


def test_conv_power_iteration_estimate_approaches_the_norm_from_below() -> None:
    torch.manual_seed(1)
    layer = _bias_free(nn.Conv2d(3, 5, 3, padding=1))
    exact = _exact(layer, (3, 7, 7), "l2")
    layer_bound = lipschitz_upper_bound(layer, (3, 7, 7), "l2", estimate=True).layers[0]
    assert exact * 0.99 <= layer_bound.estimate <= exact * (1 + 1e-6) <= layer_bound.bound


def test_power_iteration_converges_to_the_spectral_norm_from_below() -> None:
    w = torch.randn(30, 20, generator=torch.Generator().manual_seed(2))
    exact = float(torch.linalg.matrix_norm(w, ord=2))
    rough = power_iteration(lambda v: v @ w.T, (20,), iters=2)
    assert rough <= exact * (1 + 1e-6)
    assert power_iteration(lambda v: v @ w.T, (20,), iters=500) == pytest.approx(exact, rel=1e-4)


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_normalize_layers_count_one_over_std_and_the_bound_is_attained(norm: str) -> None:
    torch.manual_seed(3)
    linear = nn.Linear(16, 3)
    net = nn.Sequential(Normalize((0.5,), (0.25,)), nn.Flatten(), linear)
    bound = lipschitz_upper_bound(net, (1, 4, 4), norm)
    assert bound.layers[0].bound == pytest.approx(4.0)
    # Attained along the top right-singular vector (l2) or the largest column (l1).
    w = linear.weight.detach()
    if norm == "l2":
        _, s, vh = torch.linalg.svd(w)
        direction, exact = vh[0], 4.0 * float(s[0])
    else:
        column = int(w.abs().sum(0).argmax())
        direction, exact = torch.eye(16)[column], 4.0 * float(w.abs().sum(0).max())
    x = torch.rand(1, 1, 4, 4)
    y = x + 1e-2 * direction.view(1, 1, 4, 4)
    p = 2 if norm == "l2" else 1
    with torch.no_grad():
        ratio = float((net(x) - net(y)).norm(p=p) / (x - y).norm(p=p))
    assert ratio == pytest.approx(exact, rel=1e-4)
    assert ratio <= bound.value


def test_overlapping_max_pool_bound_is_attained() -> None:
    pool = nn.MaxPool2d(3, stride=1)
    x = torch.zeros(1, 1, 5, 5)
    y = x.clone()
    y[0, 0, 2, 2] = 1.0  # the centre is the max of all 9 windows that contain it
    diff = pool(y) - pool(x)
    assert lipschitz_upper_bound(pool, (1, 5, 5), "l2").layers[0].bound == 3.0
    assert lipschitz_upper_bound(pool, (1, 5, 5), "l1").layers[0].bound == 9.0
    assert float(diff.norm()) == 3.0 and float(diff.abs().sum()) == 9.0
    assert lipschitz_upper_bound(nn.MaxPool2d(2), (1, 4, 4), "l2").layers[0].bound == 1.0


@pytest.mark.parametrize(
    "pool", [nn.AvgPool2d(2), nn.AvgPool2d(3, stride=1), nn.AvgPool2d(4, divisor_override=4)]
)
@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_avg_pool_bounds_hold(pool: nn.Module, norm: str) -> None:
    exact = _exact(pool, (1, 8, 8), norm)
    assert exact <= lipschitz_upper_bound(pool, (1, 8, 8), norm).layers[0].bound * (1 + 1e-12)


def test_sum_pooling_by_four_is_one_lipschitz_in_l2() -> None:
    pool = nn.AvgPool2d(4, divisor_override=4)
    assert lipschitz_upper_bound(pool, (2, 8, 8), "l2").layers[0].bound == 1.0
    assert _exact(pool, (1, 8, 8), "l2") == pytest.approx(1.0)


def test_gelu_constant_is_its_largest_slope() -> None:
    x = torch.linspace(-6, 6, 200_001, dtype=torch.float64, requires_grad=True)
    (slope,) = torch.autograd.grad(nn.functional.gelu(x).sum(), x)
    assert float(slope.max()) == pytest.approx(GELU_SLOPE, rel=1e-9)
    assert GELU_SLOPE > 1.12  # GELU is not 1-Lipschitz
    assert lipschitz_upper_bound(nn.GELU(), (3,), "l2").layers[0].bound == GELU_SLOPE


def _ratios(net: nn.Module, in_shape: tuple[int, ...], norm: str, seed: int) -> torch.Tensor:
    """||f(x) - f(y)|| / ||x - y|| on random far pairs, near pairs and gradient-ascended pairs."""
    gen = torch.Generator().manual_seed(seed)
    p = 1 if norm == "l1" else 2
    x = torch.rand(16, *in_shape, generator=gen)
    near = x + 1e-3 * torch.randn(x.shape, generator=gen)
    far = torch.rand(16, *in_shape, generator=gen)
    y = torch.cat([near, far]).requires_grad_(True)
    x = torch.cat([x, x])
    opt = torch.optim.Adam([y], lr=1e-3)
    for _ in range(15):
        ratio = (net(x) - net(y)).flatten(1).norm(p=p, dim=1) / (x - y).flatten(1).norm(p=p, dim=1)
        opt.zero_grad()
        (-ratio.sum()).backward()
        opt.step()
    with torch.no_grad():
        return (net(x) - net(y)).flatten(1).norm(p=p, dim=1) / (x - y).flatten(1).norm(p=p, dim=1)


@pytest.mark.parametrize("norm", ["l1", "l2"])
def test_network_bound_exceeds_every_measured_ratio(norm: str) -> None:
    torch.manual_seed(4)
    net = small_cnn(1, 12, 10, (0.3,), (0.35,)).eval()
    bound = lipschitz_upper_bound(net, (1, 12, 12), norm)
    ratios = _ratios(net, (1, 12, 12), norm, seed=5)
    assert 0 < float(ratios.max()) <= bound.value


def test_l1_bound_uses_the_tighter_of_product_and_sqrt_m_times_l2() -> None:
    torch.manual_seed(6)
    net = small_cnn(1, 12, 10, (0.3,), (0.35,)).eval()
    l1 = lipschitz_upper_bound(net, (1, 12, 12), "l1")
    l2 = lipschitz_upper_bound(net, (1, 12, 12), "l2")
    assert l1.value <= math.sqrt(10) * l2.value * (1 + 1e-12)
    assert l1.value <= l1.product * (1 + ROUNDING_MARGIN) * (1 + 1e-12)


def test_layers_without_a_rule_are_refused() -> None:
    with pytest.raises(ConfigError, match="no Lipschitz rule for layer SiLU"):
        lipschitz_upper_bound(nn.Sequential(nn.Linear(3, 3), nn.SiLU()), (3,), "l2")
    with pytest.raises(ConfigError, match="norm"):
        lipschitz_upper_bound(nn.Linear(3, 3), (3,), "linf")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="zeros"):
        conv = nn.Conv2d(1, 1, 3, padding=1, padding_mode="circular")
        lipschitz_upper_bound(conv, (1, 5, 5), "l2")
