"""`alibi`: the label-DP training baseline of LUCID's comparison (LUCID paper, Table 3): ALIBI
(Malek Esmaeili et al. 2021, "Antipodes of Label Differential Privacy: PATE and ALIBI"),
the same architecture trained on randomised soft labels, its labels served as they are.

Each training label's one-hot vector gets i.i.d. Laplace noise of scale 2 / eps per
coordinate: replacing one label moves its one-hot vector by 2 in l1, so the noisy labels are
eps-DP with respect to the training labels (replace-one, delta 0). The network then trains
on the Bayesian posterior of the true label given the noisy vector, the soft target
P[y = k | noisy] ∝ prior_k · exp(-eps/2 · ||noisy - e_k||_1), with soft-label
cross-entropy; everything after the noise is post-processing. `prior` is uniform or the
class frequencies estimated from the noisy vectors (never from the true labels), and
`refine` rounds replace the prior by the trained network's predicted probabilities and
retrain (ALIBI's iterative refinement; still post-processing of the noisy labels).

Label DP protects labels only: the features of a training record are used as they are, so
unlike dp-sgd this is not DP over whole records (docs/lucid.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from bench.core.codeversion import code_digest
from bench.core.device import CPU, module_device, to_cpu, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import derive_seed, seeded_init
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.label_only import tuning
from mechanisms.label_only.base import LabelOnlyMechanism
from mechanisms.label_only.dp_sgd import BATCH, LR
from mechanisms.label_only.tuning import tuning_params

Prior = Literal["uniform", "frequency"]
MIN_FREQUENCY = 1e-3  # floor of an estimated class frequency


def laplace_scale(eps: float) -> float:
    """Per-coordinate Laplace scale for eps-label-DP: the replace-one l1 sensitivity 2 / eps."""
    return 2.0 / eps


def noisy_labels(
    y: torch.Tensor, num_classes: int, eps: float, generator: torch.Generator
) -> torch.Tensor:
    """(n, k) one-hot labels plus i.i.d. Laplace(2 / eps), drawn as the difference of two
    exponentials (-log of a uniform in (0, 1], never infinite)."""
    one_hot = F.one_hot(y, num_classes).double()
    shape = one_hot.shape
    e1 = -torch.log1p(-torch.rand(shape, generator=generator, dtype=torch.float64))
    e2 = -torch.log1p(-torch.rand(shape, generator=generator, dtype=torch.float64))
    return one_hot + laplace_scale(eps) * (e1 - e2)


def label_posterior(noisy: torch.Tensor, eps: float, prior: torch.Tensor) -> torch.Tensor:
    """(n, k) posterior of the true label: prior_k · exp(-eps/2 · ||noisy - e_k||_1),
    normalised; `prior` is (k,) or per record (n, k)."""
    k = noisy.shape[1]
    eye = torch.eye(k, dtype=noisy.dtype)
    distance = (noisy.unsqueeze(1) - eye.unsqueeze(0)).abs().sum(-1)  # (n, k)
    log_prior = torch.log(prior.to(noisy.dtype).clamp_min(torch.finfo(noisy.dtype).tiny))
    return torch.softmax(log_prior - eps / 2 * distance, dim=1)


def noisy_frequencies(noisy: torch.Tensor, eps: float, iterations: int = 100) -> torch.Tensor:
    """(k,) class frequencies estimated from the noisy vectors alone (post-processing): the
    maximum-likelihood mixture weights of the Laplace likelihoods, by EM from uniform (each
    step: the mean posterior under the current estimate); floored at MIN_FREQUENCY."""
    k = noisy.shape[1]
    freq = torch.full((k,), 1.0 / k, dtype=noisy.dtype)
    for _ in range(iterations):
        freq = label_posterior(noisy, eps, freq).mean(0).clamp_min(MIN_FREQUENCY)
        freq = freq / freq.sum()
    return freq


def train_soft(
    model: nn.Module,
    x: torch.Tensor,
    targets: torch.Tensor,
    *,
    epochs: int,
    seed: int,
    lr: float = LR,
) -> dict[str, torch.Tensor]:
    """Train `model` in place with SGD (LUCID's batch; lr LUCID's unless tuned) on
    soft-label cross-entropy, on the model's device; returns its weights."""
    generator = torch.Generator().manual_seed(derive_seed(seed, "alibi-batches"))
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    device = module_device(model)
    x, targets = to_device(x, device), to_device(targets.float(), device)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(x), generator=generator).split(BATCH):
            idx = to_device(batch, device)
            optimiser.zero_grad()
            F.cross_entropy(model(x[idx]), targets[idx]).backward()
            optimiser.step()
    model.eval()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def train_alibi(
    task: Task,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    prior: str,
    refine: int,
    seed: int,
    lr: float = LR,
    epochs: int | None = None,
    device: torch.device = CPU,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """ALIBI's fit: noisy labels, posterior soft targets, training, `refine` rounds of
    model-prior refinement (each retrained from the same initialisation). Returns the
    final weights and the final soft targets. `epochs` defaults to the task's. The labels
    and posteriors are computed on the CPU (float64), the network trained on `device`."""
    epochs = epochs_of(task) if epochs is None else epochs
    k = task.num_classes
    noise = torch.Generator().manual_seed(derive_seed(seed, "alibi-label-noise"))
    noisy = noisy_labels(y, k, eps, noise)
    base = noisy_frequencies(noisy, eps) if prior == "frequency" else torch.full((k,), 1.0 / k)
    targets = label_posterior(noisy, eps, base)
    with seeded_init(seed, "alibi-init"):
        model = task.model().to(device)  # initialised on the CPU, then moved
    init = {name: v.clone() for name, v in model.state_dict().items()}
    weights = train_soft(model, x, targets, epochs=epochs, seed=seed, lr=lr)
    for _ in range(refine):
        with torch.no_grad():
            logits = to_cpu(model(to_device(x, device)))
            model_prior = torch.softmax(logits.double(), dim=1)
        targets = label_posterior(noisy, eps, model_prior)
        model.load_state_dict(init)
        weights = train_soft(model, x, targets, epochs=epochs, seed=seed, lr=lr)
    return weights, targets


def epochs_of(task: Task) -> int:
    """The task's training epochs (the same as the leave-one-out networks and dp-sgd)."""
    return int(task.config().get("train_epochs", 30))


@register_mechanism
class Alibi(LabelOnlyMechanism):
    """Labels of a network trained with ALIBI's randomised soft labels at eps (label DP); no
    noise at query time."""

    name = "alibi"
    paper = "https://arxiv.org/abs/2106.03408"

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0
        prior: Prior = "uniform"
        refine: int = 0  # rounds of refining the prior from the soft labels
        tune: bool = False

    p: Params

    def check_params(self) -> None:
        if self.p.eps <= 0:
            raise ConfigError("mechanism alibi: eps must be a positive number")

    def _train(
        self, task: Task, data: DataSplit, lr: float, epochs: int, seed: int
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """ALIBI at this row's eps on `data`: (weights, soft targets)."""
        return train_alibi(
            task,
            data.x,
            data.y,
            eps=self.p.eps,
            prior=self.p.prior,
            refine=self.p.refine,
            seed=seed,
            lr=lr,
            epochs=epochs,
            device=self.device,
        )

    def _proxy_model(
        self, task: Task, data: DataSplit, lr: float, epochs: int, seed: int
    ) -> nn.Module:
        model = task.model()
        model.load_state_dict(self._train(task, data, lr, epochs, seed)[0])
        return model.to(self.device).eval()

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.device = ctx.device
        self.num_classes = task.num_classes
        self.memory = {}
        train = task.splits().train
        code = code_digest(__name__, "mechanisms.label_only.dp_sgd", tuning.__name__)
        schedule = self.training_schedule(
            task,
            ctx,
            "alibi",
            code,
            (LR, epochs_of(task)),
            lambda data, lr, epochs, seed: self._proxy_model(task, data, lr, epochs, seed),
        )
        lr, epochs = schedule
        recipe = self.network_recipe(task, ctx, "alibi-network", code, schedule)

        def build() -> dict[str, torch.Tensor]:
            weights, targets = self._train(task, train, lr, epochs, ctx.seed)
            return {**weights, "soft_targets": targets}

        state = dict(ctx.cache.get_or_build(recipe, build))
        self.soft_targets = state.pop("soft_targets")
        model = task.model()
        model.load_state_dict(state)
        self.model = model.to(self.device).eval()

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(x), dtype=torch.bool)

    def guarantee(self) -> Guarantee:
        params = {"eps": self.p.eps, "delta": 0.0, **tuning_params(self.tuning)}
        return Guarantee("dp", params, "training-labels/replace-one")
