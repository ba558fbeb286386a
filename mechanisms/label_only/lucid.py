"""LUCID (2025 paper): iDP label-only access from the iDP decision bounds, and the baselines
that share its networks.

All label-only mechanisms here serve the same network N: the first of the stacked
leave-one-out networks (mechanisms/label_only/leave_one_out.py; SGD lr 0.1, batch 1024 as in the
paper, the task's `train_epochs`), so their accuracies differ only by the noise.
- `lucid`: noise where N's confidence <= DB of its predicted class (Theorem 6.1).
- `naive-idp`: noise where some leave-one-out network disagrees with N.
bound_validity (on lucid's utility rows) probes inputs for a leave-one-out disagreement
that the bound would have let through unnoised; 1.0 means none was found.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from bench.certify import milp
from bench.certify.idp import bound as idp_bound
from bench.certify.idp import diff as idp_diff
from bench.certify.idp.bound import decision_bound, dense_layers
from bench.certify.idp.diff import differential_bound
from bench.core.codeversion import code_digest
from bench.core.device import to_cpu, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import derive_seed
from bench.metrics.stats import summarize
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.label_only import leave_one_out as loo_training
from mechanisms.label_only import tuning
from mechanisms.label_only.base import (
    LabelOnlyMechanism,
    canonical_records,
    confidence,
    one_hot_groups,
)
from mechanisms.label_only.leave_one_out import (
    LooRecipe,
    StackMember,
    leave_one_out,
    stacked_logits,
)
from mechanisms.label_only.tuning import Choice, choose, tuning_params

# The paper's Table 4 ablation, and `diff`: per-network differential bounds refined best
# first (bench/certify/idp/diff.py), the tightest and the one the suites use.
# The iDP decision bound's variants (bench.certify.idp.bound.VARIANTS) and "diff", the
# differential bound (bench.certify.idp.diff).
LucidVariant = Literal["naive", "H", "HM", "HMRiS", "HMB", "full", "diff"]
PROBE_UNIFORM = 2000
PROBE_SEARCH_STARTS = 64
PROBE_SEARCH_STEPS = 50


def _code_digest(*modules: Any) -> str:
    """Code version of `modules` and of the project code below them (code_digest)."""
    return code_digest(*(m.__name__ for m in modules))


def loo_recipe(task: Task, ctx: FitContext, tune: bool) -> tuple[LooRecipe, Choice | None]:
    """The training recipe of N and its leave-one-out networks: the paper's (SGD lr 0.1, the
    task's epochs), or with `tune` the lr and epochs chosen on public aux data
    (mechanisms/label_only/tuning.py; cached per task, data and seed)."""
    epochs = int(task.config().get("train_epochs", 30))
    if not tune:
        return LooRecipe(epochs=epochs, seed=ctx.seed), None
    train = task.splits().train

    def fit_proxy(proxy: DataSplit, lr: float, e: int) -> nn.Module:
        recipe = LooRecipe(lr=lr, epochs=e, seed=derive_seed(ctx.seed, "tuning"))
        model = loo_training.train_sequential(task.model(), proxy, -1, recipe, ctx.device)
        return model.eval()

    key = {
        "artifact": "label-only-tuning",
        "method": "sgd",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "seed": ctx.seed,
        "code": _code_digest(loo_training, tuning),
    }
    choice = Choice(
        **ctx.cache.get_or_build(key, lambda: vars(choose(task, len(train), fit_proxy)))
    )
    return LooRecipe(lr=choice.lr, epochs=choice.epochs, seed=ctx.seed), choice


def loo_networks(
    task: Task, ctx: FitContext, progress: bool = False, recipe: LooRecipe | None = None
) -> dict[str, torch.Tensor]:
    """N and its n leave-one-out networks, stacked (cached per task, data, recipe and
    seed; trained on the job's device, handed back on the CPU); the paper's recipe unless one
    is given."""
    if recipe is None:
        recipe = LooRecipe(epochs=int(task.config().get("train_epochs", 30)), seed=ctx.seed)
    key = {
        "artifact": "leave-one-out-networks",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "recipe": vars(recipe),
        "code": _code_digest(loo_training),  # retrain when the training code changes
    }
    train = task.splits().train
    return ctx.cache.get_or_build(
        key,
        lambda: leave_one_out(task.model(), train, recipe, progress=progress, device=ctx.device),
    )


class LeaveOneOutAccess(LabelOnlyMechanism):
    """Label-only access to N, the first of the stacked leave-one-out networks, answering
    each query as its canonical record (the domain LUCID's bound covers). With `tune`, N and
    every N_i train with the lr and epochs chosen on public data (tuning.py)."""

    answers_records = True

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        if tuple(getattr(task, "data_range", (0.0, 1.0))) != (0.0, 1.0):
            raise ConfigError(
                f"mechanism {self.name}: needs features encoded in [0, 1] (the domain of the "
                f"iDP bound); task {task.name} has range {task.data_range}"
            )
        self.num_classes = task.num_classes
        self.memory = {}
        self.groups = one_hot_groups(task)
        self.device = ctx.device
        self.arch = task.model().to(self.device)
        self.recipe, self.tuning = loo_recipe(task, ctx, self.p.tune)
        self.stacked = to_device(loo_networks(task, ctx, ctx.progress, self.recipe), self.device)
        self.model = StackMember(self.arch, {k: v[0] for k, v in self.stacked.items()})


def disagreement(
    arch: nn.Module, stacked: dict[str, torch.Tensor], x: torch.Tensor
) -> torch.Tensor:
    """(N,) bool on the CPU: some leave-one-out network's label differs from N's (computed
    on the networks' device)."""
    with torch.no_grad():
        labels = stacked_logits(arch, stacked, x).argmax(-1)
    return to_cpu((labels[1:] != labels[0]).any(0))


@register_mechanism
class LabelOnly(LeaveOneOutAccess):
    """N's label with no protection: the reference row the accuracy drops are read from."""

    name = "label-only"
    paper = "https://arxiv.org/abs/2502.16519"

    @dataclass(frozen=True)
    class Params:
        tune: bool = False

    p: Params  # type: ignore[assignment]  (no eps: it never noises)

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(x), dtype=torch.bool)

    def guarantee(self) -> Guarantee:
        return Guarantee("none", tuning_params(self.tuning))


@register_mechanism
class NaiveNoise(LeaveOneOutAccess):
    """The exponential mechanism on every query (LUCID's Naive-Noise baseline)."""

    name = "naive-noise"
    paper = "https://arxiv.org/abs/2502.16519"


@register_mechanism
class NaiveIDP(LeaveOneOutAccess):
    """Noise only where N and a leave-one-out network disagree (exact; n + 1 forward passes
    per query)."""

    name = "naive-idp"
    paper = "https://arxiv.org/abs/2502.16519"

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return disagreement(self.arch, self.stacked, x)


@register_mechanism
class Lucid(LeaveOneOutAccess):
    """iDP label-only access: the predicted label where N's confidence exceeds the iDP-DB
    of that label, the exponential mechanism (remembered per input) elsewhere."""

    name = "lucid"
    paper = "https://arxiv.org/abs/2502.16519"

    @dataclass(frozen=True)
    class Params(LeaveOneOutAccess.Params):
        variant: LucidVariant = "full"
        # The MILP budgets of the decision bound, each 0 for none: seconds of wall clock
        # per MILP and in all (a clock makes the bounds depend on the machine), branch and
        # bound nodes per MILP, MILPs in all.
        time_limit: float = 60.0
        budget: float = 600.0
        node_limit: int = 0
        max_milps: int = 0

    p: Params

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        super().fit(task, splits, ctx)
        d = task.splits().train.x.shape[1]
        key = {
            "artifact": "idp-decision-bounds",
            "task": task.config(),
            "data": task.data_fingerprint(),
            "seed": ctx.seed,
            "networks": vars(self.recipe),  # bounds of these networks, no others
            "variant": self.p.variant,
            "time_limit": self.p.time_limit,
            "budget": self.p.budget,
            "node_limit": self.p.node_limit,
            "max_milps": self.p.max_milps,
            "domain": {"one_hot_groups": self.groups},
            "code": _code_digest(idp_bound, idp_diff, milp),  # recompute when the code changes
        }

        def build() -> dict[str, torch.Tensor]:  # MILPs: solved on the CPU, from CPU weights
            stacked = to_cpu(self.stacked)
            n = next(iter(stacked.values())).shape[0]
            layers = [
                dense_layers(self.arch, {k: v[i] for k, v in stacked.items()}, d) for i in range(n)
            ]
            budgets = {  # 0 s: no wall clock, so the bounds depend on the work budgets alone
                "time_limit": self.p.time_limit or None,
                "budget": self.p.budget or None,
                "node_limit": self.p.node_limit or None,
                "max_milps": self.p.max_milps or None,
                "groups": self.groups,
            }
            variant = self.p.variant
            bounds = [
                differential_bound(layers[0], layers[1:], c, **budgets).bound
                if variant == "diff"
                else decision_bound(
                    layers[0], layers[1:], c, variant=variant, seed=ctx.seed, **budgets
                ).bound
                for c in range(task.num_classes)
            ]
            return {"bounds": torch.tensor(bounds, dtype=torch.float64)}

        self.bounds = ctx.cache.get_or_build(key, build)["bounds"]

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        predicted = logits.argmax(1)
        return confidence(logits).double() <= self.bounds[predicted]

    def claim_metrics(self, task: Task, splits: Splits) -> dict[str, Any]:
        probes = canonical_records(
            probe_inputs(self.arch, self.stacked, splits.test.x, seed=0), self.groups
        )
        with torch.no_grad():
            logits = to_cpu(self.model(to_device(probes, self.device)))
        unguarded = ~self.needs_noise(probes, logits)
        leaks = disagreement(self.arch, self.stacked, probes) & unguarded
        return {"bound_validity": summarize((~leaks).double().numpy())}


def probe_inputs(
    arch: nn.Module, stacked: dict[str, torch.Tensor], test_x: torch.Tensor, *, seed: int
) -> torch.Tensor:
    """Inputs to check the bound on: the test points, uniform samples of [0, 1]^d, and
    inputs found by projected gradient ascent on the largest leave-one-out disagreement
    margin (some N_i's best other logit over its logit for N's label) from random starts.
    The starts are drawn on the CPU, the search runs on the networks' device; CPU result."""
    g = torch.Generator().manual_seed(seed)
    d = test_x.shape[1]
    device = next(iter(stacked.values())).device
    uniform = torch.rand(PROBE_UNIFORM, d, generator=g)
    x = to_device(torch.rand(PROBE_SEARCH_STARTS, d, generator=g), device).requires_grad_(True)
    optimiser = torch.optim.Adam([x], lr=0.05)
    for _ in range(PROBE_SEARCH_STEPS):
        logits = stacked_logits(arch, stacked, x)  # (models, N, C)
        label = logits[0].argmax(1)
        own = logits[1:].gather(2, label.view(1, -1, 1).expand(logits.shape[0] - 1, -1, 1))
        masked = logits[1:].scatter(2, label.view(1, -1, 1).expand_as(own), -math.inf)
        margin = (masked.max(2).values - own.squeeze(2)).max(0).values
        # Seek disagreement where N is confident: that is where a bound could be wrong.
        objective = margin.clamp(max=0.0) + 0.1 * confidence(logits[0])
        optimiser.zero_grad()
        (-objective.sum()).backward()
        optimiser.step()
        with torch.no_grad():
            x.clamp_(0.0, 1.0)
    return torch.cat([test_x, uniform, to_cpu(x.detach())])
