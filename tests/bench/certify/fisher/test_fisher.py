"""Exact and estimated Jacobian traces (bench.certify.fisher.trace): exact against a brute-force
Jacobian on both sides, BatchNorm in eval mode, unbiased subsampling with a calibrated
standard error, Hutchinson, and the dFIL calibration formula."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from bench.certify.fisher.trace import (
    dfil,
    hutchinson_trace,
    jacobian_trace,
    jacobian_trace_estimate,
    sigma_for_target,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _brute_force(encoder: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """||J||_F^2 per sample from torch.autograd.functional.jacobian, in eval mode."""
    flags = [(m, m.training) for m in encoder.modules()]
    encoder.eval()
    out = []
    for xi in x:
        jac = torch.autograd.functional.jacobian(lambda z: encoder(z.unsqueeze(0)).flatten(), xi)
        out.append(jac.double().pow(2).sum())
    for m, flag in flags:
        m.train(flag)
    return torch.stack(out)


def _cnn() -> nn.Module:
    """A smooth CNN with a BatchNorm whose running statistics are not trivial."""
    torch.manual_seed(0)
    net = nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1),
        nn.GELU(),
        nn.AvgPool2d(2),
        nn.BatchNorm2d(4),
        nn.Conv2d(4, 3, 3, padding=1),
        nn.Tanh(),
    )
    with torch.no_grad():
        net[3].running_mean.uniform_(-0.5, 0.5)
        net[3].running_var.uniform_(0.5, 2.0)
        net[3].weight.uniform_(0.5, 1.5)
    return net


def _mlp(d_in: int, d_out: int) -> nn.Module:
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(d_in, 20), nn.Tanh(), nn.Linear(20, d_out), nn.GELU())


ENCODERS = {
    # (encoder, input shape): the CNN maps 2x6x6 = 72 inputs to 3x3x3 = 27 outputs, the MLPs
    # have the smaller side on either end; "auto" picks the smaller one.
    "cnn": (_cnn, (2, 6, 6)),
    "mlp-wide": (lambda: _mlp(6, 30), (6,)),
    "mlp-narrow": (lambda: _mlp(30, 5), (30,)),
}


@pytest.mark.parametrize("side", ["auto", "input", "output"])
@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_exact_trace_matches_brute_force_jacobian(name: str, side: str) -> None:
    make, shape = ENCODERS[name]
    encoder = make()
    x = torch.randn(3, *shape, generator=torch.Generator().manual_seed(2))
    expected = _brute_force(encoder, x)
    # max_pairs=20 < directions forces chunking over both samples and directions.
    got = jacobian_trace(encoder, x, side=side, max_pairs=20)
    assert torch.allclose(got, expected, rtol=1e-5, atol=0), (got, expected)


def test_trace_runs_batchnorm_in_eval_mode_and_restores_the_training_flags() -> None:
    encoder = _cnn()
    encoder.train()
    encoder[3].eval()  # a mixed state must come back exactly
    before = encoder[3].running_mean.clone()
    x = torch.randn(3, 2, 6, 6, generator=torch.Generator().manual_seed(3))
    got = jacobian_trace(encoder, x)
    assert torch.equal(encoder[3].running_mean, before)  # no batch statistics were used
    assert encoder.training and encoder[0].training and not encoder[3].training
    assert torch.allclose(got, _brute_force(encoder, x), rtol=1e-5, atol=0)


def test_a_linear_encoder_has_the_frobenius_norm_everywhere() -> None:
    lin = nn.Linear(12, 40, bias=False)
    x = torch.randn(3, 12)
    expected = _brute_force(lin, x)
    assert torch.allclose(jacobian_trace(lin, x), expected, rtol=1e-5, atol=0)


def test_subsampled_estimate_is_unbiased_with_a_calibrated_standard_error() -> None:
    encoder = _mlp(40, 60)  # input side: 40 directions, 8 drawn each time
    x = torch.randn(3, 40, generator=torch.Generator().manual_seed(4))
    exact = jacobian_trace(encoder, x)
    gen = torch.Generator().manual_seed(5)
    draws = [jacobian_trace_estimate(encoder, x, 8, gen, max_pairs=64) for _ in range(300)]
    values = torch.stack([d.value for d in draws])  # (300, 3)
    se2 = torch.stack([d.se for d in draws]).pow(2).mean(0)
    # Unbiased: the mean of 300 draws lies within 4 standard errors of the exact trace.
    spread = values.std(0) / math.sqrt(len(values))
    assert ((values.mean(0) - exact).abs() < 4 * spread).all(), (values.mean(0), exact)
    # The reported SE is calibrated: E[se^2] = Var(estimate) (s^2 is unbiased for S^2).
    ratio = se2 / values.var(0)
    assert ((ratio > 0.7) & (ratio < 1.4)).all(), ratio
    # A biased rule would fail: dropping the D/n scale-up is off by 5x.
    assert ((values.mean(0) / 5 - exact).abs() > 10 * spread).all()


def test_all_directions_give_the_exact_trace_with_zero_error() -> None:
    encoder = _mlp(10, 30)
    x = torch.randn(2, 10)
    est = jacobian_trace_estimate(encoder, x, 10, torch.Generator().manual_seed(0))
    assert torch.allclose(est.value, jacobian_trace(encoder, x), rtol=1e-6)
    assert torch.all(est.se == 0)


def test_hutchinson_estimate_is_unbiased_and_differentiable() -> None:
    encoder = _mlp(10, 25)
    x = torch.randn(2, 10, generator=torch.Generator().manual_seed(6))
    exact = jacobian_trace(encoder, x)
    est, _ = hutchinson_trace(encoder, x, torch.Generator().manual_seed(7), probes=1000)
    assert torch.allclose(est.double(), exact, rtol=0.1)
    est.sum().backward()
    assert encoder[0].weight.grad is not None and encoder[0].weight.grad.abs().sum() > 0


def test_noise_calibrated_to_a_target_gives_that_mean_inverse_dfil() -> None:
    traces = torch.tensor([3.0, 5.0, 4.0], dtype=torch.float64)
    sigma = sigma_for_target(float(traces.mean()), 0.25, 784)
    assert sigma == pytest.approx(math.sqrt(0.25 * 4.0 / 784))
    assert float(dfil(traces, sigma, 784).mean()) == pytest.approx(4.0)
    with pytest.raises(ValueError):
        sigma_for_target(4.0, -1.0, 784)
