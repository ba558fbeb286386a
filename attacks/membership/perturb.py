"""Random perturbations of tabular records, the data augmentations of the label-only
attacks: Gaussian noise on the continuous columns, resampled categories on the one-hot
groups (Choquette-Choo et al. 2021, "Label-Only Membership Inference Attacks", Sec. 4)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

Groups = Sequence[Sequence[int]]


def task_groups(task: object) -> tuple[tuple[int, ...], ...]:
    """The task's one-hot groups (columns of each categorical feature); none if it has none."""
    groups = getattr(task, "one_hot_groups", None)
    return tuple(tuple(g) for g in groups()) if callable(groups) else ()


def perturbations(
    x: torch.Tensor,
    groups: Groups,
    count: int,
    sigma: float,
    resample: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """(N, count, d) valid records near each row of `x` (N, d): every continuous column plus
    N(0, sigma^2), clamped to the encoding's [0, 1]; each categorical feature replaced, with
    probability `resample`, by a category drawn uniformly (possibly the same one)."""
    n, d = x.shape
    out = x.unsqueeze(1).repeat(1, count, 1)
    categorical = torch.zeros(d, dtype=torch.bool)
    for group in groups:
        categorical[list(group)] = True
    noise = torch.randn(n, count, d, generator=generator) * sigma
    out = torch.where(categorical, out, (out + noise).clamp(0.0, 1.0))
    for group in groups:
        index = torch.tensor(group)
        redraw = torch.rand(n, count, generator=generator) < resample
        drawn = torch.randint(0, len(group), (n, count), generator=generator)
        fresh = torch.nn.functional.one_hot(drawn, len(group)).to(x.dtype)
        block = out[:, :, index]
        out[:, :, index] = torch.where(redraw.unsqueeze(-1), fresh, block)
    return out


def with_perturbations(
    x: torch.Tensor,
    task: object,
    count: int,
    sigma: float,
    resample: float,
    generator: torch.Generator,
) -> torch.Tensor:
    """(N, count + 1, d): each record first, then `count` perturbations of it."""
    near = perturbations(x, task_groups(task), count, sigma, resample, generator)
    return torch.cat([x.unsqueeze(1), near], dim=1)
