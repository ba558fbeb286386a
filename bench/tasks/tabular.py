"""Binary tabular classification tasks for label-only access (LUCID paper, 2025): adult,
german, credit, spam (embedded) and twitter, credit-default, crypto (CSV from data_root).

Encoding (documented because the iDP-DB is computed over this domain): numeric columns are
mapped to [0, 1] by the TRAIN split's rank scale (piecewise-linear through its distinct
values at evenly spaced levels, clipped outside; monotone, and robust to the heavy tails
of counts and amounts that leave min-max scaling near 0); categorical columns are
one-hot encoded over the categories of the whole table (the schema, not a statistic). Every
feature therefore lies in [0, 1]. The task's `one_hot_groups` name each category's
columns: a valid record has exactly one 1 per group. The leave-one-out label-only
mechanisms answer that record (mechanisms/label_only/base.py maps other queries onto it), so
the iDP-DB MILP maximises over the hull of the valid records, not the whole box [0, 1]^d.

Splits are fixed: the official train/test for adult; a fixed permutation 80/20 otherwise;
the aux split (10% of train, for attackers) is carved from train. `subsample` takes the
first n records of the fixed training split, so leave-one-out sets stay small; the records
beyond it are the task's `population`, the non-members of membership inference.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from torch import nn

from bench.core.errors import ConfigError
from bench.data import tabular_readers as src
from bench.plugin.protocols import DataSplit, Splits, Task
from bench.plugin.registry import register_task

SPLIT_SEED = 20260103
AUX_FRACTION = 0.1
TEST_FRACTION = 0.2
ARCHS = ("2x50", "2x100", "4x30", "cnn1d")  # the paper's; any "<depth>x<width>" is accepted
_MLP_ARCH = re.compile(r"^([1-9][0-9]?)x([1-9][0-9]{0,3})$")


def mlp(in_features: int, widths: tuple[int, ...], num_classes: int) -> nn.Sequential:
    """A fully connected ReLU network, e.g. widths (50, 50) for the paper's 2x50."""
    layers: list[nn.Module] = []
    previous = in_features
    for width in widths:
        layers += [nn.Linear(previous, width), nn.ReLU()]
        previous = width
    return nn.Sequential(*layers, nn.Linear(previous, num_classes))


def cnn1d(in_features: int, num_classes: int, channels: int = 4, kernel: int = 3) -> nn.Sequential:
    """The paper's small 1-D CNN: one convolution over the feature vector, then dense."""
    return nn.Sequential(
        nn.Unflatten(1, (1, in_features)),
        nn.Conv1d(1, channels, kernel),
        nn.ReLU(),
        nn.Flatten(),
        nn.Linear(channels * (in_features - kernel + 1), 30),
        nn.ReLU(),
        nn.Linear(30, num_classes),
    )


def tabular_model(arch: str, in_features: int, num_classes: int) -> nn.Sequential:
    """A fresh model of one of ARCHS."""
    if arch == "cnn1d":
        return cnn1d(in_features, num_classes)
    match = _MLP_ARCH.match(arch)
    if match is None:
        raise ConfigError(f"unknown tabular architecture {arch!r}; use cnn1d or <depth>x<width>")
    depth, width = int(match[1]), int(match[2])
    return mlp(in_features, (width,) * depth, num_classes)


Groups = tuple[tuple[int, ...], ...]


def encode(
    train: pd.DataFrame, others: list[pd.DataFrame]
) -> tuple[np.ndarray, list[np.ndarray], list[str], Groups]:
    """Train and other frames -> float32 feature matrices in [0, 1], feature names
    (numeric: train rank scale; categorical: one-hot over all frames' categories) and the
    column indices of each one-hot block."""
    frames = [train, *others]
    features = [c for c in train.columns if c != src.LABEL]
    blocks: list[list[np.ndarray]] = [[] for _ in frames]
    names: list[str] = []
    groups: list[tuple[int, ...]] = []
    for column in features:
        if pd.api.types.is_numeric_dtype(train[column]):
            knots = np.unique(train[column].to_numpy(float))
            levels = np.linspace(0.0, 1.0, len(knots)) if len(knots) > 1 else np.zeros(1)
            for block, df in zip(blocks, frames, strict=True):
                values = df[column].to_numpy(float)
                block.append(np.interp(values, knots, levels)[:, None])
            names.append(column)
        else:
            categories = sorted({str(v) for df in frames for v in df[column]})
            for block, df in zip(blocks, frames, strict=True):
                values = df[column].astype(str).to_numpy()
                block.append((values[:, None] == np.array(categories)[None, :]).astype(float))
            groups.append(tuple(range(len(names), len(names) + len(categories))))
            names += [f"{column}={c}" for c in categories]
    matrices = [np.concatenate(b, axis=1).astype(np.float32) for b in blocks]
    return matrices[0], matrices[1:], names, tuple(groups)


def _split(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> DataSplit:
    return DataSplit(torch.from_numpy(x[idx]), torch.from_numpy(y[idx]).long())


@dataclass(frozen=True)
class EncodedTable:
    """A table's fixed splits and the one-hot groups of its encoding."""

    splits: Splits
    groups: Groups


def fixed_splits(train: pd.DataFrame, test: pd.DataFrame | None) -> EncodedTable:
    """Encode and cut a table into fixed train / aux / test (a permutation when `test` is
    None), aux carved from train."""
    rng = np.random.default_rng(SPLIT_SEED)
    if test is None:
        order = rng.permutation(len(train))
        n_test = round(TEST_FRACTION * len(train))
        test, train = train.iloc[order[:n_test]], train.iloc[order[n_test:]]
    train, test = train.reset_index(drop=True), test.reset_index(drop=True)
    x_train, (x_test,), _, groups = encode(train, [test])
    y_train, y_test = train[src.LABEL].to_numpy(), test[src.LABEL].to_numpy()
    order = np.random.default_rng(SPLIT_SEED + 1).permutation(len(train))
    n_aux = round(AUX_FRACTION * len(train))
    splits = Splits(
        train=_split(x_train, y_train, order[n_aux:]),
        aux=_split(x_train, y_train, order[:n_aux]),
        test=_split(x_test, y_test, np.arange(len(x_test))),
    )
    return EncodedTable(splits, groups)


class TabularTask(Task):
    """A binary tabular task. Options: `subsample` (first n training records), `n_aux`,
    `n_test`, `arch` (cnn1d or <depth>x<width>, e.g. the paper's 2x50, 2x100, 4x30),
    `train_epochs`, `data_root` (CSV tasks)."""

    modality = "tabular"
    num_classes = 2
    loader: ClassVar[Callable[[str | None], EncodedTable]]

    def __init__(
        self,
        subsample: int | None = None,
        n_aux: int | None = None,
        n_test: int | None = None,
        arch: str = "2x50",
        train_epochs: int = 30,
        data_root: str | None = None,
    ) -> None:
        for key, value in (("subsample", subsample), ("n_aux", n_aux), ("n_test", n_test)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ConfigError(f"task {self.name}: {key} must be an integer >= 1, got {value}")
        if arch != "cnn1d" and not _MLP_ARCH.match(str(arch)):
            raise ConfigError(
                f"task {self.name}: arch must be cnn1d or <depth>x<width> (the paper's: "
                f"{', '.join(ARCHS)}), got {arch!r}"
            )
        if not isinstance(train_epochs, int) or train_epochs < 1:
            raise ConfigError(f"task {self.name}: train_epochs must be an integer >= 1")
        self.subsample, self.n_aux, self.n_test = subsample, n_aux, n_test
        self.arch, self.train_epochs, self.data_root = arch, train_epochs, data_root
        self.data_range = (0.0, 1.0)
        self._splits: Splits | None = None

    def config(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "subsample": self.subsample,
            "n_aux": self.n_aux,
            "n_test": self.n_test,
            "arch": self.arch,
            "train_epochs": self.train_epochs,
        }

    def splits(self) -> Splits:
        if self._splits is None:
            table = type(self).loader(self.data_root)
            self._splits = table.splits.head(self.subsample, self.n_aux, self.n_test)
            self.input_shape = tuple(self._splits.test.x.shape[1:])
        return self._splits

    def population(self) -> DataSplit | None:
        """Records of the fixed training split beyond the first `subsample` (None without a
        subsample): held by no split, and exchangeable with the training records (the fixed
        split is a seeded permutation), so membership inference draws non-members here."""
        if self.subsample is None:
            return None
        train = type(self).loader(self.data_root).splits.train
        return DataSplit(train.x[self.subsample :], train.y[self.subsample :])

    def one_hot_groups(self) -> Groups:
        """The input columns of each categorical feature: a valid record has one 1 in each."""
        return type(self).loader(self.data_root).groups

    def model(self, arch: str = "default") -> nn.Module:
        self.splits()
        chosen = self.arch if arch == "default" else arch
        return tabular_model(chosen, self.input_shape[0], self.num_classes)


@cache
def _adult(_root: str | None) -> EncodedTable:
    return fixed_splits(*src.adult())


@cache
def _german(_root: str | None) -> EncodedTable:
    return fixed_splits(src.german(), None)


@cache
def _credit(_root: str | None) -> EncodedTable:
    return fixed_splits(src.credit(), None)


@cache
def _spam(_root: str | None) -> EncodedTable:
    return fixed_splits(src.spam(), None)


def _csv_loader(file_name: str, label: str | None) -> Callable[[str | None], EncodedTable]:
    @cache
    def load(root: str | None) -> EncodedTable:
        if root is None:
            raise ConfigError(f"this task needs data_root: a directory holding {file_name}")
        return fixed_splits(src.csv_table(Path(root), file_name, label), None)

    return load


@register_task
class Adult(TabularTask):
    """UCI Adult income (> 50K), official splits, 108 one-hot / scaled features."""

    name, version = "adult", "1"
    # The dataset this task loads by default: reproduction cells are checked against it.
    source_dataset: ClassVar[str] = "UCI Adult"
    loader = staticmethod(_adult)


@register_task
class German(TabularTask):
    """UCI German credit risk (bad = 1), 1,000 records."""

    name, version = "german", "1"
    source_dataset: ClassVar[str] = "UCI German credit"
    loader = staticmethod(_german)


@register_task
class Credit(TabularTask):
    """modeldata credit_data: credit status (bad = 1), 4,039 complete records."""

    name, version = "credit", "1"
    source_dataset: ClassVar[str] = "modeldata credit_data"
    loader = staticmethod(_credit)


@register_task
class Spam(TabularTask):
    """DAAG spam7 (the stand-in for the paper's spam-account data), 4,601 e-mails."""

    name, version = "spam", "1"
    source_dataset: ClassVar[str] = "DAAG spam7"
    loader = staticmethod(_spam)


@register_task
class Twitter(TabularTask):
    """The paper's Twitter spam-account table: data_root/twitter.csv, label last."""

    name, version = "twitter", "1"
    source_dataset: ClassVar[str] = "Twitter Spam Accounts"
    loader = staticmethod(_csv_loader("twitter.csv", None))


@register_task
class CreditDefault(TabularTask):
    """UCI default of credit card clients (Taiwan): data_root/credit-default.csv with the
    label column "default payment next month" (or last)."""

    name, version = "credit-default", "1"
    source_dataset: ClassVar[str] = "UCI Default of Credit Card Clients"
    loader = staticmethod(_csv_loader("credit-default.csv", None))


@register_task
class Crypto(TabularTask):
    """The paper's Cryptojacking table: data_root/crypto.csv, label last."""

    name, version = "crypto", "1"
    source_dataset: ClassVar[str] = "Cryptojacking"
    loader = staticmethod(_csv_loader("crypto.csv", None))
