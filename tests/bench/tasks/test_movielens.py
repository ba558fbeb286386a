"""MovieLens with NCF-MLP: the per-user chronological split, id recovery by `lookup` through
the first linear layer unprotected (>= 95%) and under noise calibrated to 1/dFIL = 1 and 100
(recovery falls; at 1 the AUC stays well above the 0.5 of a constant guess, at 100 it falls to
chance without whole-model noise-aware training, as the paper's "no opt." column trends), and
a one-line error for missing MovieLens-20M."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from bench.core.errors import DataMissingError
from bench.data import readers as sources
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.run.kinds.reconstruction import attack_metrics, utility_metrics
from bench.suite.read import make_task
from bench.tasks.movielens import _chronological

ATTACKED = 32


def test_split_holds_out_each_users_last_ratings_by_time() -> None:
    rng = np.random.default_rng(0)
    n = 400
    raw = sources.RawRatings(
        user=rng.integers(0, 8, n) * 7 + 100,
        movie=rng.integers(0, 50, n),
        rating=rng.choice([1.0, 3.0, 5.0], n),
        timestamp=rng.permutation(n) * 10,
    )
    x, y, test = _chronological(raw)
    assert torch.equal(y, torch.from_numpy((raw.rating == 5.0).astype(np.int64)))
    assert int(x[:, 0].max()) < 8 <= int(x[:, 1].min())  # users first, then movies
    for user in np.unique(raw.user):
        mine = raw.user == user
        held = test[mine]
        assert held.sum() == max(1, round(0.1 * mine.sum()))
        assert raw.timestamp[mine][held].min() > raw.timestamp[mine][~held].max()


def test_missing_movielens_20m_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(DataMissingError) as info:
        sources.movielens_csv(tmp_path)
    assert "ratings.csv" in str(info.value) and "\n" not in str(info.value)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    task = make_task("movielens", {"n_train": 20_000, "n_aux": 200, "n_test": 2000})
    splits = task.splits()
    cache = ArtifactCache(tmp_path_factory.mktemp("cache"))
    identity = MECHANISMS.get("identity")()
    identity.fit(task, splits, FitContext(0, cache))
    return {"task": task, "splits": splits, "cache": cache, "identity": identity}


def _evaluate(mech, fitted: dict) -> dict[str, float]:
    task, splits = fitted["task"], fitted["splits"]
    release = mech.release(splits.test.x, torch.Generator().manual_seed(1))
    out = {k: v.value for k, v in utility_metrics(task, mech, release, splits.test.y, "m").items()}
    attack = ATTACKS.get("lookup")(max_steps=300)
    attack.fit(mech, task, splits.aux, FitContext(2, fitted["cache"]))
    x = splits.test.x[:ATTACKED]
    release = mech.release(x, torch.Generator().manual_seed(3))
    metrics, _ = attack_metrics(task, attack, release, x, splits.aux.x)
    return {**out, **{k: v.value for k, v in metrics.items()}}


def _gauss_at(inv_dfil: float, fitted: dict):
    """gauss-input whose sigma gives mean dFIL = 1/inv_dfil on the client Linear(64 -> 64):
    Tr(J^T J) = ||W||_F^2 at every x and d = 64, so sigma = sqrt(inv_dfil ||W||_F^2 / 64)."""
    weight = fitted["identity"].encoder()[1].weight
    sigma = math.sqrt(inv_dfil * float(weight.pow(2).sum()) / 64)
    unit = MECHANISMS.get("gauss-input")(eps=1.0, r=1.0).calibrate(fitted["task"]).scale
    mech = MECHANISMS.get("gauss-input")(eps=1.0, r=sigma / unit)  # sigma is linear in r
    mech.fit(fitted["task"], fitted["splits"], FitContext(0, fitted["cache"]))
    assert mech.noise().scale == pytest.approx(sigma, rel=1e-9)
    return mech


def test_lookup_recovers_ids_unprotected_not_under_calibrated_noise(fitted: dict) -> None:
    clear = _evaluate(fitted["identity"], fitted)
    assert clear["top1"] >= 0.95
    assert clear["auc"] > 0.7  # the trained NCF-MLP ranks clicks well
    majority = 1 - fitted["splits"].test.y.float().mean().item()
    assert clear["accuracy"] >= majority - 1e-9

    low = _evaluate(_gauss_at(1.0, fitted), fitted)
    high = _evaluate(_gauss_at(100.0, fitted), fitted)
    print(f"movielens clear {clear}\n1/dFIL=1 {low}\n1/dFIL=100 {high}")
    assert low["top1"] < 0.1 and high["top1"] < 0.1 and high["top5"] < clear["top5"]
    assert 0.55 < low["auc"] < clear["auc"]
    assert low["accuracy"] >= majority - 1e-9
    assert high["auc"] < low["auc"]


def test_optimization_attack_is_scored_in_embedding_space(fitted: dict) -> None:
    task, splits = fitted["task"], fitted["splits"]
    mech = fitted["identity"]
    attack = ATTACKS.get("optimization")(max_steps=300)
    attack.fit(mech, task, splits.aux, FitContext(2, fitted["cache"]))
    x = splits.test.x[:8]
    release = mech.release(x, torch.Generator().manual_seed(3))
    table = mech.embedding_table()
    metrics, x_hat = attack_metrics(task, attack, release, x, splits.aux.x, table)
    assert x_hat.shape == (8, 2, 32)
    # Unprotected through an invertible linear layer: the embeddings come back far closer
    # than the best data-independent guess (the mean row, whose error is the table variance).
    assert metrics["mse"].value < 0.2 * table.var(0).mean().item()


def test_dfil_calibrates_on_the_embedding_input_and_protects_ids(fitted: dict) -> None:
    """dfil on NCF-MLP: sigma = sqrt(inv_dfil * mean Tr(J^T J) / d) with d = 2 x 32 embedding
    coordinates and Tr = ||W||_F^2 (linear client); ids recovered unprotected are lost at
    1/dFIL = 100; lookup rows carry no MSE bound, optimization rows the Cramer-Rao one."""
    task, splits, cache = fitted["task"], fitted["splits"], fitted["cache"]
    mech = MECHANISMS.get("dfil")(inv_dfil=100.0)
    mech.fit(task, splits, FitContext(0, cache))
    weight = mech.encoder()[1].weight
    expected = math.sqrt(100.0 * float(weight.double().pow(2).sum()) / 64)
    assert mech.noise().scale == pytest.approx(expected, rel=1e-6)
    assert torch.equal(mech.embedding_table(), fitted["identity"].embedding_table())
    protected = _evaluate(mech, fitted)
    assert protected["top1"] < 0.1
    assert mech.guarantee().to_dict()["inv_dfil"] == 100.0

    attack = ATTACKS.get("optimization")(max_steps=100)
    attack.fit(mech, task, splits.aux, FitContext(2, cache))
    x = splits.test.x[:8]
    release = mech.release(x, torch.Generator().manual_seed(3))
    table = mech.embedding_table()
    _, x_hat = attack_metrics(task, attack, release, x, splits.aux.x, table)
    bounds = mech.bound_metrics(attack, table[x], x_hat, release)
    assert bounds["bound_mse"].value == pytest.approx(100.0, rel=1e-6)  # CR = 1/dFIL(x)
    lookup = ATTACKS.get("lookup")()
    assert mech.bound_metrics(lookup, x, x, release) == {}
