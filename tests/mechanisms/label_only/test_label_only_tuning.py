"""The label-only family's tuning budget: one grid for every method, chosen on public aux
data only (so no guarantee changes), recorded on the row, and the iDP bounds are those of
the networks actually served."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch

from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import DataSplit, FitContext, Splits
from bench.plugin.registry import MECHANISMS, TASKS
from mechanisms.label_only import tuning
from mechanisms.label_only.lucid import loo_recipe

pytestmark = pytest.mark.usefixtures("one_thread")


def _spam(**options):
    return TASKS.get("spam")(subsample=60, arch="2x10", train_epochs=100, **options)


class _OtherTrainingSet:
    """`task` with its private training labels flipped: what tuning may not depend on."""

    def __init__(self, task) -> None:
        self._task = task

    def __getattr__(self, name):
        return getattr(self._task, name)

    def splits(self) -> Splits:
        s = self._task.splits()
        return replace(s, train=DataSplit(s.train.x, 1 - s.train.y))


def test_the_grid_is_three_learning_rates_by_three_epoch_budgets() -> None:
    assert tuning.grid(300) == [(lr, e) for e in (30, 90, 300) for lr in (0.1, 0.3, 1.0)]
    assert tuning.grid(5) == [(lr, e) for e in (1, 2, 5) for lr in (0.1, 0.3, 1.0)]


def test_the_proxy_is_cut_from_aux_at_the_private_size() -> None:
    task = _spam()
    s = task.splits()
    proxy, validation = tuning.proxy_splits(task, len(s.train))
    assert len(proxy) == 60 and len(proxy) + len(validation) == len(s.aux)
    assert torch.equal(torch.cat([proxy.x, validation.x]), s.aux.x)
    small = tuning.proxy_splits(task, 10_000)[0]  # never more than PROXY_SHARE of aux
    assert len(small) == int(tuning.PROXY_SHARE * len(s.aux))


def test_the_choice_does_not_depend_on_the_private_records(tmp_path: Path) -> None:
    task = _spam()
    recipe, choice = loo_recipe(task, FitContext(0, ArtifactCache(tmp_path / "a")), tune=True)
    other = _OtherTrainingSet(task)
    again, choice2 = loo_recipe(other, FitContext(0, ArtifactCache(tmp_path / "b")), tune=True)
    assert choice == choice2 and recipe == again
    assert (recipe.lr, recipe.epochs) in tuning.grid(100) and recipe.seed == 0
    assert 0.5 < choice.val_accuracy <= 1.0


@pytest.mark.slow
def test_tuned_rows_say_how_they_were_trained_and_lucid_bounds_hold_for_them(
    tmp_path: Path,
) -> None:
    task = _spam()
    splits = task.splits()
    ctx = FitContext(0, ArtifactCache(tmp_path))
    fixed = MECHANISMS.get("lucid")(eps=0.0, variant="diff", node_limit=1, max_milps=4)
    fixed.fit(task, splits, ctx)
    tuned = MECHANISMS.get("lucid")(eps=0.0, variant="diff", node_limit=1, max_milps=4, tune=True)
    tuned.fit(task, splits, ctx)
    claim = tuned.guarantee().to_dict()
    assert claim["tuning"]["lr"] == tuned.recipe.lr and "tuning" not in fixed.guarantee().to_dict()
    # The bounds are recomputed for the tuned networks (not reused from the fixed ones), and
    # no probe finds a leave-one-out disagreement they let through.
    if (tuned.recipe.lr, tuned.recipe.epochs) != (fixed.recipe.lr, fixed.recipe.epochs):
        assert not torch.equal(tuned.bounds, fixed.bounds)
    assert tuned.claim_metrics(task, splits)["bound_validity"].value == 1.0


@pytest.mark.parametrize("name", ["label-only", "lucid", "naive-idp", "dp-sgd", "alibi"])
def test_tune_must_be_a_boolean(name: str) -> None:
    with pytest.raises(ConfigError, match="'tune' must be true or false"):
        MECHANISMS.get(name)(tune="yes")


@pytest.mark.parametrize("name", ["dp-sgd", "alibi"])
def test_dp_baselines_tune_on_public_data_and_say_so(name: str, tmp_path: Path) -> None:
    """Same grid, chosen without the private records (flipping their labels changes the
    trained network, not the choice), recorded in the guarantee."""
    task = _spam()
    claims = []
    for i, t in enumerate((task, _OtherTrainingSet(task))):
        mech = MECHANISMS.get(name)(eps=10.0, tune=True)
        mech.fit(t, t.splits(), FitContext(0, ArtifactCache(tmp_path / str(i))))
        claims.append(mech.guarantee().to_dict())
    assert claims[0]["tuning"] == claims[1]["tuning"]
    assert (claims[0]["tuning"]["lr"], claims[0]["tuning"]["epochs"]) in tuning.grid(100)
    assert claims[0]["eps"] == 10.0
