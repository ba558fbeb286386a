"""Decoder architectures for the DNN inverter: residual (upsampling + residual blocks) or
conv / conv-transpose (dFIL appendix Table 3 style) for image-shaped releases, an MLP for
flat releases."""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
from torch import nn


class ConvDecoder(nn.Module):
    """Map a (C, H, W) release to a (C', H', W') image; transposed convs upsample by 2.

    When the release has the image's spatial size (input-space noise), a linear 1x1 skip
    path is added to the output (residual learning, as in DnCNN denoisers): the identity
    part is learnt at once and the conv body only has to learn the correction.
    """

    def __init__(self, in_shape: tuple[int, ...], out_shape: tuple[int, ...], width: int) -> None:
        super().__init__()
        in_ch, in_h = in_shape[0], in_shape[1]
        out_ch, out_h, out_w = out_shape
        layers: list[nn.Module] = [nn.Conv2d(in_ch, width, 3, padding=1), nn.GELU()]
        h = in_h
        while h * 2 <= out_h:
            layers += [nn.ConvTranspose2d(width, width, 4, stride=2, padding=1), nn.GELU()]
            h *= 2
        layers += [nn.Conv2d(width, width, 3, padding=1), nn.GELU()]
        self.body = nn.Sequential(*layers)
        self.out_size = (out_h, out_w)
        self.head = nn.Conv2d(width, out_ch, 3, padding=1)
        same_size = tuple(in_shape[1:]) == (out_h, out_w)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if same_size else None

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.body(z)
        if h.shape[-2:] != self.out_size:
            h = nn.functional.interpolate(h, size=self.out_size, mode="bilinear")
        out = self.head(h)
        return out if self.skip is None else out + self.skip(z)


class ResidualBlock(nn.Module):
    """conv3x3 - GELU - conv3x3 added back to its input (He et al. 2016)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(width, width, 3, padding=1),
            nn.GELU(),
            nn.Conv2d(width, width, 3, padding=1),
        )

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return nn.functional.gelu(h + self.body(h))


class ResidualDecoder(nn.Module):
    """Map a (C, H, W) release to a (C', H', W') image: a 3x3 stem, nearest-neighbour x2
    upsampling each followed by a 3x3 conv (no checkerboard artefacts of transposed
    convolutions) until the output size, `blocks` residual blocks at full resolution and a
    3x3 head. A linear 1x1 skip from a same-size release is added to the output, as in
    `ConvDecoder`."""

    def __init__(
        self, in_shape: tuple[int, ...], out_shape: tuple[int, ...], width: int, blocks: int
    ) -> None:
        super().__init__()
        in_ch, in_h = in_shape[0], in_shape[1]
        out_ch, out_h, out_w = out_shape
        layers: list[nn.Module] = [nn.Conv2d(in_ch, width, 3, padding=1), nn.GELU()]
        h = in_h
        while h * 2 <= out_h:
            layers += [
                nn.Upsample(scale_factor=2, mode="nearest"),
                nn.Conv2d(width, width, 3, padding=1),
                nn.GELU(),
            ]
            h *= 2
        self.stem = nn.Sequential(*layers)
        self.blocks = nn.Sequential(*(ResidualBlock(width) for _ in range(blocks)))
        self.out_size = (out_h, out_w)
        self.head = nn.Conv2d(width, out_ch, 3, padding=1)
        same_size = tuple(in_shape[1:]) == (out_h, out_w)
        self.skip = nn.Conv2d(in_ch, out_ch, 1) if same_size else None

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        h = self.stem(z)
        if h.shape[-2:] != self.out_size:
            h = nn.functional.interpolate(h, size=self.out_size, mode="bilinear")
        out = self.head(self.blocks(h))
        return out if self.skip is None else out + self.skip(z)


class MLPDecoder(nn.Module):
    """Map a flat (or any-shaped) release to the input shape with a 2-hidden-layer MLP."""

    def __init__(self, in_shape: tuple[int, ...], out_shape: tuple[int, ...], width: int) -> None:
        super().__init__()
        self.out_shape = out_shape
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(math.prod(in_shape), width),
            nn.GELU(),
            nn.Linear(width, width),
            nn.GELU(),
            nn.Linear(width, math.prod(out_shape)),
        )

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return self.net(z).view(len(z), *self.out_shape)


Decoder = Literal["residual", "conv"]
DECODERS: tuple[str, ...] = get_args(Decoder)


def make_decoder(
    in_shape: tuple[int, ...],
    out_shape: tuple[int, ...],
    width: int,
    kind: str = "residual",
    blocks: int = 1,
) -> nn.Module:
    """A convolutional decoder (`kind`: "residual" or the shallower "conv") when both sides
    are images with the release no larger than the input; an MLP otherwise."""
    images = len(in_shape) == 3 and len(out_shape) == 3
    if images and in_shape[1] <= out_shape[1] and in_shape[2] <= out_shape[2]:
        if kind == "residual":
            return ResidualDecoder(in_shape, out_shape, width, blocks)
        return ConvDecoder(in_shape, out_shape, width)
    return MLPDecoder(in_shape, out_shape, max(width, 256))
