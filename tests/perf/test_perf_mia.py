"""Membership inference's cost per attacked record (group "mia-per-record"): each attack's
`score` on the default suite's spam case (60 training records, 2x10 networks) through
label-only access, the leave-one-out networks already trained (the mechanism's fit built
them). The mechanisms span the cheapest answer (label-only: one network) and the dearest
(naive-idp: every query on all 61 networks)."""

from __future__ import annotations

import pytest
import torch

from bench.plugin.artifacts import ArtifactCache
from bench.plugin.membership import LabelAccess
from bench.plugin.protocols import FitContext
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.run.kinds.membership import attacked_records
from bench.suite.read import make_task

SPAM = {"subsample": 60, "arch": "2x10", "train_epochs": 200}  # default.toml's spam


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """label-only and naive-idp (eps 0) fitted on spam, sharing one cache."""
    torch.set_num_threads(1)
    task = make_task("spam", SPAM, "<perf>")
    ctx = FitContext(0, ArtifactCache(tmp_path_factory.mktemp("mia-perf")))
    mechanisms = {}
    for name, params in (("label-only", {}), ("naive-idp", {"eps": 0.0})):
        mech = MECHANISMS.get(name)(**params)
        mech.fit(task, task.splits(), ctx)
        mechanisms[name] = mech
    return {"task": task, "ctx": ctx, "mechanisms": mechanisms}


@pytest.mark.benchmark(group="mia-per-record")
@pytest.mark.parametrize("mechanism", ["label-only", "naive-idp"])
@pytest.mark.parametrize("attack", ["mia-gap", "mia-boundary", "mia-loo"])
def test_attack_cost_per_record(benchmark, fitted: dict, attack: str, mechanism: str) -> None:
    task, ctx = fitted["task"], fitted["ctx"]
    mech = fitted["mechanisms"][mechanism]
    x, y, _, index = attacked_records(task, 0, seed=0)
    if benchmark.disabled:  # the smoke run of `make test`: a few records
        x, y, index = x[:8], y[:8], index[:8]
    scorer = ATTACKS.get(attack)()
    scorer.fit(mech, task, task.splits().aux, ctx)

    def run() -> torch.Tensor:
        access = LabelAccess(mech, torch.Generator().manual_seed(0))
        return scorer.score(access, x, y, index)

    scores = benchmark.pedantic(run, rounds=3, iterations=1)
    benchmark.extra_info["records"] = len(x)
    benchmark.extra_info["queries_per_record"] = {"mia-gap": 1, "mia-boundary": 21}.get(attack, 31)
    assert scores.shape == (len(x),) and torch.isfinite(scores).all()
