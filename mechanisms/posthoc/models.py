"""The Posthoc pipeline's networks: beta-VAE embedder g, ReLU obfuscator f, its training.

Embedder (supplement §D): a fully connected beta-VAE, beta = 5, Adam 1e-3, embedding 8
(MNIST / FMNIST) or 10 (faces); g(x) is the posterior mean. Obfuscator variants (paper
Table 1): `encoder` (plain), `arl` (adversarial: -alpha MSE_rec + (1 - alpha) CE,
alpha = 0.99, against a proxy decoder trained in alternation), `c` (contrastive, lambda =
1, margin 25, on the obfuscated output, with gradient), `n` (Gaussian noise sigma = 0.01
on the obfuscated output while training) and their combinations. Each network is
initialised on the CPU and trained on the device it is given (bench.core.device; default the CPU).

Two obfuscator training recipes (`RECIPES`): "bench" (the above, as the paper's text states
it) and "reference-code", the choices of the paper's public code that its text does not
state, kept to measure how much of the paper's Table 1 they explain (docs/posthoc.md):
obfuscator [in, 10, out], Adam 1e-4 for f and h, f trained on samples of the VAE posterior
(z = mu + sigma * N(0, 1), where the release uses mu), the noise term as Laplace(sigma) on the
classifier's input only (f gets no noise gradient), and the contrastive term evaluated on
the embedding z instead of f's output, so that it adds nothing to f's gradient.

Two server classifiers (`CLASSIFIERS`): "bench", a 64-wide one-hidden-layer ReLU MLP, and
"reference-code", the public code's Fashion-MNIST prediction model: five linear layers of
width 10 with batch norm and dropout between them, whose LeakyReLU activations were given
True as their negative slope (= 1.0), so that each activation is the identity and the model
is affine once batch norm and dropout are in evaluation mode.

Two proxy adversaries for the ARL term (`ADVERSARIES`): "bench", a 128-wide one-hidden-layer
ReLU MLP with a sigmoid output, and "reference-code", the public code's convolutional decoder
(`AdversaryModelGen`): the obfuscated vector as a 1x1 map, stride-2 transposed convolutions
with batch norm and ReLU up to the image size, raw outputs (no sigmoid). For 28x28 images it
is built with three up-samplings after the first 2x2 map: the public code's setting of four
yields a 60x60 output, which its MSE against the 28x28 input cannot take, so the runnable
decoder nearest to it is used and the docs say so.

Two checkpoint rules (`CHECKPOINTS`): "last" (the networks after the last epoch) and
"reference-code", the public code's rule of keeping the epoch with the lowest
alpha * reconstruction MSE + (1 - alpha) * cross-entropy, which it read on the test split;
bench reads it on the training records, so that no choice depends on the queries.
"""

from __future__ import annotations

import copy
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
Recipe = Literal["bench", "reference-code"]
RECIPES: tuple[str, ...] = get_args(Recipe)
REFERENCE_HIDDEN = (10,)  # the public code's obfuscator [in, 10, out]
REFERENCE_LR = 1e-4  # its Adam step for the obfuscator and the classifier
Checkpoint = Literal["last", "reference-code"]
CHECKPOINTS: tuple[str, ...] = get_args(Checkpoint)
Classifier = Literal["bench", "reference-code"]
CLASSIFIERS: tuple[str, ...] = get_args(Classifier)
# The public code's Fashion-MNIST prediction model: hidden widths and dropout rates per block.
REFERENCE_CLASSIFIER = ((10, 0.2), (10, 0.2), (10, 0.1), (10, 0.1))
Adversary = Literal["bench", "reference-code"]
ADVERSARIES: tuple[str, ...] = get_args(Adversary)
DECODER_WIDTH = 32  # the public code's decoder: channels of its up-sampling stages (ngf)


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


def classifier(
    in_dim: int, num_classes: int, width: int = 64, kind: str = "bench"
) -> nn.Sequential:
    """The server's classifier on the (noisy) obfuscated output, of the kind CLASSIFIERS
    names (module docstring)."""
    if kind not in CLASSIFIERS:
        raise ConfigError(f"unknown classifier {kind!r}; choose one of {CLASSIFIERS}")
    if kind == "bench":
        return nn.Sequential(nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, num_classes))
    layers: list[nn.Module] = []
    prev = in_dim
    for hidden, rate in REFERENCE_CLASSIFIER:
        # negative slope 1.0: the public code passed True there, so the activation is identity
        layers += [
            nn.Linear(prev, hidden),
            nn.BatchNorm1d(hidden),
            nn.LeakyReLU(1.0),
            nn.Dropout(rate),
        ]
        prev = hidden
    layers.append(nn.Linear(prev, num_classes))
    return nn.Sequential(*layers)


def proxy_adversary(out_dim: int, image_shape: tuple[int, ...], kind: str = "bench") -> nn.Module:
    """The ARL term's proxy adversary, of the kind ADVERSARIES names (module docstring): it maps
    an obfuscated vector to a flattened image with values on the images' scale."""
    if kind not in ADVERSARIES:
        raise ConfigError(f"unknown adversary {kind!r}; choose one of {ADVERSARIES}")
    pixels = math.prod(image_shape)
    if kind == "bench":
        return nn.Sequential(
            nn.Linear(out_dim, 128), nn.ReLU(), nn.Linear(128, pixels), nn.Sigmoid()
        )
    return nn.Sequential(_reference_decoder(out_dim, tuple(image_shape)), nn.Flatten())


def _up(channels_in: int, channels_out: int, *, bias: bool = False) -> nn.ConvTranspose2d:
    """A stride-2 transposed 3x3 convolution that doubles the map's side."""
    return nn.ConvTranspose2d(
        channels_in, channels_out, 3, stride=2, padding=1, output_padding=1, bias=bias
    )


def _reference_decoder(out_dim: int, image_shape: tuple[int, ...]) -> nn.Sequential:
    """The public code's decoder for (1, 28, 28) (MNIST, Fashion-MNIST) and (3, 32, 32) (its
    UTKFace) images: 1x1 -> 2x2 -> ... by transposed convolutions, batch norm and ReLU."""
    width = DECODER_WIDTH
    if image_shape == (1, 28, 28):  # 2 -> 4 -> 8 -> 16, a valid 3x3 to 14, then up to 28
        layers: list[nn.Module] = [
            nn.Unflatten(1, (out_dim, 1, 1)),
            _up(out_dim, out_dim),
            nn.Conv2d(out_dim, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(),
        ]
        for _ in range(3):
            layers += [_up(width, width), nn.BatchNorm2d(width), nn.ReLU()]
        layers += [nn.Conv2d(width, width // 4, 3), _up(width // 4, 1)]
        return nn.Sequential(*layers)
    if image_shape == (3, 32, 32):  # 1 -> 2 -> 4 -> 8 -> 16 -> 32, then a 3x3 convolution
        layers = [nn.Unflatten(1, (out_dim, 1, 1))]
        for c_in, c_out in ((out_dim, 64), (64, 32), (32, 16), (16, 16), (16, 3)):
            layers += [_up(c_in, c_out), nn.BatchNorm2d(c_out), nn.ReLU()]
        layers.append(nn.Conv2d(3, 3, 3, padding=1))
        return nn.Sequential(*layers)
    raise ConfigError(
        f"the reference-code adversary is defined for 1x28x28 and 3x32x32 images, "
        f"not {'x'.join(map(str, image_shape))}"
    )


def contrastive_loss(out: torch.Tensor, y: torch.Tensor, margin: float) -> torch.Tensor:
    """Pairwise contrastive loss on the obfuscated outputs of a batch (Hadsell et al. 2006):
    same label -> d^2, different -> max(0, margin - d)^2; gradients flow into f."""
    d = torch.cdist(out, out)
    same = (y[:, None] == y[None, :]).float()
    eye = torch.eye(len(y), device=out.device)
    pos = same * d**2
    neg = (1 - same) * F.relu(margin - d) ** 2
    return ((pos + neg) * (1 - eye)).sum() / max(1, len(y) * (len(y) - 1))


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
    recipe: str = "bench",
    z_std: torch.Tensor | None = None,
    checkpoint: str = "last",
    trace: list[float] | None = None,
    classifier_kind: str = "bench",
    adversary_kind: str = "bench",
) -> tuple[nn.Sequential, nn.Sequential]:
    """Train obfuscator f and classifier h on embeddings z (labels y; images x for the ARL
    proxy decoder) on `device`. Returns (f, h). Variants per paper Table 1, `recipe` per
    RECIPES (module docstring; "reference-code" replaces `hidden` and, given the posterior
    standard deviations `z_std`, trains on posterior samples around `z`), `checkpoint` per
    CHECKPOINTS, h's architecture per CLASSIFIERS (`classifier_kind`), the ARL proxy
    adversary's per ADVERSARIES (`adversary_kind`); `trace`, when given, receives the
    checkpoint criterion after each epoch."""
    parts = variant_parts(variant)
    if not 0 <= alpha < 1:
        raise ConfigError(f"ARL weight alpha must lie in [0, 1), got {alpha}")
    if recipe not in RECIPES:
        raise ConfigError(f"unknown training recipe {recipe!r}; choose one of {RECIPES}")
    if checkpoint not in CHECKPOINTS:
        raise ConfigError(f"unknown checkpoint rule {checkpoint!r}; choose one of {CHECKPOINTS}")
    scores = [] if trace is None else trace
    best: tuple[float, dict[str, torch.Tensor], dict[str, torch.Tensor]] | None = None
    reference = recipe == "reference-code"
    f = obfuscator(z.shape[1], REFERENCE_HIDDEN if reference else hidden, out_dim).to(device)
    h = classifier(out_dim, num_classes, kind=classifier_kind).to(device)
    adv = proxy_adversary(out_dim, tuple(x.shape[1:]), adversary_kind).to(device)
    lr = REFERENCE_LR if reference else 1e-3
    opt = torch.optim.Adam([*f.parameters(), *h.parameters()], lr=lr)
    opt_adv = torch.optim.Adam(adv.parameters(), lr=1e-3)
    z, y, flat = (to_device(t, device) for t in (z, y, x.flatten(1)))
    if z_std is not None:
        z_std = to_device(z_std, device)
    for _ in range(epochs):
        order = to_device(torch.randperm(len(z), generator=gen), device)
        for s in range(0, len(z), batch_size):
            idx = order[s : s + batch_size]
            zb, yb, xb = z[idx], y[idx], flat[idx]
            if reference and z_std is not None:
                zb = zb + z_std[idx] * randn(zb.shape, gen, device)
            out = f(zb)
            if "n" in parts and reference:  # noise on h's input only, no gradient into f
                noisy = out.detach() + laplace(out.shape, NOISE_SIGMA, gen, device)
                ce = F.cross_entropy(h(out), yb) + F.cross_entropy(h(noisy), yb)
            elif "n" in parts:
                noisy = out + NOISE_SIGMA * randn(out.shape, gen, device)
                ce = F.cross_entropy(h(noisy), yb)
            else:
                ce = F.cross_entropy(h(out), yb)
            loss = ce
            if "arl" in parts:
                rec = F.mse_loss(adv(out), xb)
                loss = (1 - alpha) * ce - alpha * rec
            if "c" in parts and not reference:  # on the embedding it is constant in f
                loss = loss + CONTRASTIVE_LAMBDA * contrastive_loss(out, yb, CONTRASTIVE_MARGIN)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if "arl" in parts:  # the proxy adversary's step, on the detached representation
                rec = F.mse_loss(adv(f(zb).detach()), xb)
                opt_adv.zero_grad()
                rec.backward()
                opt_adv.step()
        if checkpoint == "reference-code" or trace is not None:
            scores.append(checkpoint_loss(f, h, adv, z, y, flat, parts, alpha))
            if checkpoint == "reference-code" and (best is None or scores[-1] < best[0]):
                best = (scores[-1], copy.deepcopy(f.state_dict()), copy.deepcopy(h.state_dict()))
    if best is not None:
        f.load_state_dict(best[1])
        h.load_state_dict(best[2])
    f.eval()
    h.eval()
    return f, h


@torch.no_grad()
def checkpoint_loss(
    f: nn.Module,
    h: nn.Module,
    adv: nn.Module,
    z: torch.Tensor,
    y: torch.Tensor,
    flat: torch.Tensor,
    parts: frozenset[str],
    alpha: float,
) -> float:
    """The public code's checkpoint criterion on (z, y, flat): alpha * the proxy decoder's
    reconstruction MSE + (1 - alpha) * cross-entropy for the ARL variants, cross-entropy alone
    for the others (they train no decoder). It reads the embeddings' means, so it draws no
    randomness and leaves the training itself unchanged (h and the adversary are read in
    evaluation mode, so batch norm and dropout, where they have them, neither draw nor move
    their statistics)."""
    modes = h.training, adv.training
    h.eval()
    adv.eval()
    out = f(z)
    ce = F.cross_entropy(h(out), y).item()
    rec = F.mse_loss(adv(out), flat).item() if "arl" in parts else 0.0
    h.train(modes[0])
    adv.train(modes[1])
    if "arl" not in parts:
        return ce
    return alpha * rec + (1 - alpha) * ce


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
