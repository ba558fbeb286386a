"""Per-sample reconstruction errors between private inputs x and attack outputs x_hat.

Every function takes torch tensors or numpy arrays shaped (N, *shape) and returns a
float64 array of N values, so the harness can summarise them with a CI.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from skimage.metrics import structural_similarity

# PSNR floors the MSE at this fraction of data_range**2: a perfect reconstruction then
# scores 10*log10(1e10) = 100 dB instead of inf, which keeps means and CIs finite.
PSNR_MSE_FLOOR = 1e-10


def _to_numpy(a: Any) -> np.ndarray:
    """A float64 numpy copy of a torch tensor or array-like (no torch import needed)."""
    if hasattr(a, "detach"):
        a = a.detach().cpu().numpy()
    return np.asarray(a, dtype=np.float64)


def _pair(x: Any, x_hat: Any) -> tuple[np.ndarray, np.ndarray]:
    """x and x_hat as float64 arrays of equal shape (N, ...) with N >= 1, all finite."""
    a, b = _to_numpy(x), _to_numpy(x_hat)
    if a.shape != b.shape:
        raise ValueError(f"x has shape {a.shape} but x_hat has shape {b.shape}")
    if a.ndim < 1 or a.shape[0] == 0:
        raise ValueError(f"expected a batch shaped (N, ...) with N >= 1, got {a.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("x and x_hat must be finite (found NaN or inf)")
    return a, b


def _diff(x: Any, x_hat: Any) -> np.ndarray:
    """(N, D) flattened differences x - x_hat."""
    a, b = _pair(x, x_hat)
    return (a - b).reshape(len(a), -1)


def _check_range(data_range: float) -> float:
    if not (np.isfinite(data_range) and data_range > 0):
        raise ValueError(f"data_range must be positive and finite, got {data_range}")
    return float(data_range)


def mse(x: Any, x_hat: Any) -> np.ndarray:
    """Mean squared error per dimension, per sample."""
    return (_diff(x, x_hat) ** 2).mean(axis=1)


def l1(x: Any, x_hat: Any) -> np.ndarray:
    """||x - x_hat||_1 per sample."""
    return np.abs(_diff(x, x_hat)).sum(axis=1)


def l2(x: Any, x_hat: Any) -> np.ndarray:
    """||x - x_hat||_2 per sample."""
    return np.sqrt((_diff(x, x_hat) ** 2).sum(axis=1))


def psnr(x: Any, x_hat: Any, data_range: float) -> np.ndarray:
    """10 log10(data_range^2 / mse) per sample, in dB.

    The MSE is floored at `PSNR_MSE_FLOOR * data_range**2`, so a perfect reconstruction
    gives 100 dB rather than inf. `data_range` is the task's (1.0 for [0, 1] images).
    """
    r = _check_range(data_range)
    m = np.maximum(mse(x, x_hat), PSNR_MSE_FLOOR * r * r)
    return 10.0 * np.log10(r * r / m)


def _ssim_layout(shape: tuple[int, ...]) -> tuple[bool, int]:
    """(is_colour, smallest spatial side) for image batches; ValueError for non-images."""
    if len(shape) == 3:
        return False, min(shape[1], shape[2])
    if len(shape) == 4:
        return shape[1] > 1, min(shape[2], shape[3])
    raise ValueError(
        f"ssim needs images shaped (N, H, W) or (N, C, H, W), got {shape}; "
        "use mse/l1/l2 for non-image inputs"
    )


def _win_size(side: int) -> int:
    """skimage's default 7, or the largest odd window that fits a smaller image."""
    win = min(7, side if side % 2 == 1 else side - 1)
    if win < 3:
        raise ValueError(f"ssim needs images at least 3 px on each side, got {side}")
    return win


def ssim(x: Any, x_hat: Any, data_range: float) -> np.ndarray:
    """Structural similarity per sample (scikit-image, `data_range` set explicitly).

    (N, H, W) and (N, 1, H, W) are grey images; (N, C, H, W) with C > 1 uses the channel
    axis. Images under 7 px use the largest odd window that fits. The reference code
    passed 255 for [0, 1] images, which inflates SSIM; always pass the task's range.
    """
    r = _check_range(data_range)
    a, b = _pair(x, x_hat)
    colour, side = _ssim_layout(a.shape)
    win = _win_size(side)
    if a.ndim == 4 and not colour:
        a, b = a[:, 0], b[:, 0]
    channel_axis = 0 if colour else None
    return np.array(
        [
            structural_similarity(a[i], b[i], data_range=r, win_size=win, channel_axis=channel_axis)
            for i in range(len(a))
        ],
        dtype=np.float64,
    )


__all__ = ["PSNR_MSE_FLOOR", "l1", "l2", "mse", "psnr", "ssim"]
