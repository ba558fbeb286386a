"""The prior term of the van Trees bound, Tr(J(f_pi)) / d with J(f_pi) = E[grad log f_pi
grad log f_pi^T] (dFIL paper, Corollary 1): exact for Gaussian data, otherwise estimated
by sliced score matching (Song et al. 2019) on data smoothed by N(0, s^2), s = 0.25 by default
(dFIL paper App. A.1: smoothing stabilises score matching on low-dimensional image manifolds;
0.01 is too little and the bound breaks).

Sliced score matching with variance reduction (SSM-VR, Song et al. 2019, Eq. 8) fits a score
model s(x) by minimising L(s) = E[v^T (ds/dx) v + ||s(x)||^2 / 2], v ~ N(0, I), which equals
E||s - s*||^2 / 2 - J / 2 with s* = grad log p and J = E||s*||^2 (Hyvarinen 2005, Thm 1;
integration by parts). Three held-out estimates of J follow from a fitted s:
  A = E||s||^2,   B = -E[v^T (ds/dx) v] = E[s . s*],   C = 2B - A = -2 L(s) = J - E||s - s*||^2.
They coincide for the true score. A fitted score is a shrunk regression estimate, so A and B
fall short of J (on smoothed Fashion-MNIST, A is even below the floor mean_i 1/Var(x~_i),
which J cannot be below by the Cramer-Rao bound for location); C is the tightest of the
three, short of J by exactly the fit error. We report C as the prior term, its standard error
over held-out samples, and |A - B| as the misfit indicator ("gap").

Caveat, stated where the number is used: smoothing lowers Fisher information (Stam's
inequality, 1/J(X + Z) >= 1/J(X) + 1/J(Z) per coordinate, and J(X + Z) <= 1/s^2), so the
smoothed prior term understates what a prior on the raw data can give an attacker, and a van
Trees bound built on it is an estimate for raw data, not a certificate. The bound tends to
d / Tr(J) as the noise grows, which for s = 0.25 can exceed the raw data's own variance:
on Fashion-MNIST (prior term ~9.9, bound ~0.10) guessing the aux mean (MSE ~0.086) already
beats it. bench reports the bound's empirical validity next to it; a smaller `smoothing`
(mechanism parameter) gives a larger prior term and a lower bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from bench.core.device import module_device, randn, to_cpu, to_device

SMOOTHING = 0.25


@dataclass(frozen=True)
class PriorTerm:
    """Tr(J(f_pi)) / d with its error: `se` is the standard error over held-out samples (zero
    when exact), `gap` the disagreement of the norm and divergence estimates (zero when
    exact)."""

    value: float
    se: float
    gap: float
    method: str  # "exact-gaussian" or "sliced-score-matching"
    smoothing: float = 0.0


def gaussian_prior_term(variance: torch.Tensor) -> PriorTerm:
    """Exact Tr(J)/d for N(mu, Sigma): J = Sigma^-1, so Tr(Sigma^-1)/d; `variance` is the
    diagonal (d,) or the full covariance (d, d). For N(0, tau^2 I) this is 1/tau^2."""
    v = variance.double()
    inverse_diagonal = 1.0 / v if v.ndim == 1 else torch.linalg.inv(v).diagonal()
    return PriorTerm(float(inverse_diagonal.mean()), 0.0, 0.0, "exact-gaussian")


class ScoreNet(nn.Module):
    """s(x) = -(x - mu) / v + MLP(x): the score of the diagonal Gaussian fit to the smoothed
    data plus a learnt correction (a well-conditioned start for score matching)."""

    def __init__(self, mean: torch.Tensor, var: torch.Tensor, hidden: int = 256) -> None:
        super().__init__()
        d = mean.numel()
        self.register_buffer("mean", mean.flatten().float())
        self.register_buffer("inv_var", (1.0 / var.flatten()).float())
        self.net = nn.Sequential(
            nn.Linear(d, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU()
        )
        self.out = nn.Linear(hidden, d)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = x.flatten(1)
        return -(z - self.mean) * self.inv_var + self.out(self.net(z))


def _ssm_terms(
    score: nn.Module, x: torch.Tensor, generator: torch.Generator, create_graph: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-sample v^T (ds/dx) v (v ~ N(0, I)) and ||s(x)||^2."""
    x = x.flatten(1).detach().requires_grad_(True)
    s = score(x)
    v = randn(x.shape, generator, x.device)
    (grad_v,) = torch.autograd.grad((s * v).sum(), x, create_graph=create_graph)
    return (grad_v * v).sum(1), s.pow(2).sum(1)


def fit_score(
    x: torch.Tensor,
    generator: torch.Generator,
    *,
    smoothing: float = SMOOTHING,
    steps: int = 300,
    batch_size: int = 128,
    lr: float = 1e-3,
    hidden: int = 256,
    device: torch.device | None = None,
) -> ScoreNet:
    """Fit a score model of x + N(0, smoothing^2) by SSM-VR: `steps` Adam steps on batches
    drawn by reshuffled passes over x, with fresh smoothing noise and slicing directions each
    step (so small data sets are not memorised noise and all), on `device` (default: x's)."""
    flat = x.flatten(1).float()
    var = flat.var(0) + smoothing**2
    init_seed = int(torch.randint(2**62, (1,), generator=generator))
    with torch.random.fork_rng(devices=[]):  # the init from `generator`, not the global RNG
        torch.manual_seed(init_seed)
        score = ScoreNet(flat.mean(0), var, hidden)
    score, flat = score.to(device or flat.device), to_device(flat, device)
    opt = torch.optim.Adam(score.parameters(), lr=lr)
    order = torch.randperm(len(flat), generator=generator)
    cursor = 0
    for _ in range(steps):
        if cursor >= len(flat):
            order, cursor = torch.randperm(len(flat), generator=generator), 0
        batch = flat[to_device(order[cursor : cursor + batch_size], flat.device)]
        cursor += batch_size
        noisy = batch + smoothing * randn(batch.shape, generator, flat.device)
        div, norm2 = _ssm_terms(score, noisy, generator, create_graph=True)
        loss = (div + 0.5 * norm2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return score.eval()


def score_prior_term(
    score: nn.Module,
    x_heldout: torch.Tensor,
    generator: torch.Generator,
    *,
    smoothing: float = SMOOTHING,
    draws: int = 4,
) -> PriorTerm:
    """C = -2 L(s) / d = (2B - A) / d over `draws` smoothed copies of held-out data, its
    standard error over samples, and the misfit |A - B| / d (see the module docstring)."""
    d = x_heldout[0].numel()
    norms, divs = [], []
    flat = to_device(x_heldout.flatten(1).float(), module_device(score))
    for _ in range(draws):
        noisy = flat + smoothing * randn(flat.shape, generator, flat.device)
        div, norm2 = _ssm_terms(score, noisy, generator, create_graph=False)
        norms.append(to_cpu(norm2.detach()).double())
        divs.append(to_cpu(div.detach()).double())
    norm_est = torch.stack(norms).mean(0) / d  # A per sample, draws averaged
    div_est = -torch.stack(divs).mean(0) / d  # B per sample
    per_sample = 2 * div_est - norm_est  # C per sample
    se = float(per_sample.std() / math.sqrt(len(per_sample)))
    gap = abs(float(norm_est.mean() - div_est.mean()))
    return PriorTerm(float(per_sample.mean()), se, gap, "sliced-score-matching", smoothing)


def estimate_prior_term(
    x_train: torch.Tensor,
    x_heldout: torch.Tensor,
    generator: torch.Generator,
    *,
    smoothing: float = SMOOTHING,
    steps: int = 300,
    device: torch.device | None = None,
) -> PriorTerm:
    """Fit the score of the smoothed data on `x_train`, evaluate on `x_heldout` (on
    `device`, default the CPU; the statistics are taken on the CPU in float64)."""
    score = fit_score(x_train, generator, smoothing=smoothing, steps=steps, device=device)
    return score_prior_term(score, x_heldout, generator, smoothing=smoothing)
