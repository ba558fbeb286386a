"""Optimisation attacks that invert the mechanism's encoder by gradient descent:
`optimization` (unbiased), `tv` (total-variation prior) and `map` (Gaussian data prior).

All three minimise, per sample and batched, data_loss(x) + prior_loss(x) with Adam, halve
the step size whenever the loss plateaus (less than `rel_tol` relative improvement over
`patience` steps) and stop after `decays` halvings or `max_steps`, keeping each sample's
best iterate.

Where the minimiser has a closed form it is used instead (`solver = "auto"`; "iterative"
forces the descent): the encoder is the identity, so `optimization` is least squares with
the release itself as its exact solution, and `map` with Gaussian noise and a Gaussian
prior is the posterior mode, a linear solve (a Wiener filter). Exact, and no 300 steps.

Devices (bench.core.device): the descent runs batched on the job's device; the priors are fitted
and the closed forms solved on the CPU (scikit-learn, float64 Cholesky solves).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import torch
from torch import nn

from bench.core.device import on_device, randn, to_cpu, to_device
from bench.core.errors import ConfigError
from bench.plugin.params import Range
from bench.plugin.protocols import (
    Attack,
    AttackParams,
    DataSplit,
    FitContext,
    Mechanism,
    NoiseModel,
    Release,
    Task,
)
from bench.plugin.registry import register_attack

# Covariance shrinkage chosen from the data (both shrink toward mu I, mu = trace / p) or
# fixed (toward the diagonal, by `fixed_shrinkage`).
Shrinkage = Literal["oas", "ledoit-wolf", "fixed"]


def shrunk_covariance(flat: torch.Tensor, method: str) -> tuple[torch.Tensor, float]:
    """The (N, p) sample's covariance shrunk toward a scaled identity by the amount the
    estimator `method` chooses from the data, and that amount (scikit-learn's OAS or
    Ledoit-Wolf, both with the mean removed)."""
    from sklearn.covariance import OAS, LedoitWolf

    estimator = OAS() if method == "oas" else LedoitWolf()
    estimator.fit(flat.numpy())
    shrunk = torch.from_numpy(estimator.covariance_).double()
    return shrunk, float(estimator.shrinkage_)


class EncoderInversion(Attack):
    """Shared machinery: white-box access to `mechanism.encoder()`; subclasses define the loss."""

    @dataclass(frozen=True)
    class Params(AttackParams):
        lr: float = 0.1
        max_steps: Annotated[int, Range(1, math.inf)] = 500
        patience: int = 50
        rel_tol: float = 1e-3
        decays: int = 6
        init_std: float = 0.1
        batch_size: Annotated[int, Range(1, math.inf)] = 256
        # "auto": the closed form where the loss has one, else gradient descent
        solver: Literal["auto", "iterative"] = "auto"

    p: Params

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        encoder = mechanism.encoder()
        if encoder is None:
            raise ConfigError(
                f"attack {self.name} needs a differentiable encoder; mechanism "
                f"{mechanism.name} exposes none (label-only mechanisms need label-only attacks)"
            )
        self.device = ctx.device
        self.encoder = on_device(encoder, self.device).eval().requires_grad_(False)
        self.noise: NoiseModel | None = mechanism.noise()
        self.input_shape = tuple(aux.x.shape[1:])
        table = mechanism.embedding_table()
        if task.modality in ("ids", "text") and table is not None:
            # Discrete inputs: the encoder takes embeddings, one D-vector per input position.
            self.input_shape = (*self.input_shape, int(table.shape[1]))
        self.data_range = task.data_range
        self.generator = ctx.generator(f"{self.name}-init")
        self.fit_prior(task, aux)

    def fit_prior(self, task: Task, aux: DataSplit) -> None:
        """Estimate whatever prior the attack uses from the attacker's aux data."""

    def initial(self, n: int) -> torch.Tensor:
        """Starting points, x0 ~ N(0, init_std^2) (the dFIL paper's Attack-ub)."""
        x0 = randn((n, *self.input_shape), self.generator, self.device)
        return x0 * self.p.init_std

    def data_loss(self, x: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        """Per-sample ||o - Enc(x)||^2 / ||o||^2: release matching, scale-free."""
        target = observed.flatten(1)
        norm = target.pow(2).sum(1).clamp_min(1e-12)
        return (self.encoder(x).flatten(1) - target).pow(2).sum(1) / norm

    def prior_loss(self, x: torch.Tensor) -> torch.Tensor:
        """Per-sample prior penalty; none for the unbiased attack."""
        return torch.zeros(len(x), device=x.device)

    def reconstruct(self, release: Release) -> torch.Tensor:
        return to_cpu(self.reconstruct_on_device(release))

    def reconstruct_on_device(self, release: Release) -> torch.Tensor:
        """The reconstruction, left where it was computed: the closed form on the CPU, the
        descent on the attack's device."""
        values = to_cpu(release.values)
        exact = self.closed_form(values) if self.p.solver == "auto" else None
        if exact is not None:
            return exact
        observed = to_device(values, self.device)
        bs = self.p.batch_size
        parts = [self.invert(observed[i : i + bs]) for i in range(0, len(observed), bs)]
        return torch.cat(parts)

    def identity_encoder(self) -> bool:
        """Whether the encoder is the identity (input-space mechanisms on continuous data),
        the case the closed forms cover."""
        return isinstance(self.encoder, nn.Identity)

    def closed_form(self, observed: torch.Tensor) -> torch.Tensor | None:
        """The exact minimiser of the attack's loss for a batch, or None when it has none
        (then `invert` descends). No prior: least squares through the identity encoder is
        minimised exactly by the release itself."""
        if type(self).prior_loss is not EncoderInversion.prior_loss or not self.identity_encoder():
            return None
        return observed.detach().clone().float()

    def invert(self, observed: torch.Tensor) -> torch.Tensor:
        """Minimise data_loss + prior_loss for one batch, keeping each sample's best x.

        Plateau: the best total loss improved by less than `rel_tol` (relative) over the
        last `patience` steps; then the step size halves, up to `decays` times.
        """
        p = self.p
        patience, rel_tol = p.patience, p.rel_tol
        x = nn.Parameter(self.initial(len(observed)))
        lr = p.lr
        opt = torch.optim.Adam([x], lr=lr)
        best_x = x.detach().clone()
        best_loss = torch.full((len(observed),), float("inf"), device=observed.device)
        history: list[float] = []  # best total loss after each step
        decays, window_start = 0, 0
        for step in range(p.max_steps):
            per_sample = self.data_loss(x, observed) + self.prior_loss(x)
            current = per_sample.detach()
            improved = current < best_loss
            best_loss = torch.where(improved, current, best_loss)
            best_x[improved] = x.detach()[improved]
            history.append(float(best_loss.sum()))
            if step - window_start >= patience:
                before = history[step - patience]
                if history[step] > before - rel_tol * abs(before):
                    decays += 1
                    if decays > p.decays:
                        break
                    lr /= 2
                    for group in opt.param_groups:
                        group["lr"] = lr
                    window_start = step
            opt.zero_grad()
            per_sample.sum().backward()
            opt.step()
        return best_x


@register_attack
class OptimizationAttack(EncoderInversion):
    """Unbiased: argmin_x ||o - Enc(x)||^2 / ||o||^2 (dFIL paper, Attack-ub); no prior, so its
    error is what the Cramer-Rao bound speaks about."""

    name = "optimization"
    modalities = frozenset({"image", "tabular", "vector", "ids", "text"})


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Per-sample anisotropic total variation: mean |horizontal| + |vertical| differences."""
    dh = (x[..., 1:, :] - x[..., :-1, :]).abs().flatten(1).mean(1)
    dw = (x[..., :, 1:] - x[..., :, :-1]).abs().flatten(1).mean(1)
    return dh + dw


@register_attack
class TVAttack(OptimizationAttack):
    """Release matching plus lambda * TV(x), the natural-image prior of Mahendran & Vedaldi
    (2015) used by the dFIL paper's optimisation attack.

    lambda is chosen on aux (`tune_lambda`, the default): the attacker queries the mechanism
    on `tune_samples` of its own aux images, reconstructs them under every weight of
    `lambda_grid` in one batched descent, and keeps the weight with the lowest MSE to the
    aux images it knows. The weight is reported on the row as `lambda_tv`. With
    `tune_lambda = false` it is the fixed `lambda_tv` (0.05, the dFIL paper's). The target
    releases are never used for the choice.
    """

    name = "tv"
    modalities = frozenset({"image"})

    @dataclass(frozen=True)
    class Params(EncoderInversion.Params):
        lambda_tv: float = 0.05
        tune_lambda: bool = True
        lambda_grid: list[float] = field(
            default_factory=lambda: [0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0]
        )
        tune_samples: Annotated[int, Range(1, math.inf)] = 32

    p: Params

    def check_params(self) -> None:
        grid = self.p.lambda_grid
        if (
            not isinstance(grid, list)
            or not grid
            or not all(isinstance(v, int | float) and not isinstance(v, bool) for v in grid)
            or not all(math.isfinite(v) and v >= 0 for v in grid)
        ):
            raise ConfigError("attack tv: lambda_grid must be a non-empty list of numbers >= 0")

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        super().fit(mechanism, task, aux, ctx)
        self.weight: float | torch.Tensor = self.p.lambda_tv
        if self.p.tune_lambda:
            self.weight = self._tuned_weight(mechanism, aux, ctx)

    def _tuned_weight(self, mechanism: Mechanism, aux: DataSplit, ctx: FitContext) -> float:
        """The grid weight whose reconstructions of released aux queries have the lowest
        MSE; the fixed weight when fewer than 2 queries are released."""
        gen = ctx.generator("tv-tune")
        pick = torch.randperm(len(aux), generator=gen)[: self.p.tune_samples]
        x = aux.x[pick]
        queried = mechanism.release(x, ctx.generator("tv-tune-release")).cpu()
        kept = queried.released
        if int(kept.sum()) < 2:
            return self.p.lambda_tv
        x = to_device(x[kept], self.device)
        observed = to_device(queried.values[kept].float(), self.device)
        grid = torch.tensor([float(v) for v in self.p.lambda_grid], device=self.device)
        n = len(x)
        # All weights in one descent: sample i of block j is reconstructed under grid[j].
        self.weight = grid.repeat_interleave(n)
        x_hat = self.invert(observed.repeat(len(grid), *([1] * (observed.ndim - 1))))
        errors = (x_hat - x.repeat(len(grid), *([1] * (x.ndim - 1)))).pow(2)
        per_weight = errors.flatten(1).mean(1).view(len(grid), n).mean(1)
        return float(grid[int(per_weight.argmin())])

    def tuned(self) -> dict[str, float]:
        return {"lambda_tv": float(self.weight)} if self.p.tune_lambda else {}

    def prior_loss(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * total_variation(x)


@register_attack
class MAPAttack(EncoderInversion):
    """Maximum a posteriori: argmin_x -log p(o | x) - log p(x), the exact noise likelihood of
    the mechanism plus a Gaussian prior.

    Both terms are negative log-densities in nats, so their weight (lambda = 1) makes the
    estimate the MAP under the mechanism's noise model. The prior is the task's exact prior
    when it has one (`task.gaussian_prior()`, e.g. synthetic Gaussian data), else fitted on
    aux: mean and diagonal or full covariance. Aux may hold fewer samples than dimensions,
    so the full covariance is shrunk toward a scaled identity by the amount the data call
    for: `shrinkage = "oas"` (Chen et al. 2010, the default) or `"ledoit-wolf"` (Ledoit &
    Wolf 2004), both scikit-learn's; `"fixed"` uses `fixed_shrinkage` toward the diagonal
    (a fixed amount, for comparison). The amount used is
    reported on the row as `prior_shrinkage`.
    """

    name = "map"

    @dataclass(frozen=True)
    class Params(EncoderInversion.Params):
        lr: float = 0.05
        covariance: Literal["full", "diag"] = "full"
        shrinkage: Shrinkage = "oas"
        fixed_shrinkage: Annotated[float, Range(0.0, 1.0)] = 0.1
        var_floor: float = 1e-4

    p: Params

    def fit_prior(self, task: Task, aux: DataSplit) -> None:
        exact = getattr(task, "gaussian_prior", None)
        if callable(exact):
            mean, cov = exact()
        else:
            flat = aux.x.flatten(1).double()
            mean = flat.mean(0)
            centred = flat - mean
            cov = centred.T @ centred / max(1, len(flat) - 1)
        self.prior_mean = to_device(mean.float().flatten(), self.device)  # for the descent
        floor = self.p.var_floor
        if cov.ndim == 1 or self.p.covariance == "diag":
            var = (cov if cov.ndim == 1 else torch.diagonal(cov)).double().clamp_min(floor)
            self.prior_scale_tril = None
            self.prior_inv_std = to_device(var.rsqrt().float(), self.device)
            self.prior_cov = var  # the diagonal, in float64 for the closed form
            return
        eye = torch.eye(len(cov), dtype=torch.float64)
        method = self.p.shrinkage
        if callable(exact) or method == "fixed":
            # An exact prior is used as given; "fixed" shrinks toward the diagonal.
            alpha = 0.0 if callable(exact) else self.p.fixed_shrinkage
            cov = cov.double()
            shrunk = (1 - alpha) * cov + alpha * torch.diag(torch.diagonal(cov))
        else:
            shrunk, alpha = shrunk_covariance(aux.x.flatten(1).double(), method)
        self.shrinkage_used = alpha
        self.prior_cov = shrunk + floor * eye
        tril = torch.linalg.cholesky(self.prior_cov).float()
        self.prior_scale_tril = to_device(tril, self.device)  # for the descent

    def tuned(self) -> dict[str, float]:
        used = getattr(self, "shrinkage_used", None)
        return {} if used is None else {"prior_shrinkage": used}

    def closed_form(self, observed: torch.Tensor) -> torch.Tensor | None:
        """The posterior mode for Gaussian noise N(0, s^2 I) through the identity encoder
        and the prior N(mu, S): x = mu + S (S + s^2 I)^-1 (o - mu), the minimiser of the
        quadratic data_loss + prior_loss (its gradient vanishes there). Laplace noise
        makes the loss non-quadratic: None, and the descent runs."""
        noise = self.noise
        if not self.identity_encoder() or (noise is not None and noise.kind != "gaussian"):
            return None
        if noise is None:  # the narrow likelihood data_loss uses for a noiseless release
            lo, hi = self.data_range
            noise = NoiseModel("gaussian", 1e-3 * (hi - lo))
        s2 = float(noise.scale) ** 2
        mu = to_cpu(self.prior_mean).double()  # solved on the CPU, in float64
        centred = observed.detach().flatten(1).double() - mu
        if self.prior_cov.ndim == 1:
            gain = self.prior_cov / (self.prior_cov + s2)
            x = mu + centred * gain
        else:
            eye = torch.eye(len(mu), dtype=torch.float64)
            # S (S + s^2 I)^-1 (o - mu), with (S + s^2 I) symmetric positive definite.
            factor = torch.linalg.cholesky(self.prior_cov + s2 * eye)
            solved = torch.cholesky_solve(centred.T, factor)
            x = mu + (self.prior_cov @ solved).T
        return x.float().view(observed.shape)

    def initial(self, n: int) -> torch.Tensor:
        """Start at the prior mean: the MAP with an uninformative release."""
        return self.prior_mean.view(1, *self.input_shape).repeat(n, *([1] * len(self.input_shape)))

    def data_loss(self, x: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        noise = self.noise
        if noise is None:
            # No noise: the likelihood is a point mass; a narrow Gaussian (std 1e-3 of the
            # data range) makes the MAP the exact inversion of the encoder.
            lo, hi = self.data_range
            noise = NoiseModel("gaussian", 1e-3 * (hi - lo))
        return noise.neg_log_likelihood(observed, self.encoder(x))

    def prior_loss(self, x: torch.Tensor) -> torch.Tensor:
        centred = x.flatten(1) - self.prior_mean
        if self.prior_scale_tril is None:
            return 0.5 * (centred * self.prior_inv_std).pow(2).sum(1)
        # Mahalanobis distance through the Cholesky factor: solve L z = (x - mu).
        z = torch.linalg.solve_triangular(self.prior_scale_tril, centred.T, upper=False)
        return 0.5 * z.pow(2).sum(0)
