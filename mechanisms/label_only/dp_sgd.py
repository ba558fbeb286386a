"""`dp-sgd`: the DP training baseline of LUCID's comparison (LUCID paper, Table 3): the same
architecture trained with DP-SGD (Abadi et al. 2016) through Opacus, its labels served as
they are. (eps, delta)-DP training implies (eps, delta)-iDP for the given dataset (Soria-Comas
et al. 2017), and label queries are post-processing of the trained network.

The noise multiplier is the smallest that Opacus's RDP accountant certifies for the target
eps at the run's sampling rate and epochs (its binary search, `make_private_with_epsilon`),
with per-sample clipping to `max_grad_norm`. eps = 0 is impossible for DP training.
Training runs on the job's device (bench.core.device); Opacus then draws its noise from that
device's global generator, seeded per network.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from bench.core.codeversion import code_digest
from bench.core.device import CPU, forked_rng, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import seeded_init
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.label_only import tuning
from mechanisms.label_only.base import LabelOnlyMechanism
from mechanisms.label_only.tuning import tuning_params

LR = 0.1  # LUCID's SGD learning rate, so the two rows differ only by the DP training
BATCH = 1024


def train_dp_sgd(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    eps: float,
    delta: float,
    epochs: int,
    max_grad_norm: float,
    seed: int,
    lr: float = LR,
    device: torch.device = CPU,
) -> tuple[dict[str, torch.Tensor], float]:
    """Train `model` with DP-SGD for (eps, delta) on `device` (batches are drawn on the CPU
    and moved); returns its weights and the noise multiplier the accountant chose."""
    from opacus import PrivacyEngine
    from torch.utils.data import DataLoader, TensorDataset

    loader = DataLoader(
        TensorDataset(x, y),
        batch_size=min(BATCH, len(x)),
        generator=torch.Generator().manual_seed(seed),
    )
    model = model.to(device)
    optimiser = torch.optim.SGD(model.parameters(), lr=lr)
    engine = PrivacyEngine(accountant="rdp")
    with forked_rng():
        torch.manual_seed(seed)  # Opacus draws its noise from the global generator
        try:
            private, optimiser, loader = engine.make_private_with_epsilon(
                module=model,
                optimizer=optimiser,
                data_loader=loader,
                target_epsilon=eps,
                target_delta=delta,
                epochs=epochs,
                max_grad_norm=max_grad_norm,
            )
        except ValueError as exc:  # the accountant's noise search found no multiplier
            raise ConfigError(
                f"mechanism dp-sgd: eps={eps:g} at delta={delta:g} is out of reach for "
                f"{epochs} epochs at sampling rate {min(BATCH, len(x)) / len(x):.3g} ({exc}); "
                "raise eps or lower the task's train_epochs"
            ) from exc
        private.train()
        for _ in range(epochs):
            for xb, yb in loader:
                if len(xb) == 0:  # Poisson sampling can draw an empty batch
                    continue
                xb, yb = to_device(xb, device), to_device(yb, device)
                optimiser.zero_grad()
                F.cross_entropy(private(xb), yb).backward()
                optimiser.step()
    weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return weights, float(optimiser.noise_multiplier)


@register_mechanism
class DPSGD(LabelOnlyMechanism):
    """Labels of a network trained with DP-SGD at (eps, delta); no noise at query time."""

    name = "dp-sgd"
    paper = "https://doi.org/10.1145/2976749.2978318"

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0
        delta: float = 1e-5
        max_grad_norm: float = 1.0
        tune: bool = False

    p: Params

    def check_params(self) -> None:
        p = self.p
        for key, value in (("eps", p.eps), ("max_grad_norm", p.max_grad_norm)):
            if value <= 0:
                raise ConfigError(f"mechanism dp-sgd: {key} must be a positive number")
        if not 0 < p.delta < 1:
            raise ConfigError("mechanism dp-sgd: delta must lie in (0, 1)")

    def _train(self, data: DataSplit, lr: float, epochs: int, seed: int) -> nn.Module:
        """A fresh network trained with DP-SGD at this row's (eps, delta) on `data`."""
        with seeded_init(seed, "dp-sgd-init"):
            model = self._task.model()
        weights, sigma = train_dp_sgd(
            model,
            data.x,
            data.y,
            eps=self.p.eps,
            delta=self.p.delta,
            epochs=epochs,
            max_grad_norm=self.p.max_grad_norm,
            seed=seed,
            lr=lr,
            device=self.device,
        )
        self._sigma = sigma
        fresh = self._task.model()  # without the hooks Opacus left on `model`
        fresh.load_state_dict(weights)
        return fresh.to(self.device).eval()

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.device = ctx.device
        self.num_classes = task.num_classes
        self.memory = {}
        self._task = task
        train = task.splits().train
        code = code_digest(__name__, tuning.__name__)  # and the project code below them
        fixed = (LR, int(task.config().get("train_epochs", 30)))
        schedule = self.training_schedule(task, ctx, "dp-sgd", code, fixed, self._train)
        lr, epochs = schedule
        recipe = self.network_recipe(task, ctx, "dp-sgd-network", code, schedule)

        def build() -> dict[str, torch.Tensor]:
            model = self._train(train, lr, epochs, ctx.seed)
            weights = {k: v.detach().clone() for k, v in model.state_dict().items()}
            return {**weights, "noise_multiplier": torch.tensor(self._sigma)}

        state = ctx.cache.get_or_build(recipe, build)
        self.noise_multiplier = float(state["noise_multiplier"])
        model = task.model()
        model.load_state_dict({k: v for k, v in state.items() if k != "noise_multiplier"})
        self.model = model.to(self.device).eval()

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(x), dtype=torch.bool)

    def guarantee(self) -> Guarantee:
        p = self.p
        params = {"eps": p.eps, "delta": p.delta, **tuning_params(self.tuning)}
        return Guarantee("dp", params, "training-set/add-remove")
