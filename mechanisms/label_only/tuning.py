"""One tuning budget for every label-only method: SGD learning rate and epochs chosen on
public data only, so the choice costs no privacy and no method gets more search than another.

The grid is `LEARNING_RATES` x `EPOCH_FRACTIONS` of the task's `train_epochs` (9
configurations). Each configuration trains the method's own way (plain SGD, DP-SGD at the
row's eps, ALIBI at the row's eps) on a proxy training set cut from the task's aux split
(public, disjoint from the private training records and from the test set), of the private
training set's size where aux allows (at most `PROXY_SHARE` of aux), and is scored by
accuracy on the rest of aux; the best wins, ties to the earlier configuration. The private
records are then trained on once, with the winner.

Why public data: choosing among models trained on the private set by their validation
score is itself a release about that set (Papernot & Steinke 2022); a choice made on aux is
independent of the private records, so every guarantee (DP-SGD's, ALIBI's, LUCID's iDP over
the leave-one-out networks, which all use the chosen configuration) holds as stated.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from bench.core.device import module_device, to_cpu, to_device
from bench.core.errors import ConfigError
from bench.plugin.protocols import DataSplit, Task

LEARNING_RATES = (0.1, 0.3, 1.0)
EPOCH_FRACTIONS = (0.1, 0.3, 1.0)
PROXY_SHARE = 0.6  # at most this share of aux trains the proxy; the rest validates


@dataclass(frozen=True)
class Choice:
    """A training configuration and its validation accuracy on public data."""

    lr: float
    epochs: int
    val_accuracy: float


def grid(train_epochs: int) -> list[tuple[float, int]]:
    """The (lr, epochs) configurations, in tie-breaking order (fewer epochs, smaller lr
    first)."""
    epochs = sorted({max(1, math.ceil(f * train_epochs)) for f in EPOCH_FRACTIONS})
    return [(lr, e) for e in epochs for lr in LEARNING_RATES]


def proxy_splits(task: Task, n_private: int) -> tuple[DataSplit, DataSplit]:
    """(proxy train, validation) from the task's aux split: the first min(n_private,
    PROXY_SHARE |aux|) aux records train, the rest validate (aux is pre-shuffled)."""
    aux = task.splits().aux
    m = max(1, min(n_private, int(PROXY_SHARE * len(aux))))
    if len(aux) - m < 1:
        raise ValueError(f"task {task.name}: aux split of {len(aux)} records is too small to tune")
    return DataSplit(aux.x[:m], aux.y[:m]), DataSplit(aux.x[m:], aux.y[m:])


def accuracy_of(model: nn.Module, data: DataSplit) -> float:
    """Top-1 accuracy of `model` on `data` (on the model's device)."""
    with torch.no_grad():
        predicted = to_cpu(model(to_device(data.x, module_device(model))).argmax(1))
        return float((predicted == data.y).double().mean())


def choose(
    task: Task,
    n_private: int,
    train: Callable[[DataSplit, float, int], nn.Module],
) -> Choice:
    """The configuration of the grid whose model, trained by `train(proxy, lr, epochs)`,
    scores best on the validation part of aux."""
    proxy, validation = proxy_splits(task, n_private)
    epochs = int(task.config().get("train_epochs", 30))
    best: Choice | None = None
    for lr, e in grid(epochs):
        try:
            score = accuracy_of(train(proxy, lr, e), validation)
        except ConfigError:  # e.g. DP-SGD's accountant has no noise for this many epochs
            continue
        if best is None or score > best.val_accuracy:
            best = Choice(lr, e, score)
    if best is None:
        raise ConfigError(f"task {task.name}: no configuration of the tuning grid could train")
    return best


def tuning_params(choice: Choice | None) -> dict[str, Any]:
    """The chosen configuration as a guarantee entry: the claim is about networks trained
    this way (none when the paper's fixed recipe is used)."""
    if choice is None:
        return {}
    return {
        "tuning": {"lr": choice.lr, "epochs": choice.epochs, "val_accuracy": choice.val_accuracy}
    }
