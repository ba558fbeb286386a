"""Split models for dFIL-calibrated split inference: a client part (the encoder, run on the
user's device) and a server part, with only smooth operations on the client (GELU, average
pooling), so the Jacobian exists everywhere and the Fisher information is defined (dFIL seed
paper, Sec. 3.1).

- Image tasks: a small smooth CNN (splits early / middle / late), or for cifar10 a CIFAR
  ResNet-18 with GELU and average pooling (paper App. A.2; splits after the first conv, after
  block 4, after block 6, as in Sec. 4.2.1).
- Vector tasks: a fixed random projection with orthonormal columns (paper Sec. 3.3.1), whose
  server side first decodes by least squares.
- Options at the split: a compression conv (few channels) with a decompression conv on the
  server (paper Sec. 4.1, optimisation 2), and norm clipping for the DP encoder (App. A.5).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
from torch import nn

from bench.core.errors import ConfigError
from bench.plugin.models import Normalize

Split = Literal["early", "middle", "late"]
SPLITS: tuple[Split, ...] = get_args(Split)
Arch = Literal["auto", "cnn", "resnet18", "projection"]


class SplitModel(nn.Module):
    """client -> (release happens here) -> server; `forward` is the noiseless composition."""

    def __init__(self, client: nn.Module, server: nn.Module) -> None:
        super().__init__()
        self.client = client
        self.server = server

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.server(self.client(x))


class ClipNorm(nn.Module):
    """e / max(1, ||e||_2 / C) per sample: every encoding has l2 norm at most C (App. A.5)."""

    def __init__(self, clip: float) -> None:
        super().__init__()
        self.clip = clip

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        norms = e.flatten(1).norm(dim=1).clamp_min(1e-12)
        factor = torch.clamp(self.clip / norms, max=1.0)
        return e * factor.view(-1, *([1] * (e.ndim - 1)))


def _conv_block(cin: int, cout: int) -> list[nn.Module]:
    return [nn.Conv2d(cin, cout, 3, padding=1), nn.GELU()]


def smooth_cnn(
    in_channels: int,
    image_size: int,
    num_classes: int,
    mean: tuple[float, ...],
    std: tuple[float, ...],
    split: Split,
) -> tuple[list[nn.Module], list[nn.Module], int]:
    """Layers of the small smooth CNN cut at `split`: (client layers, server layers, channels
    at the split). early = after conv1 (8 x H x W); middle = after conv2 and pooling
    (16 x H/4 x W/4); late = after conv3 (16 x H/4 x W/4). Narrow on purpose: the exact
    Jacobian trace costs d forward passes of the client per sample."""
    side = image_size // 4
    layers: list[nn.Module] = [
        Normalize(mean, std),
        *_conv_block(in_channels, 8),  # -> early
        nn.AvgPool2d(2),
        *_conv_block(8, 16),
        nn.AvgPool2d(2),  # -> middle
        *_conv_block(16, 16),  # -> late
        nn.Flatten(),
        nn.Linear(16 * side * side, 128),
        nn.GELU(),
        nn.Linear(128, num_classes),
    ]
    cut, channels = {"early": (3, 8), "middle": (7, 16), "late": (9, 16)}[split]
    return layers[:cut], layers[cut:], channels


class BasicBlock(nn.Module):
    """ResNet basic block with GELU in place of ReLU (dFIL paper, App. A.2)."""

    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
            nn.BatchNorm2d(cout),
            nn.GELU(),
            nn.Conv2d(cout, cout, 3, padding=1, bias=False),
            nn.BatchNorm2d(cout),
        )
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout)
            )
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.body(x) + self.shortcut(x))


def resnet18_gelu(
    in_channels: int,
    num_classes: int,
    mean: tuple[float, ...],
    std: tuple[float, ...],
    split: Split,
) -> tuple[list[nn.Module], list[nn.Module], int]:
    """The CIFAR ResNet-18 (3x3 stem, no max pooling, global average pooling) with GELU, cut
    after the stem (early, 64 ch), after block 4 (middle, 128 ch) or block 6 (late, 256 ch)."""
    widths = [64, 64, 128, 128, 256, 256, 512, 512]
    blocks: list[nn.Module] = []
    cin = 64
    for i, w in enumerate(widths):
        stride = 2 if i in (2, 4, 6) else 1
        blocks.append(BasicBlock(cin, w, stride))
        cin = w
    layers: list[nn.Module] = [
        Normalize(mean, std),
        nn.Conv2d(in_channels, 64, 3, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.GELU(),  # -> early (index 4)
        *blocks,  # block k ends at index 4 + k
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(512, num_classes),
    ]
    cut, channels = {"early": (4, 64), "middle": (8, 128), "late": (10, 256)}[split]
    return layers[:cut], layers[cut:], channels


class Projection(nn.Linear):
    """x -> M x with M (m x d) a fixed random matrix with orthonormal columns (M^T M = I).

    Orthonormal columns make the least-squares inverse M^T efficient: its error covariance
    sigma^2 (M^T M)^-1 = sigma^2 I has trace exactly the Cramer-Rao bound sigma^2 d / Tr(M^T M).
    With i.i.d. Gaussian entries instead, (M^T M)^-1 spreads over the Marchenko-Pastur law and
    the best unbiased error exceeds the bound by E[1/lambda] E[lambda] ~ 1 / (1 - d/m).
    """

    def __init__(self, d: int, m: int, generator: torch.Generator) -> None:
        if m < d:
            raise ConfigError(f"a projection needs at least as many outputs as inputs ({d})")
        super().__init__(d, m, bias=False)
        gaussian = torch.randn(m, d, generator=generator, dtype=torch.float64)
        q, r = torch.linalg.qr(gaussian)
        q = q * torch.sign(torch.diagonal(r))  # Haar-distributed orthonormal columns
        with torch.no_grad():
            self.weight.copy_(q.float())
        self.weight.requires_grad_(False)


class LeastSquaresDecode(nn.Module):
    """e -> M^T e: the least-squares inverse of a Projection (M^T M = I)."""

    def __init__(self, projection: Projection) -> None:
        super().__init__()
        self.register_buffer("weight", projection.weight.detach().clone())

    def forward(self, e: torch.Tensor) -> torch.Tensor:
        return e @ self.weight


def split_model(
    arch: str,
    input_shape: tuple[int, ...],
    num_classes: int,
    mean: tuple[float, ...],
    std: tuple[float, ...],
    split: Split,
    compression: int = 0,
    clip: float | None = None,
) -> SplitModel:
    """A fresh image split model: the client ends with an optional compression conv (to
    `compression` channels, linear, no bias) and optional norm clipping; the server starts with
    the matching decompression conv + GELU."""
    channels, size = input_shape[0], input_shape[1]
    if arch == "resnet18":
        client, server, width = resnet18_gelu(channels, num_classes, mean, std, split)
    elif arch == "cnn":
        client, server, width = smooth_cnn(channels, size, num_classes, mean, std, split)
    else:
        raise ConfigError(f"unknown image split architecture {arch!r}")
    if compression:
        # No bias: an offset carries no information but would inflate ||e|| (see the SNR
        # regulariser in mechanisms.dfil.training).
        client.append(nn.Conv2d(width, compression, 3, padding=1, bias=False))
        server = [nn.Conv2d(compression, width, 3, padding=1), nn.GELU(), *server]
    if clip is not None:
        client.append(ClipNorm(clip))
    return SplitModel(nn.Sequential(*client), nn.Sequential(*server))


def projection_model(d: int, m: int, server: nn.Module, generator: torch.Generator) -> SplitModel:
    """Vector tasks: client = fixed orthonormal projection R^d -> R^m; server = least-squares
    decoding followed by `server` (the task's utility model)."""
    proj = Projection(d, m, generator)
    return SplitModel(proj, nn.Sequential(LeastSquaresDecode(proj), server))


def input_dim(input_shape: tuple[int, ...]) -> int:
    """d, the number of input coordinates (the denominator of dFIL)."""
    return math.prod(input_shape)
