"""`vae-prior`: MAP reconstruction under a learned generative prior, a VAE trained on aux.

Generative model (the attacker's belief about the private input): z ~ N(0, I_k),
x = Dec(z) + e with e ~ N(0, diag(v)) and x in the task's data range; the release is
o = Enc(x) + noise with the mechanism's exact noise model. The attack returns the joint
mode of p(x, z | o), i.e. it minimises

    J(x, z) = -log p(o | x) + sum_j (x_j - Dec(z)_j)^2 / (2 v_j) + ||z||^2 / 2

(up to constants). Every term is a negative log-density in nats, so none has a free weight
(as in `map`). Two stages:

1. Latent search on the decoded manifold (x = Dec(z), where the middle term is 0):
   `restarts` starts (z = 0, the prior mode, then N(0, I) draws), `steps` Adam steps each
   with a cosine step size. Each sample keeps its best restart by J, never by the input.
2. Input-space refinement of (x, z) together, starting from the best (Dec(z), z). A VAE
   blurs, and the release can carry detail the decoder cannot draw; the first term recovers
   that detail as far as the noise allows. x is projected onto the data range after every
   step. Each sample keeps its best iterate, so J never rises above its stage-1 value. When
   the encoder is the identity (input-space mechanisms), J separates over pixels for a fixed
   z and the x-step is exact (`exact_x`). Then only z descends.

The VAE (`VAE`) is convolutional, for (C, H, W) images of any size. It is trained on aux with
the calibrated-decoder objective of Rybkin et al. (2021, "Simple and Effective VAE Training
with Calibrated Decoders"): a Gaussian decoder whose variance is set to its optimum, the
mean squared error. The ELBO then needs no hand-set weight. v is that error on held-out aux
images, spread over pixels like the training residuals. The VAE is cached per (task, aux
data, seed, its hyperparameters, this file's source).

No noise (`noise()` None): the likelihood is a point mass. As in `map`, it is approximated by
a narrow Gaussian (std 1e-3 of the data range), so the estimate is the exact inversion of
the encoder closest to the prior.

Budget (the defaults): the VAE gets 60 epochs and at least 400 updates, about 10 s on one
core for 1,000 aux images of 28x28. It is trained once per (task, aux, seed) and shared by
every mechanism. Reconstruction runs 4 restarts x 200 latent steps, then 300 refinement
steps, about 4 s per 48 images of 28x28 on one core through the identity encoder. Only
released rows are attacked; ⊥ rows get the aux mean, which is also what the harness scores
for them.

The attack uses the release, the encoder, the noise model and aux data only. It never calls
the mechanism's `release` (no noise draw, not even on aux) and never sees the inputs.

Devices (bench.core.device): the VAE is initialised on the CPU, then trained and searched with on
the job's device; restarts are drawn on the CPU, so they are the same on every device.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from bench.core.device import on_device, randn, to_cpu, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import derive_seed, seeded_init, source_digest, tensor_digest
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

# The VAE gets at least this many gradient updates, whatever the aux size. Otherwise
# `vae_epochs` passes over a tiny aux set (the faces task's 40 images) would be a handful.
MIN_VAE_UPDATES = 400
# Floor on each pixel's decoder variance, as a fraction of the squared data range (as for
# `map`'s var_floor). Pixels constant on aux (image borders) must not pin x to the manifold.
VAR_FLOOR = 1e-4
# Std of the narrow Gaussian that stands for a noiseless release's point-mass likelihood,
# as a fraction of the data range (the same as `map`).
NOISELESS_STD = 1e-3


class VAE(nn.Module):
    """A small convolutional VAE for (C, H, W) images of any size. The decoder's output is
    squashed into the data range (which the attacker knows).

    Encoder: two stride-2 4x4 convolutions (c, then 2c channels) and a linear map to the
    posterior mean and log-variance. Decoder: the mirror image. A linear map goes to
    (2c, ceil(H/4), ceil(W/4)), two stride-2 transposed convolutions follow, and the output
    is cropped to (H, W). Convolutions share weights across positions. On ~1,000 aux images
    this generalises to unseen images better than a fully connected decoder: held-out MSE
    0.014 against 0.018 on Fashion-MNIST, at 2.7x the training cost.
    """

    def __init__(
        self, shape: tuple[int, ...], latent: int, width: int, data_range: tuple[float, float]
    ) -> None:
        super().__init__()
        channels, height, wide = shape
        self.shape, self.latent = shape, latent
        self.lo, self.hi = data_range
        # A 4x4 stride-2 convolution with padding 1 maps a side s to floor(s / 2).
        code = 2 * width * (height // 4) * (wide // 4)
        grid = (2 * width, math.ceil(height / 4), math.ceil(wide / 4))
        self.enc = nn.Sequential(
            nn.Conv2d(channels, width, 4, 2, 1),
            nn.GELU(),
            nn.Conv2d(width, 2 * width, 4, 2, 1),
            nn.GELU(),
            nn.Flatten(),
            nn.Linear(code, 2 * latent),
        )
        self.dec = nn.Sequential(
            nn.Linear(latent, math.prod(grid)),
            nn.GELU(),
            nn.Unflatten(1, grid),
            nn.ConvTranspose2d(2 * width, width, 4, 2, 1),
            nn.GELU(),
            nn.ConvTranspose2d(width, channels, 4, 2, 1),
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Posterior mean and log-variance of q(z | x)."""
        mu, logvar = self.enc(x).chunk(2, dim=1)
        return mu, logvar.clamp(-10, 10)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Dec(z) in the data range, shaped like an input."""
        _, height, wide = self.shape
        out = torch.sigmoid(self.dec(z)[..., :height, :wide])
        return self.lo + (self.hi - self.lo) * out


def train_vae(
    vae: VAE, x: torch.Tensor, epochs: int, lr: float, batch_size: int, gen: torch.Generator
) -> torch.Tensor:
    """Fit `vae` on `x` by the calibrated-decoder ELBO. Returns the decoder's per-pixel
    variance v (shaped like an input).

    With a Gaussian decoder N(Dec(z), s^2 I) over D dimensions, the reconstruction term is
    D/2 log s^2 + ||x - Dec(z)||^2 / (2 s^2). Its minimum over s^2 is at s^2 = the mean
    squared error, where it equals D/2 log(mse) + D/2. Minimising D/2 log(mse) + KL thus
    trains the decoder and its variance together (Rybkin et al. 2021).

    A tenth of `x` is held out. The weights kept are those of the epoch with the lowest
    held-out error, and the mean of v is that error. That is the variance of x - Dec(z) on
    inputs the VAE has not seen, which is what private inputs are; the training error
    underestimates it several times over on ~1,000 images. Over pixels, v follows the
    training residuals, which have many more samples per pixel than the held-out tenth.
    All randomness (split, batch order, reparameterisation draws) comes from `gen`. Runs on
    the VAE's device (`x` is moved there).
    """
    n, d = len(x), x[0].numel()
    device = next(vae.parameters()).device
    x = to_device(x, device)
    order = to_device(torch.randperm(n, generator=gen), device)
    n_val = n // 10 if n >= 10 else 0
    val, train = (x[order[:n_val]], x[order[n_val:]]) if n_val else (x, x)
    bs = min(batch_size, len(train))
    epochs = max(epochs, math.ceil(MIN_VAE_UPDATES / math.ceil(len(train) / bs)))
    opt = torch.optim.Adam(vae.parameters(), lr=lr)
    best_state, best_err = copy.deepcopy(vae.state_dict()), float("inf")
    for _ in range(epochs):
        vae.train()
        for batch in torch.randperm(len(train), generator=gen).split(bs):
            xb = train[to_device(batch, device)]
            mu, logvar = vae.encode(xb)
            z = mu + randn(mu.shape, gen, device) * (0.5 * logvar).exp()
            mse = (vae.decode(z) - xb).pow(2).mean()
            kl = -0.5 * (1 + logvar - mu.pow(2) - logvar.exp()).sum(1).mean()
            loss = 0.5 * d * mse.clamp_min(1e-12).log() + kl
            opt.zero_grad()
            loss.backward()
            opt.step()
        vae.eval()
        with torch.no_grad():  # held-out error at the posterior means
            err = float((vae.decode(vae.encode(val)[0]) - val).pow(2).mean())
        if err < best_err:
            best_state, best_err = copy.deepcopy(vae.state_dict()), err
    vae.load_state_dict(best_state)
    vae.eval()
    with torch.no_grad():
        pattern = (vae.decode(vae.encode(train)[0]) - train).pow(2).mean(0)
    return pattern * (best_err / float(pattern.mean().clamp_min(1e-12)))


@register_attack
class PriorAttack(Attack):
    """MAP under a VAE prior trained on aux: latent search with restarts, then input-space
    refinement (module docstring). Images only: the prior is a model of images."""

    name = "vae-prior"
    modalities = frozenset({"image"})

    @dataclass(frozen=True)
    class Params(AttackParams):
        latent: int = 16  # VAE latent dimension k
        width: int = 16  # VAE channels (c, then 2c)
        vae_epochs: int = 60
        vae_lr: float = 1e-3
        vae_batch: int = 64
        restarts: int = 4  # latent starts per sample: z = 0, then N(0, I) draws
        steps: int = 200  # Adam steps of the latent search
        lr: float = 0.05  # step size for z (z is N(0, I)-scaled), both stages
        refine_steps: int = 300  # steps of the input-space refinement (0: none)
        refine_lr: float = 0.01  # Adam step size for x, as a fraction of the data range
        batch_size: int = 256  # samples reconstructed at once

    p: Params

    def check_params(self) -> None:
        counts = ("latent", "width", "vae_epochs", "vae_batch", "restarts", "steps", "batch_size")
        for key in (*counts, "vae_lr", "lr", "refine_lr"):
            value = getattr(self.p, key)
            if value <= 0:
                kind = "integer" if key in counts else "number"
                raise ConfigError(
                    f"attack vae-prior: {key} must be a positive {kind}, got {value!r}"
                )

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        encoder = mechanism.encoder()
        if encoder is None:
            raise ConfigError(
                f"attack {self.name} needs a differentiable encoder; mechanism "
                f"{mechanism.name} exposes none (label-only mechanisms need label-only attacks)"
            )
        self.device = ctx.device
        self.encoder = on_device(encoder, self.device).eval().requires_grad_(False)
        self.data_range = task.data_range
        lo, hi = task.data_range
        noise = mechanism.noise()
        # Noiseless: the point-mass likelihood as a narrow Gaussian (module docstring).
        self.noise = NoiseModel("gaussian", NOISELESS_STD * (hi - lo)) if noise is None else noise
        self.input_shape = tuple(aux.x.shape[1:])
        self.guess = aux.x.float().mean(0)  # the answer for ⊥ rows (the harness scores it so)
        self.restart_seed = derive_seed(ctx.seed, "prior-restarts")
        self.vae, self.var = self._fit_vae(task, aux, ctx)

    def _fit_vae(self, task: Task, aux: DataSplit, ctx: FitContext) -> tuple[VAE, torch.Tensor]:
        """The VAE prior and its per-pixel decoder variance (floored), cached per (task, aux
        data, seed, hyperparameters, source)."""
        p = self.p
        x = aux.x.float()
        hyper = {k: getattr(p, k) for k in ("latent", "width", "vae_epochs", "vae_lr", "vae_batch")}
        recipe = {
            "artifact": "prior-vae",
            "task_name": task.name,
            "task": task.config(),
            "data": tensor_digest(x),
            "data_range": list(task.data_range),
            **hyper,
            "min_updates": MIN_VAE_UPDATES,
            "seed": ctx.seed,
            "code": source_digest("attacks.vae_prior"),
        }

        def make() -> VAE:
            return VAE(self.input_shape, p.latent, p.width, task.data_range)

        def build() -> dict[str, Any]:
            with seeded_init(ctx.seed, "prior-vae-init"):
                vae = make().to(self.device)  # initialised on the CPU, then moved
            gen = ctx.generator("prior-vae-train")
            var = train_vae(vae, x, p.vae_epochs, p.vae_lr, p.vae_batch, gen)
            return {"state": vae.state_dict(), "var": var}

        built = ctx.cache.get_or_build(recipe, build)
        with seeded_init(ctx.seed, "prior-vae-init"):  # weights replaced; global RNG untouched
            vae = make()
        vae.load_state_dict(built["state"])
        vae.to(self.device).eval().requires_grad_(False)
        lo, hi = task.data_range
        var = to_device(built["var"], self.device)
        return vae, var.clamp_min(VAR_FLOOR * (hi - lo) ** 2)

    def objective(self, x: torch.Tensor, z: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        """Per-sample J(x, z): -log p(o | x) + sum_j (x - Dec(z))_j^2 / (2 v_j) + ||z||^2 / 2."""
        nll = self.noise.neg_log_likelihood(observed, self.encoder(x))
        off_manifold = ((x - self.vae.decode(z)).pow(2) / (2 * self.var)).flatten(1).sum(1)
        return nll + off_manifold + 0.5 * z.pow(2).sum(1)

    def latent_objective(self, z: torch.Tensor, observed: torch.Tensor) -> torch.Tensor:
        """J on the decoded manifold, x = Dec(z): -log p(o | Dec(z)) + ||z||^2 / 2."""
        nll = self.noise.neg_log_likelihood(observed, self.encoder(self.vae.decode(z)))
        return nll + 0.5 * z.pow(2).sum(1)

    def identity_encoder(self) -> bool:
        """Whether the encoder is the identity (input-space mechanisms), where the x-step of
        the refinement has a closed form."""
        return isinstance(self.encoder, nn.Identity)

    def exact_x(self, observed: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        """argmin over x in the data range of J(x, z) for an identity encoder, with
        `mean` = Dec(z). J is then a sum of 1-d convex terms, one per pixel, so the
        box-constrained minimiser is each pixel's unconstrained minimiser clamped to the range.
        Gaussian noise (std s): f(x) = (o - x)^2 / (2 s^2) + (x - m)^2 / (2 v), minimised at
        m + v / (v + s^2) (o - m), the Wiener filter. Laplace (b): f(x) = |o - x| / b +
        (x - m)^2 / (2 v). Its subgradient vanishes at x = o when |o - m| <= v / b, else at
        m +- v / b, so the minimiser is m + clip(o - m, -v / b, v / b)."""
        lo, hi = self.data_range
        gap = observed.view_as(mean) - mean
        if self.noise.kind == "gaussian":
            x = mean + self.var / (self.var + self.noise.scale**2) * gap
        else:
            reach = self.var / self.noise.scale
            x = mean + torch.maximum(torch.minimum(gap, reach), -reach)
        return x.clamp(lo, hi)

    def reconstruct(self, release: Release) -> torch.Tensor:
        """Reconstruct the released rows; ⊥ rows get the aux mean (the harness scores them
        with it too). Restart draws come from a generator seeded afresh at each call, so a
        release has one answer whatever was reconstructed before."""
        release = release.cpu()
        kept = release.released
        out = self.guess.expand(len(release), *self.input_shape).clone()
        idx = kept.nonzero().flatten()
        if len(idx) == 0:
            return out
        observed = to_device(release.values[idx].float(), self.device)
        gen = torch.Generator().manual_seed(self.restart_seed)
        shape = (self.p.restarts, len(idx), self.vae.latent)
        starts = torch.randn(shape, generator=gen)
        starts[0] = 0.0  # the prior mode
        starts = to_device(starts, self.device)
        bs = self.p.batch_size
        for i in range(0, len(idx), bs):
            found = self.invert(observed[i : i + bs], starts[:, i : i + bs])
            out[idx[i : i + bs]] = to_cpu(found)
        return out

    def invert(self, observed: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """Both stages for one batch: `starts` (restarts, n, k) -> x (n, *input_shape)."""
        with torch.enable_grad():  # descent, even when called under no_grad
            z = self.search(observed, starts)
            if self.p.refine_steps == 0:
                return self.vae.decode(z).detach()
            return self.refine(observed, z)[0]

    def search(self, observed: torch.Tensor, starts: torch.Tensor) -> torch.Tensor:
        """Stage 1: minimise J on the manifold from every start at once. Restarts are
        stacked along the batch; Adam's updates are per coordinate, so rows do not interact.
        Keeps each sample's best restart by J and returns its z (n, k)."""
        restarts, n, k = starts.shape
        target = observed.repeat(restarts, *([1] * (observed.ndim - 1)))
        z = nn.Parameter(starts.reshape(restarts * n, k).clone())
        best_z = z.detach().clone()
        best = torch.full((restarts * n,), float("inf"), device=z.device)
        steps = self.p.steps
        opt = torch.optim.Adam([z], lr=self.p.lr)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        for _ in range(steps):
            loss = self.latent_objective(z, target)
            _keep_best(loss, best, (z, best_z))
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
            schedule.step()
        with torch.no_grad():
            _keep_best(self.latent_objective(z, target), best, (z, best_z))
        winner = best.view(restarts, n).argmin(0)  # by the objective, never by the input
        return best_z.view(restarts, n, k)[winner, torch.arange(n, device=winner.device)]

    def refine(self, observed: torch.Tensor, z0: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Stage 2: minimise J over (x, z) from stage 1's z0 for `refine_steps` steps and
        return each sample's best (x, z). J there is at most the stage-1 value
        `latent_objective(z0)`, since each sample keeps its best iterate and the first one
        is (Dec(z0), z0) or better.

        Identity encoder: block coordinate descent. Each step takes the exact x for the
        current z (`exact_x`, no worse than x = Dec(z)) and then an Adam step on z for that
        x. Any other encoder: Adam on x and z together, from (Dec(z0), z0), with x projected
        onto the data range after every step (projected gradient: J is minimised over the
        box)."""
        lo, hi = self.data_range
        exact = self.identity_encoder()
        with torch.no_grad():
            x0 = self.vae.decode(z0)
        x, z = x0.clone().requires_grad_(not exact), nn.Parameter(z0.clone())
        best_x, best_z = x0.clone(), z0.clone()
        best = torch.full((len(x0),), float("inf"), device=x0.device)
        steps = self.p.refine_steps
        groups: list[dict[str, Any]] = [{"params": [z], "lr": self.p.lr}]
        if not exact:
            groups.append({"params": [x], "lr": self.p.refine_lr * (hi - lo)})
        opt = torch.optim.Adam(groups)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
        for step in range(steps + 1):  # the last pass only scores the final iterate
            if exact:
                with torch.no_grad():
                    x.copy_(self.exact_x(observed, self.vae.decode(z)))
            loss = self.objective(x, z, observed)
            _keep_best(loss, best, (x, best_x), (z, best_z))
            if step == steps:
                break
            opt.zero_grad()
            loss.sum().backward()
            opt.step()
            schedule.step()
            with torch.no_grad():
                x.clamp_(lo, hi)
        return best_x, best_z


def _keep_best(
    loss: torch.Tensor, best: torch.Tensor, *pairs: tuple[torch.Tensor, torch.Tensor]
) -> None:
    """Where `loss` beats `best`, record it and, for each (value, best_value) pair, the
    current value rows (in place)."""
    current = loss.detach()
    improved = current < best
    best.copy_(torch.where(improved, current, best))
    for value, best_value in pairs:
        best_value[improved] = value.detach()[improved]
