"""Leave-one-out networks (LUCID): stacked vmapped SGD equals training each network alone,
the removed point really is removed, and the tabular tasks load real, encoded data."""

from __future__ import annotations

import pytest
import torch

from bench.core.errors import ConfigError, DataMissingError
from bench.plugin.protocols import DataSplit
from bench.plugin.registry import TASKS
from bench.tasks.tabular import tabular_model
from mechanisms.label_only.leave_one_out import (
    LooRecipe,
    leave_one_out,
    stacked_logits,
    train_sequential,
)


def _data(n: int = 40, d: int = 6, seed: int = 0) -> DataSplit:
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, d, generator=g)
    y = (x[:, 0] + 0.3 * torch.randn(n, generator=g) > 0.5).long()
    return DataSplit(x, y)


@pytest.mark.parametrize("arch", ["2x50", "cnn1d"])
def test_stacked_training_equals_sequential_training(arch: str) -> None:
    data = _data()
    recipe = LooRecipe(lr=0.1, epochs=5, batch_size=16, seed=3)
    stacked = leave_one_out(tabular_model(arch, 6, 2), data, recipe, chunk=7)
    assert next(iter(stacked.values())).shape[0] == len(data) + 1
    for removed in (-1, 0, 17, len(data) - 1):
        alone = train_sequential(tabular_model(arch, 6, 2), data, removed, recipe)
        for name, p in alone.named_parameters():
            torch.testing.assert_close(stacked[name][removed + 1], p.detach(), rtol=1e-6, atol=1e-6)


def test_removing_a_point_changes_only_its_network() -> None:
    data = _data()
    recipe = LooRecipe(lr=0.5, epochs=20, batch_size=8, seed=1)
    stacked = leave_one_out(tabular_model("2x50", 6, 2), data, recipe)
    logits = stacked_logits(tabular_model("2x50", 6, 2), stacked, data.x)
    full = logits[0]
    # Every leave-one-out network differs from N (its data differ) ...
    assert all(not torch.equal(logits[i], full) for i in range(1, len(data) + 1))
    # ... and training twice is deterministic.
    again = leave_one_out(tabular_model("2x50", 6, 2), data, recipe)
    assert all(torch.equal(stacked[k], again[k]) for k in stacked)


@pytest.mark.parametrize(
    ("name", "features", "train"),
    [("adult", 108, 29305), ("german", 61, 720), ("credit", 26, 2908), ("spam", 6, 3313)],
)
def test_tabular_tasks_are_encoded_into_the_unit_box(name: str, features: int, train: int) -> None:
    task = TASKS.get(name)()
    s = task.splits()
    assert s.train.x.shape == (train, features)
    for split in (s.train, s.aux, s.test):
        assert split.x.dtype == torch.float32 and split.x.min() >= 0 and split.x.max() <= 1
        assert set(split.y.unique().tolist()) == {0, 1}
    small = TASKS.get(name)(subsample=50).splits()
    assert torch.equal(small.train.x, s.train.x[:50])


def test_tabular_options_and_missing_csv_are_refused_with_one_line(tmp_path) -> None:
    with pytest.raises(ConfigError, match="arch must be cnn1d or"):
        TASKS.get("adult")(arch="3x0")
    with pytest.raises(ConfigError, match="subsample must be"):
        TASKS.get("german")(subsample=0)
    with pytest.raises(DataMissingError, match=r"twitter\.csv is missing"):
        TASKS.get("twitter")(data_root=str(tmp_path)).splits()
    (tmp_path / "crypto.csv").write_text("a,b,label\n0.1,x,1\n0.2,y,0\n0.3,x,1\n0.5,y,0\n0.9,x,0\n")
    s = TASKS.get("crypto")(data_root=str(tmp_path)).splits()
    assert s.train.x.shape[1] == 3  # a scaled + b one-hot over {x, y}
    (tmp_path / "crypto.csv").write_text("a,label\n0.1,2\n0.2,0\n")
    with pytest.raises(DataMissingError, match="must hold only 0 and 1"):
        TASKS.get("crypto")(data_root=str(tmp_path / ".." / tmp_path.name)).splits()
