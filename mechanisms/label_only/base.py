"""Label-only access guarded for individual differential privacy (the LUCID paper, 2025).

The release is a label (one-hot scores). Where the answer could reveal whether a training
point was used, the label comes from the exponential mechanism with utility 1 for the
network's predicted label and 0 otherwise (sensitivity 1, McSherry & Talwar 2007): the
predicted label with probability e^(eps/2) / (e^(eps/2) + k - 1), each other label with
1 / (e^(eps/2) + k - 1). eps = 0 answers uniformly at random (0-iDP).

Every noisy answer is remembered per input, so a repeated query returns the same label
(the paper's Algorithm 2): repeating a query gains an attacker nothing.

Queries are records. The leave-one-out mechanisms first map a query to a record
(`canonical_records`): every feature clamped to the encoding's range [0, 1], and each
one-hot group that is not a single 1 set to its largest entry's category. Every answer is
then a function of a valid record, the domain the iDP decision bound is certified on
(bench/certify/idp/bound.py).

- `naive-noise`: the exponential mechanism on every query (eps-DP, hence eps-iDP).
- `naive-idp`: query N and all n leave-one-out networks; noise only where they disagree
  (exact, but every query runs n + 1 networks).
- `lucid` (mechanisms/label_only/lucid.py): noise only where N's confidence is at or below the
  iDP decision bound of its predicted class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from bench.certify.idp.bound import Groups
from bench.core.device import to_cpu, to_device
from bench.core.hashing import derive_seed
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Mechanism, Release, Task
from mechanisms.label_only.tuning import Choice, choose, tuning_params

# Trains a network on a split with (lr, epochs, seed): what the tuning grid evaluates.
Trainer = Callable[[DataSplit, float, int, int], nn.Module]


def keep_probability(eps: float, num_classes: int) -> float:
    """P[exponential mechanism answers the predicted label] = e^(eps/2) / (e^(eps/2) + k - 1)."""
    weight = math.exp(eps / 2)
    return weight / (weight + num_classes - 1)


def exponential_mechanism(
    predicted: torch.Tensor, num_classes: int, eps: float, generator: torch.Generator
) -> torch.Tensor:
    """One draw per entry of `predicted`: keep it with `keep_probability`, else a uniformly
    chosen other label."""
    keep = torch.rand(predicted.shape, generator=generator) < keep_probability(eps, num_classes)
    shift = torch.randint(1, max(num_classes, 2), predicted.shape, generator=generator)
    other = (predicted + shift) % num_classes
    return torch.where(keep, predicted, other)


def canonical_records(x: torch.Tensor, groups: Groups) -> torch.Tensor:
    """`x` clamped to [0, 1], with each one-hot group replaced by the one-hot vector of its
    largest entry (the first on ties); a valid record is unchanged."""
    out = x.clamp(0.0, 1.0)
    for group in groups:
        index = torch.tensor(group)
        block = x[:, index]
        out[:, index] = F.one_hot(block.argmax(1), len(group)).to(x.dtype)
    return out


def one_hot_groups(task: Any) -> Groups:
    """The task's one-hot groups (tabular tasks declare them; none otherwise)."""
    groups = getattr(task, "one_hot_groups", None)
    return tuple(tuple(g) for g in groups()) if callable(groups) else ()


def _input_key(row: torch.Tensor) -> bytes:
    return row.detach().to(torch.float32).contiguous().numpy().tobytes()


class LabelOnlyMechanism(Mechanism):
    """Label-only access: `needs_noise` decides per input whether its answer is noised."""

    modalities = frozenset({"tabular"})  # the iDP-DB MILP encodes dense ReLU networks
    repeatable_queries = False  # a repeated query gets the remembered answer
    releases_labels = True

    @dataclass(frozen=True)
    class Params:
        eps: float = 0.0
        # tune: train with the lr and epochs chosen on public data (tuning.py), the same grid
        # for every method of the family; false: the paper's fixed recipe.
        tune: bool = False

    p: Params

    num_classes: int
    model: nn.Module  # the network whose labels are served (set by `fit`)
    memory: dict[bytes, int]  # remembered noisy answers, per input
    answers_records = False  # map each query to its canonical record before answering
    groups: Groups = ()  # one-hot groups of the task's records (set by `fit`)
    tuning: Choice | None = None  # the training configuration chosen on public data, if tuned

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        """(N,) bool: inputs whose predicted label might leak membership."""
        return torch.ones(len(x), dtype=torch.bool)

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        x = to_cpu(x)  # the decisions (bounds, memory, draws) are made on the CPU
        if self.answers_records:
            x = canonical_records(x, self.groups)
        with torch.no_grad():
            logits = to_cpu(self.model(to_device(x, self.device)))
        predicted = logits.argmax(1)
        noisy = self.needs_noise(x, logits)
        labels = predicted.clone()
        if noisy.any():
            drawn = exponential_mechanism(predicted[noisy], self.num_classes, self.p.eps, generator)
            for i, label in zip(noisy.nonzero().squeeze(1).tolist(), drawn.tolist(), strict=True):
                labels[i] = self.memory.setdefault(_input_key(x[i]), int(label))
        one_hot = F.one_hot(labels, self.num_classes).float()
        return Release.all_released(one_hot, noised=noisy)

    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(release.values)

    def guarantee(self) -> Guarantee:
        params = {"eps": self.p.eps, **tuning_params(self.tuning)}
        return Guarantee("idp", params, "training-set/leave-one-out")

    def training_schedule(
        self,
        task: Task,
        ctx: FitContext,
        method: str,
        code: str,
        fixed: tuple[float, int],
        train: Trainer,
    ) -> tuple[float, int]:
        """The (lr, epochs) the served network trains with: `fixed` (the paper's recipe), or
        with `tune` those `choose` picks on public aux data for networks `train` builds
        (cached per task, data, seed and parameters; kept as `self.tuning`)."""
        self.tuning = None
        if not self.p.tune:
            return fixed
        key = {"artifact": "label-only-tuning", "method": method, "code": code}
        key |= {"task": task.config(), "data": task.data_fingerprint(), "seed": ctx.seed}
        key["params"] = self.params
        seed = derive_seed(ctx.seed, "tuning")
        n_train = len(task.splits().train)

        def pick() -> dict[str, Any]:
            return vars(choose(task, n_train, lambda d, lr, e: train(d, lr, e, seed)))

        self.tuning = Choice(**ctx.cache.get_or_build(key, pick))
        return self.tuning.lr, self.tuning.epochs

    def network_recipe(
        self, task: Task, ctx: FitContext, artifact: str, code: str, schedule: tuple[float, int]
    ) -> dict[str, Any]:
        """The cache recipe of the served network trained with `schedule` = (lr, epochs):
        everything its weights depend on."""
        lr, epochs = schedule
        return {
            "artifact": artifact,
            "code": code,  # retrain when the training code changes
            "task": task.config(),
            "data": task.data_fingerprint(),
            "seed": ctx.seed,
            "epochs": epochs,
            "lr": lr,
            "params": self.params,
        }


def confidence(logits: torch.Tensor) -> torch.Tensor:
    """N's classification confidence: its top logit minus the best other logit."""
    top2 = logits.topk(2, dim=1).values
    return top2[:, 0] - top2[:, 1]
