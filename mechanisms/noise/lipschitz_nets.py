"""1-Lipschitz (l2) networks from SDP-based Lipschitz layers (SLL, Araujo et al. 2023): the
models on which output perturbation needs the least noise (IP paper, Sec. V).

SLL block (Araujo et al. 2023, Thm 3): h(x) = x - 2 W T^-1 relu(W^T x + b) is 1-Lipschitz in
l2 for every diagonal T with T >= W^T W (Loewner order). The rescaled Gershgorin choice
t_i = sum_j |W^T W|_ij q_j / q_i, q > 0 learned, satisfies it: with M = W^T W,
x^T (T - M) x = sum_{i<j} |M_ij| (q_j/q_i x_i^2 + q_i/q_j x_j^2) - 2 M_ij x_i x_j >= 0 by AM-GM
(diagonal terms cancel as M_ii >= 0). Written here from that formula.

Convolutional block: W^T is the convolution C (channels -> hidden, zero 'same' padding) and W
its transpose, so M = C C^T and its abs row sums are the filters' cross-correlations
|K_i * K_j| summed over shifts and over j. That is exact for circular padding on a grid
large enough not to alias; zero padding is a crop of the circular map applied to a
zero-embedded input (C = P C_o E), so C C^T = P C_o E E^T C_o^T P^T <= P C_o C_o^T P^T, a
principal submatrix whose abs row sums are no larger: the same T still dominates M.

Every layer here declares `lipschitz_upper_bound(norm, in_shape)` for bench.certify.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from bench.certify.lipschitz.global_bounds import (
    ConvGeometry,
    Norm,
    conv_l1_norm,
    conv_linf_norm,
    l1_induced_norm,
    linf_induced_norm,
    spectral_norm,
)
from bench.core.errors import ConfigError
from bench.plugin.models import Normalize


def _reciprocal(t: torch.Tensor) -> torch.Tensor:
    """1/t where t > 0, else 0 (a zero row of W contributes nothing anyway)."""
    return torch.where(t > 0, 1.0 / t.clamp_min(1e-30), torch.zeros_like(t))


def _rescaled_row_sums(gram_abs: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """t_i = sum_j |M_ij| q_j / q_i, the diagonal that dominates M (module docstring)."""
    q = log_q.exp()
    return (gram_abs * q).sum(1) / q


class SLLDense(nn.Module):
    """Dense SLL block x - 2 W T^-1 relu(W^T x + b) on `features`, with `hidden` units."""

    def __init__(self, features: int, hidden: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(nn.init.xavier_normal_(torch.empty(hidden, features)))
        bound = features**-0.5
        self.bias = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.log_q = nn.Parameter(torch.zeros(hidden))

    def t_inverse(self) -> torch.Tensor:
        """Diagonal of T^-1, from the current weights."""
        gram = (self.weight @ self.weight.T).abs()  # = |W^T W|, as `weight` stores W^T
        return _reciprocal(_rescaled_row_sums(gram, self.log_q))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(F.linear(x, self.weight, self.bias)) * self.t_inverse()
        return x - 2 * F.linear(h, self.weight.T)

    def lipschitz_upper_bound(self, norm: Norm, in_shape: tuple[int, ...]) -> float:
        """l2: 1 (Araujo et al. 2023, Thm 3). l1: 1 + 2 ||W||_1 max T^-1 ||W^T||_1 (triangle
        inequality; relu is 1-Lipschitz)."""
        if norm == "l2":
            return 1.0
        t_inv = float(self.t_inverse().detach().max())
        return 1.0 + 2.0 * linf_induced_norm(self.weight) * t_inv * l1_induced_norm(self.weight)


class SLLConv(nn.Module):
    """Convolutional SLL block x - 2 C^T T^-1 relu(C x + b), C a 'same' zero-padded
    convolution from `channels` to `hidden` channels."""

    def __init__(self, channels: int, hidden: int, kernel_size: int = 3) -> None:
        super().__init__()
        if kernel_size % 2 != 1:
            raise ValueError("SLLConv needs an odd kernel size ('same' padding)")
        shape = (hidden, channels, kernel_size, kernel_size)
        self.weight = nn.Parameter(nn.init.xavier_normal_(torch.empty(shape)))
        bound = (channels * kernel_size**2) ** -0.5
        self.bias = nn.Parameter(torch.empty(hidden).uniform_(-bound, bound))
        self.log_q = nn.Parameter(torch.zeros(hidden))
        self.padding = kernel_size // 2

    def t_inverse(self) -> torch.Tensor:
        """Diagonal of T^-1 (one value per hidden channel) from the filters' correlations."""
        k = self.weight.shape[-1]
        corr = F.conv2d(self.weight, self.weight, padding=k - 1).abs()
        return _reciprocal(_rescaled_row_sums(corr.sum((2, 3)), self.log_q))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu(F.conv2d(x, self.weight, self.bias, padding=self.padding))
        h = h * self.t_inverse().view(1, -1, 1, 1)
        return x - 2 * F.conv_transpose2d(h, self.weight, padding=self.padding)

    def lipschitz_upper_bound(self, norm: Norm, in_shape: tuple[int, ...]) -> float:
        """l2: 1 (Araujo et al. 2023, Thm 3, with the zero-padding argument above). l1:
        1 + 2 ||C^T||_1 max T^-1 ||C||_1, where ||C^T||_1 = ||C||_inf."""
        if norm == "l2":
            return 1.0
        geometry = ConvGeometry(padding=(self.padding, self.padding))
        t_inv = float(self.t_inverse().detach().max())
        c_1 = conv_l1_norm(self.weight, in_shape, geometry)
        c_inf = conv_linf_norm(self.weight, in_shape, geometry)
        return 1.0 + 2.0 * c_inf * t_inv * c_1


class PadChannels(nn.Module):
    """Append zero channels up to `channels`: an isometric embedding (1-Lipschitz in l_p)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.channels = channels

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.pad(x, (0, 0, 0, 0, 0, self.channels - x.shape[1]))

    def lipschitz_upper_bound(self, norm: Norm, in_shape: tuple[int, ...]) -> float:
        return 1.0


class SpectralLinear(nn.Linear):
    """A dense layer used as W / max(1, ||W||_2): spectral norm at most 1 by construction."""

    def effective_weight(self) -> torch.Tensor:
        w = self.weight
        gram = w @ w.T if w.shape[0] <= w.shape[1] else w.T @ w  # the smaller Gram matrix
        sigma = torch.linalg.eigvalsh(gram)[-1].clamp_min(0).sqrt()
        return w / sigma.clamp_min(1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.effective_weight(), self.bias)

    def lipschitz_upper_bound(self, norm: Norm, in_shape: tuple[int, ...]) -> float:
        """The exact induced norm of the weight actually used (<= 1 in l2, up to rounding)."""
        w = self.effective_weight().detach()
        return spectral_norm(w) if norm == "l2" else l1_induced_norm(w)


def _centre(mean: tuple[float, ...]) -> Normalize:
    """Mean subtraction only: dividing by std would multiply the Lipschitz constant by
    1/min std in the task's input space, where radii and noise are measured."""
    return Normalize(mean, tuple(1.0 for _ in mean))


def sll_small_28(in_channels: int, num_classes: int, mean: tuple[float, ...]) -> nn.Sequential:
    """A small SLL network for 28x28 images (fmnist, mnist): space-to-depth to 7x7, 3 conv
    blocks of width 16 C, 1 dense block of width 128 on 784 C features (~0.1M parameters,
    ~1M multiply-adds per image: cheap enough for the attacks to invert it in the default
    suite; 80% on Fashion-MNIST after 3 epochs on 10k images)."""
    channels = 16 * in_channels
    return nn.Sequential(
        _centre(mean),
        nn.PixelUnshuffle(4),  # (16 C, 7, 7): a permutation
        *(SLLConv(channels, channels) for _ in range(3)),
        nn.Flatten(),
        SLLDense(channels * 49, 128),
        SpectralLinear(channels * 49, num_classes),
    )


def sll_small_32(in_channels: int, num_classes: int, mean: tuple[float, ...]) -> nn.Sequential:
    """SLL-small for 32x32 images (cifar10/100) in the shape of Araujo et al. 2023's small
    configuration: 20 conv blocks of width 45 at full resolution, 4x4 sum pooling / 4,
    7 dense blocks of width 2048 on 2880 features (~41M parameters)."""
    return nn.Sequential(
        _centre(mean),
        PadChannels(45),
        *(SLLConv(45, 45) for _ in range(20)),
        nn.AvgPool2d(4, divisor_override=4),  # sum of 16 / 4: 1-Lipschitz in l2
        nn.Flatten(),
        *(SLLDense(45 * 8 * 8, 2048) for _ in range(7)),
        SpectralLinear(45 * 8 * 8, num_classes),
    )


def sll_network(
    input_shape: tuple[int, ...], num_classes: int, mean: tuple[float, ...]
) -> nn.Sequential:
    """The 1-Lipschitz network for an image task's input shape."""
    channels, size = input_shape[0], input_shape[-1]
    builders = {28: sll_small_28, 32: sll_small_32}
    if size not in builders:
        raise ConfigError(f"no SLL network for {size}x{size} images; sizes: {sorted(builders)}")
    return builders[size](channels, num_classes, mean)
