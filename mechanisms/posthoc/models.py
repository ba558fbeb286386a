"""The Posthoc pipeline's networks: beta-VAE embedder g, ReLU obfuscator f, its training.

Embedder (supplement §D): a fully connected beta-VAE, beta = 5, Adam 1e-3, embedding 8
(MNIST / FMNIST) or 10 (faces); g(x) is the posterior mean. Obfuscator variants (paper
Table 1): `encoder` (plain), `arl` (adversarial: -alpha MSE_rec + (1 - alpha) CE,
alpha = 0.99, against a proxy decoder trained in alternation), `c` (contrastive, lambda =
1, margin 25, on the obfuscated output, with gradient), `n` (Gaussian noise sigma = 0.01
on the obfuscated output while training) and their combinations. Each network is
initialised on the CPU and trained on the device it is given (bench.core.device; default the CPU).

The training loop (`train_obfuscator`) reads its choices from a `TrainingRecipe`: bench's
(the above, as the paper's text states it) is the class itself; a study that measures other
choices (the paper's public code's, say) subclasses it and overrides its hooks (the networks,
the learning rate, the embeddings a batch trains on, the task loss, the contrastive term, what
happens after each epoch), so the loop, its order of random draws and bench's recipe stay in
one place.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
from torch import nn
from torch.nn import functional as F

from bench.core.device import CPU, module_device, rand, randn, to_device
from bench.core.errors import ConfigError

Variant = Literal["encoder", "arl", "c", "n", "arl-c", "arl-n", "c-n", "arl-c-n"]
VARIANTS: tuple[str, ...] = get_args(Variant)
BETA = 5.0
CONTRASTIVE_MARGIN = 25.0
CONTRASTIVE_LAMBDA = 1.0
NOISE_SIGMA = 0.01


def variant_parts(variant: str) -> frozenset[str]:
    """{"arl", "c", "n"} subset for a variant name; `encoder` has none."""
    if variant not in VARIANTS:
        raise ConfigError(
            f"unknown obfuscator variant {variant!r}; choose one of {', '.join(VARIANTS)}"
        )
    return frozenset() if variant == "encoder" else frozenset(variant.split("-"))


class BetaVAE(nn.Module):
    """Fully connected beta-VAE on flattened images in [0, 1] (three layers, dropout)."""

    def __init__(self, in_dim: int, latent: int, width: int = 400) -> None:
        super().__init__()
        self.in_dim, self.latent = in_dim, latent
        self.enc = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_dim, width),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(width, width // 2),
            nn.ReLU(),
            nn.Linear(width // 2, 2 * latent),
        )
        self.dec = nn.Sequential(
            nn.Linear(latent, width // 2),
            nn.ReLU(),
            nn.Linear(width // 2, width),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Linear(width, in_dim),
        )

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = self.enc(x).chunk(2, dim=1)
        return mu, logvar.clamp(-10, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """g(x): the posterior mean, the deterministic embedding."""
        return self.encode(x)[0]


def train_vae(
    x: torch.Tensor,
    latent: int,
    epochs: int,
    gen: torch.Generator,
    batch_size: int = 128,
    device: torch.device = CPU,
) -> BetaVAE:
    """beta-VAE with Bernoulli likelihood, beta = 5, Adam 1e-3 (supplement §D), on `device`."""
    vae = BetaVAE(int(x[0].numel()), latent).to(device)
    opt = torch.optim.Adam(vae.parameters(), lr=1e-3)
    flat = to_device(x.flatten(1), device)
    vae.train()
    for _ in range(epochs):
        order = to_device(torch.randperm(len(flat), generator=gen), device)
        for s in range(0, len(flat), batch_size):
            xb = flat[order[s : s + batch_size]]
            mu, logvar = vae.encode(xb)
            eps = randn(mu.shape, gen, device)
            logits = vae.dec(mu + eps * (0.5 * logvar).exp())
            rec = F.binary_cross_entropy_with_logits(logits, xb, reduction="sum") / len(xb)
            kl = -0.5 * (1 + logvar - mu**2 - logvar.exp()).sum() / len(xb)
            loss = rec + BETA * kl
            opt.zero_grad()
            loss.backward()
            opt.step()
    vae.eval()
    return vae


def obfuscator(in_dim: int, hidden: tuple[int, ...] = (8, 8), out_dim: int = 8) -> nn.Sequential:
    """A small ReLU MLP [in, *hidden, out] (paper: e.g. [8, 8, 8, 8])."""
    layers: list[nn.Module] = []
    prev = in_dim
    for h in hidden:
        layers += [nn.Linear(prev, h), nn.ReLU()]
        prev = h
    layers.append(nn.Linear(prev, out_dim))
    return nn.Sequential(*layers)


def classifier(in_dim: int, num_classes: int, width: int = 64) -> nn.Sequential:
    """The server's classifier on the (noisy) obfuscated output: a one-hidden-layer ReLU MLP."""
    return nn.Sequential(nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, num_classes))


def proxy_adversary(out_dim: int, image_shape: tuple[int, ...]) -> nn.Sequential:
    """The ARL term's proxy adversary: a 128-wide one-hidden-layer ReLU MLP from an obfuscated
    vector to a flattened image, with a sigmoid output (the images' [0, 1] scale)."""
    pixels = math.prod(image_shape)
    return nn.Sequential(nn.Linear(out_dim, 128), nn.ReLU(), nn.Linear(128, pixels), nn.Sigmoid())


def contrastive_loss(out: torch.Tensor, y: torch.Tensor, margin: float) -> torch.Tensor:
    """Pairwise contrastive loss on the obfuscated outputs of a batch (Hadsell et al. 2006):
    same label -> d^2, different -> max(0, margin - d)^2; gradients flow into f."""
    d = torch.cdist(out, out)
    same = (y[:, None] == y[None, :]).float()
    eye = torch.eye(len(y), device=out.device)
    pos = same * d**2
    neg = (1 - same) * F.relu(margin - d) ** 2
    return ((pos + neg) * (1 - eye)).sum() / max(1, len(y) * (len(y) - 1))


class TrainingRecipe:
    """bench's recipe for the obfuscator f, the server's classifier h and the ARL term's
    proxy adversary, as the paper's text states it (module docstring): f = [in, *hidden, out],
    Adam 1e-3 for f and h, f trained on the posterior means, the `n` term as Gaussian noise on
    f's output (with gradient), the contrastive term on f's output, the networks after the
    last epoch.

    Each method is a hook that `train_obfuscator` calls at a fixed point of its loop; a
    subclass that changes one choice overrides one hook and leaves the loop (and so the order
    of its random draws) alone, so its other choices stay bench's exactly."""

    lr = 1e-3  # Adam step for f and h

    def hidden(self, requested: tuple[int, ...]) -> tuple[int, ...]:
        """f's hidden widths; bench's are the caller's `hidden`."""
        return requested

    def obfuscator(self, in_dim: int, hidden: tuple[int, ...], out_dim: int) -> nn.Sequential:
        """The obfuscator f (built first, so its initialisation draws first)."""
        return obfuscator(in_dim, self.hidden(hidden), out_dim)

    def classifier(self, in_dim: int, num_classes: int) -> nn.Module:
        """The server's classifier h (built second)."""
        return classifier(in_dim, num_classes)

    def adversary(self, out_dim: int, image_shape: tuple[int, ...]) -> nn.Module:
        """The ARL term's proxy adversary (built third, also for variants without ARL, so
        that every variant draws the same initial weights for f and h)."""
        return proxy_adversary(out_dim, image_shape)

    def batch_embeddings(
        self, zb: torch.Tensor, idx: torch.Tensor, gen: torch.Generator, device: torch.device
    ) -> torch.Tensor:
        """The embeddings a batch trains f on; bench's are the posterior means `zb` (rows
        `idx` of the training embeddings), with no draw."""
        return zb

    def task_loss(
        self,
        h: nn.Module,
        out: torch.Tensor,
        yb: torch.Tensor,
        parts: frozenset[str],
        gen: torch.Generator,
        device: torch.device,
    ) -> torch.Tensor:
        """h's cross-entropy on f's output `out`; with the `n` part, on `out` plus Gaussian
        noise of sigma NOISE_SIGMA, whose gradient reaches f."""
        if "n" in parts:
            return F.cross_entropy(h(out + NOISE_SIGMA * randn(out.shape, gen, device)), yb)
        return F.cross_entropy(h(out), yb)

    def contrastive(self, out: torch.Tensor, yb: torch.Tensor) -> torch.Tensor | None:
        """The `c` part's term, on f's output with gradient; None adds nothing."""
        return CONTRASTIVE_LAMBDA * contrastive_loss(out, yb, CONTRASTIVE_MARGIN)

    def end_epoch(self, nets: EpochNetworks) -> None:
        """Called after each epoch with the networks and the training records; bench reads
        nothing there."""

    def finish(self, f: nn.Module, h: nn.Module) -> None:
        """Called once after the last epoch, before f and h go to evaluation mode; bench keeps
        the last epoch's networks."""


class EpochNetworks:
    """What `TrainingRecipe.end_epoch` sees: the three networks, the training records on the
    training device (embeddings z, labels y, flattened images flat), the variant's parts and
    the ARL weight."""

    def __init__(
        self,
        f: nn.Module,
        h: nn.Module,
        adv: nn.Module,
        records: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
        parts: frozenset[str],
        alpha: float,
    ) -> None:
        self.f, self.h, self.adv = f, h, adv
        self.z, self.y, self.flat = records
        self.parts, self.alpha = parts, alpha


BENCH_RECIPE = TrainingRecipe()


def train_obfuscator(
    z: torch.Tensor,
    x: torch.Tensor,
    y: torch.Tensor,
    num_classes: int,
    variant: str,
    epochs: int,
    gen: torch.Generator,
    alpha: float = 0.99,
    batch_size: int = 128,
    hidden: tuple[int, ...] = (8, 8),
    out_dim: int = 8,
    device: torch.device = CPU,
    recipe: TrainingRecipe = BENCH_RECIPE,
) -> tuple[nn.Sequential, nn.Sequential]:
    """Train obfuscator f and classifier h on embeddings z (labels y; images x for the ARL
    proxy adversary) on `device`, by `recipe` (bench's by default). Returns (f, h). Variants
    per paper Table 1: the ARL term -alpha MSE_rec + (1 - alpha) CE against a proxy adversary
    trained in alternation on the detached representation."""
    parts = variant_parts(variant)
    if not 0 <= alpha < 1:
        raise ConfigError(f"ARL weight alpha must lie in [0, 1), got {alpha}")
    f = recipe.obfuscator(z.shape[1], hidden, out_dim).to(device)
    h = recipe.classifier(out_dim, num_classes).to(device)
    adv = recipe.adversary(out_dim, tuple(x.shape[1:])).to(device)
    opt = torch.optim.Adam([*f.parameters(), *h.parameters()], lr=recipe.lr)
    opt_adv = torch.optim.Adam(adv.parameters(), lr=1e-3)
    z, y, flat = (to_device(t, device) for t in (z, y, x.flatten(1)))
    for _ in range(epochs):
        order = to_device(torch.randperm(len(z), generator=gen), device)
        for s in range(0, len(z), batch_size):
            idx = order[s : s + batch_size]
            yb, xb = y[idx], flat[idx]
            zb = recipe.batch_embeddings(z[idx], idx, gen, device)
            out = f(zb)
            loss = ce = recipe.task_loss(h, out, yb, parts, gen, device)
            if "arl" in parts:
                rec = F.mse_loss(adv(out), xb)
                loss = (1 - alpha) * ce - alpha * rec
            if "c" in parts and (term := recipe.contrastive(out, yb)) is not None:
                loss = loss + term
            opt.zero_grad()
            loss.backward()
            opt.step()
            if "arl" in parts:  # the proxy adversary's step, on the detached representation
                rec = F.mse_loss(adv(f(zb).detach()), xb)
                opt_adv.zero_grad()
                rec.backward()
                opt_adv.step()
        recipe.end_epoch(EpochNetworks(f, h, adv, (z, y, flat), parts, alpha))
    recipe.finish(f, h)
    f.eval()
    h.eval()
    return f, h


def laplace(
    shape: torch.Size | tuple[int, ...], scale: float, gen: torch.Generator, device: torch.device
) -> torch.Tensor:
    """Laplace(0, scale) noise by inverse CDF from `gen` (u kept off the +-1/2 poles)."""
    u = rand(shape, gen, device) - 0.5
    return -scale * torch.sign(u) * torch.log1p(-2 * u.abs().clamp(max=0.4999999))


def finetune_classifier(
    h: nn.Module,
    out: torch.Tensor,
    y: torch.Tensor,
    noise_scale: float,
    epochs: int,
    gen: torch.Generator,
    batch_size: int = 128,
) -> nn.Module:
    """Noise-aware fine-tuning of the server's classifier on f(g(x)) + Lap(noise_scale):
    post-processing of the release, so it costs no privacy. Runs on h's device."""
    if not (noise_scale > 0 and math.isfinite(noise_scale)):
        return h
    opt = torch.optim.Adam(h.parameters(), lr=1e-3)
    device = module_device(h)
    out, y = to_device(out, device), to_device(y, device)
    h.train()
    for _ in range(epochs):
        order = to_device(torch.randperm(len(out), generator=gen), device)
        for s in range(0, len(out), batch_size):
            idx = order[s : s + batch_size]
            noise = laplace(out[idx].shape, noise_scale, gen, device)
            loss = F.cross_entropy(h(out[idx] + noise), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    h.eval()
    return h
