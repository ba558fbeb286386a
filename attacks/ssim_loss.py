"""A differentiable SSIM in torch that matches the leaderboard's metric (scikit-image's
`structural_similarity` with its defaults: a uniform 7x7 window, sample covariances,
K1 = 0.01, K2 = 0.03, the mean over the window positions inside the image), so an
inverter trained on it optimises the number it is scored on."""

from __future__ import annotations

import torch
from torch import nn

K1, K2 = 0.01, 0.03


def ssim_per_sample(
    x: torch.Tensor, y: torch.Tensor, data_range: float, win: int = 7
) -> torch.Tensor:
    """Per-sample SSIM of (N, C, H, W) images, averaged over channels; `win` shrinks to the
    largest odd size that fits a smaller image, as the metric does."""
    side = min(x.shape[-2], x.shape[-1])
    win = min(win, side if side % 2 == 1 else side - 1)
    n_pix = win * win
    channels = x.shape[1]

    def local_mean(t: torch.Tensor) -> torch.Tensor:
        # A depthwise uniform filter over valid positions (the metric crops the borders).
        return nn.functional.avg_pool2d(t, win, stride=1)

    mx, my = local_mean(x), local_mean(y)
    cov_norm = n_pix / (n_pix - 1)  # sample (not population) covariance, as scikit-image
    vx = cov_norm * (local_mean(x * x) - mx * mx)
    vy = cov_norm * (local_mean(y * y) - my * my)
    vxy = cov_norm * (local_mean(x * y) - mx * my)
    c1, c2 = (K1 * data_range) ** 2, (K2 * data_range) ** 2
    s = ((2 * mx * my + c1) * (2 * vxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.flatten(2).mean(2).sum(1) / channels
