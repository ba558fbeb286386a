"""The paper's public code's training choices for the Posthoc obfuscator, as a
`TrainingRecipe` of mechanisms.posthoc.models, for the attribution study of "Posthoc privacy
guarantees for collaborative inference with modified Propose-Test-Release" (Singh et al.,
NeurIPS 2023): choices its text does not state, kept to measure how much of its Table 1 they
explain (studies/posthoc-attribution/README.md). Each is a switch whose first value is bench's.

Obfuscator training recipes (`RECIPES`): "bench", and "reference-code": obfuscator
[in, 10, out], Adam 1e-4 for f and h, f trained on samples of the VAE posterior
(z = mu + sigma * N(0, 1), where the release uses mu), the noise term as Laplace(sigma) on the
classifier's input only (f gets no noise gradient), and the contrastive term evaluated on the
embedding z instead of f's output, so that it adds nothing to f's gradient.

Server classifiers (`CLASSIFIERS`): "bench", a 64-wide one-hidden-layer ReLU MLP, and
"reference-code", the public code's Fashion-MNIST prediction model: five linear layers of
width 10 with batch norm and dropout between them, whose LeakyReLU activations were given
True as their negative slope (= 1.0), so that each activation is the identity and the model
is affine once batch norm and dropout are in evaluation mode.

Proxy adversaries for the ARL term (`ADVERSARIES`): "bench", a 128-wide one-hidden-layer
ReLU MLP with a sigmoid output, and "reference-code", the public code's convolutional decoder
(`AdversaryModelGen`): the obfuscated vector as a 1x1 map, stride-2 transposed convolutions
with batch norm and ReLU up to the image size, raw outputs (no sigmoid). For 28x28 images it
is built with three up-samplings after the first 2x2 map: the public code's setting of four
yields a 60x60 output, which its MSE against the 28x28 input cannot take, so the runnable
decoder nearest to it is used and the study's README says so.

Checkpoint rules (`CHECKPOINTS`): "last" (the networks after the last epoch) and
"reference-code", the public code's rule of keeping the epoch with the lowest
alpha * reconstruction MSE + (1 - alpha) * cross-entropy, which it read on the test split;
the study reads it on the training records, so that no choice depends on the queries.
"""

from __future__ import annotations

import copy
from typing import Literal, get_args

import torch
from torch import nn
from torch.nn import functional as F

from bench.core.device import CPU, randn, to_device
from bench.core.errors import ConfigError
from mechanisms.posthoc import models
from mechanisms.posthoc.models import NOISE_SIGMA, EpochNetworks, TrainingRecipe, laplace

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


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {what} {value!r}; choose one of {allowed}")


def classifier(in_dim: int, num_classes: int, kind: str = "bench") -> nn.Sequential:
    """The server's classifier on the (noisy) obfuscated output, of the kind CLASSIFIERS
    names (module docstring): bench's is mechanisms.posthoc.models.classifier."""
    _check(kind, CLASSIFIERS, "classifier")
    if kind == "bench":
        return models.classifier(in_dim, num_classes)
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
    _check(kind, ADVERSARIES, "adversary")
    if kind == "bench":
        return models.proxy_adversary(out_dim, image_shape)
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


class ReferenceCodeRecipe(TrainingRecipe):
    """bench's training recipe with any of the public code's choices switched in (module
    docstring); at its defaults ("bench", "last", "bench", "bench") it is bench's recipe, hook
    for hook. `z_std`: the VAE posterior's standard deviation at each training embedding,
    which the "reference-code" recipe samples around the means with (none: it trains on the
    means). `trace`, when given, receives the checkpoint criterion after each epoch, whatever
    the checkpoint rule (reading it draws nothing, so the training is unchanged)."""

    def __init__(
        self,
        recipe: str = "bench",
        checkpoint: str = "last",
        classifier: str = "bench",
        adversary: str = "bench",
        z_std: torch.Tensor | None = None,
        trace: list[float] | None = None,
    ) -> None:
        _check(recipe, RECIPES, "training recipe")
        _check(checkpoint, CHECKPOINTS, "checkpoint rule")
        _check(classifier, CLASSIFIERS, "classifier")
        _check(adversary, ADVERSARIES, "adversary")
        self.reference = recipe == "reference-code"
        self.keep_best = checkpoint == "reference-code"
        self.classifier_kind, self.adversary_kind = classifier, adversary
        self.lr = REFERENCE_LR if self.reference else TrainingRecipe.lr
        self.z_std = z_std
        self._z_std_on: torch.Tensor | None = None
        self.scores: list[float] | None = [] if self.keep_best and trace is None else trace
        self.best: tuple[float, dict[str, torch.Tensor], dict[str, torch.Tensor]] | None = None

    def hidden(self, requested: tuple[int, ...]) -> tuple[int, ...]:
        return REFERENCE_HIDDEN if self.reference else requested

    def classifier(self, in_dim: int, num_classes: int) -> nn.Module:
        return classifier(in_dim, num_classes, self.classifier_kind)

    def adversary(self, out_dim: int, image_shape: tuple[int, ...]) -> nn.Module:
        return proxy_adversary(out_dim, image_shape, self.adversary_kind)

    def batch_embeddings(
        self, zb: torch.Tensor, idx: torch.Tensor, gen: torch.Generator, device: torch.device
    ) -> torch.Tensor:
        """Posterior samples mu + sigma * N(0, 1) under the public code's recipe (given the
        posterior's sigma), else the means."""
        if not (self.reference and self.z_std is not None):
            return zb
        if self._z_std_on is None:
            self._z_std_on = to_device(self.z_std, device)
        return zb + self._z_std_on[idx] * randn(zb.shape, gen, device)

    def task_loss(
        self,
        h: nn.Module,
        out: torch.Tensor,
        yb: torch.Tensor,
        parts: frozenset[str],
        gen: torch.Generator,
        device: torch.device,
    ) -> torch.Tensor:
        """Under the public code's recipe the `n` term is Laplace(NOISE_SIGMA) noise on h's
        input only: CE on f's output plus CE on the detached noisy output."""
        if "n" in parts and self.reference:
            noisy = out.detach() + laplace(out.shape, NOISE_SIGMA, gen, device)
            return F.cross_entropy(h(out), yb) + F.cross_entropy(h(noisy), yb)
        return super().task_loss(h, out, yb, parts, gen, device)

    def contrastive(self, out: torch.Tensor, yb: torch.Tensor) -> torch.Tensor | None:
        """Under the public code's recipe the term is taken on the embedding, a constant in f:
        it adds nothing to f's gradient, so it is left out."""
        return None if self.reference else super().contrastive(out, yb)

    def end_epoch(self, nets: EpochNetworks) -> None:
        """Read the checkpoint criterion (when traced or kept by) and keep the best epoch's f
        and h under the public code's rule."""
        if self.scores is None:
            return
        score = checkpoint_loss(
            nets.f, nets.h, nets.adv, nets.z, nets.y, nets.flat, nets.parts, nets.alpha
        )
        self.scores.append(score)
        if self.keep_best and (self.best is None or score < self.best[0]):
            self.best = (
                score,
                copy.deepcopy(nets.f.state_dict()),
                copy.deepcopy(nets.h.state_dict()),
            )

    def finish(self, f: nn.Module, h: nn.Module) -> None:
        if self.best is not None:
            f.load_state_dict(self.best[1])
            h.load_state_dict(self.best[2])


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
    """mechanisms.posthoc.models.train_obfuscator by a `ReferenceCodeRecipe` of these
    switches (the study's probes and tests train this way). Returns (f, h)."""
    return models.train_obfuscator(
        z,
        x,
        y,
        num_classes,
        variant,
        epochs,
        gen,
        alpha=alpha,
        batch_size=batch_size,
        hidden=hidden,
        out_dim=out_dim,
        device=device,
        recipe=ReferenceCodeRecipe(
            recipe, checkpoint, classifier_kind, adversary_kind, z_std=z_std, trace=trace
        ),
    )
