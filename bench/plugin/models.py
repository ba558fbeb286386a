"""Default utility models of the image tasks: small CNNs that train in seconds on a CPU."""

from __future__ import annotations

import torch
from torch import nn


class Normalize(nn.Module):
    """Per-channel standardisation inside the model, so inputs stay in the data range."""

    def __init__(self, mean: tuple[float, ...], std: tuple[float, ...]) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x - self.mean) / self.std


def small_cnn(
    in_channels: int,
    image_size: int,
    num_classes: int,
    mean: tuple[float, ...],
    std: tuple[float, ...],
) -> nn.Sequential:
    """Two conv blocks and two dense layers (~100k parameters for 28x28 inputs)."""
    flat = 64 * (image_size // 4) ** 2
    return nn.Sequential(
        Normalize(mean, std),
        nn.Conv2d(in_channels, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(flat, 128),
        nn.ReLU(),
        nn.Linear(128, num_classes),
    )
