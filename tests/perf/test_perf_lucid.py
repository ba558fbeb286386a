"""LUCID's costs: leave-one-out networks trained per second, stacked (vmapped)
against one by one, side by side in groups "loo-networks-<task>-<arch>" (target >= 20x; on
2 CPU cores full-batch 2x50 training is compute-bound either way: docs/lucid.md); and
the iDP-DB of adult 2x50 on 2,000 training points under the shipped work budgets, the
paper's full variant beside `diff` (group "idp-db-adult-2x50-2000", only with
--benchmark-enable: its 2,001 networks take minutes)."""

from __future__ import annotations

import pytest
import torch

from bench.certify.idp.bound import decision_bound, dense_layers
from bench.certify.idp.diff import differential_bound
from bench.suite.read import make_task
from bench.tasks.tabular import tabular_model
from mechanisms.label_only.base import one_hot_groups
from mechanisms.label_only.leave_one_out import (
    LooRecipe,
    leave_one_out,
    train_sequential,
    train_stacked,
)

RECIPE = LooRecipe(lr=0.1, epochs=30, batch_size=1024, seed=0)  # REFERENCE.md §3
# (task, training records, architecture, networks): the adult 2x50, and the default
# suite's spam 2x10 (every leave-one-out network of its 60 records).
CASES = {"adult-2x50": ("adult", 400, "2x50", 256), "spam-2x10": ("spam", 60, "2x10", 61)}


@pytest.fixture(scope="module", params=sorted(CASES))
def case(request: pytest.FixtureRequest) -> tuple[str, object, str, int]:
    name, records, arch, networks = CASES[request.param]
    task = make_task(name, {"subsample": records, "arch": arch}, "<perf>")
    return request.param, task, arch, networks


def _count(benchmark, networks: int) -> int:
    """All `networks` when benchmarking; 4 for the one smoke run of `make test`."""
    return 4 if benchmark.disabled else networks


def test_stacked_leave_one_out_training(benchmark, case) -> None:
    label, task, arch, networks = case
    benchmark.group = f"loo-networks-{label}"
    train = task.splits().train
    removed = torch.arange(-1, _count(benchmark, networks) - 1)
    params = benchmark.pedantic(
        lambda: train_stacked(tabular_model(arch, train.x.shape[1], 2), train, removed, RECIPE),
        rounds=3,
        iterations=1,
    )
    benchmark.extra_info["networks"] = len(removed)
    assert next(iter(params.values())).shape[0] == len(removed)


def test_one_by_one_leave_one_out_training(benchmark, case) -> None:
    label, task, arch, networks = case
    benchmark.group = f"loo-networks-{label}"
    train = task.splits().train
    count = _count(benchmark, networks)

    def one_by_one() -> list[torch.nn.Module]:
        return [
            train_sequential(tabular_model(arch, train.x.shape[1], 2), train, i, RECIPE)
            for i in range(-1, count - 1)
        ]

    nets = benchmark.pedantic(one_by_one, rounds=2, iterations=1)
    benchmark.extra_info["networks"] = count
    assert len(nets) == count


@pytest.fixture(scope="module")
def adult_2000() -> tuple[list, tuple]:
    """Dense layers of N and its 2,000 leave-one-out 2x50 networks on adult, and the
    table's one-hot groups (the record domain the mechanism certifies)."""
    torch.set_num_threads(1)
    task = make_task("adult", {"subsample": 2000, "arch": "2x50"}, "<perf>")
    train = task.splits().train
    d = train.x.shape[1]
    stacked = leave_one_out(tabular_model("2x50", d, 2), train, RECIPE, progress=True)
    arch = tabular_model("2x50", d, 2)
    layers = [
        dense_layers(arch, {k: v[i] for k, v in stacked.items()}, d) for i in range(len(train) + 1)
    ]
    return layers, one_hot_groups(task)


@pytest.mark.timeout(3600)
@pytest.mark.benchmark(group="idp-db-adult-2x50-2000")
@pytest.mark.parametrize("variant", ["full", "diff"])
def test_idp_decision_bounds_adult_2000(benchmark, request, variant: str) -> None:
    """Both classes' iDP-DB at the shipped work budgets (root node per MILP, at most 4
    MILPs per class): the paper's full LUCID beside the per-network differential bounds."""
    if benchmark.disabled:
        pytest.skip("minutes of setup: run with `make bench-perf`")
    layers, groups = request.getfixturevalue("adult_2000")
    budgets = {"node_limit": 1, "max_milps": 4, "time_limit": 300.0, "groups": groups}

    def both_classes() -> list[float]:
        return [
            differential_bound(layers[0], layers[1:], c, **budgets).bound
            if variant == "diff"
            else decision_bound(layers[0], layers[1:], c, variant=variant, **budgets).bound
            for c in (0, 1)
        ]

    bounds = benchmark.pedantic(both_classes, rounds=1, iterations=1)
    benchmark.extra_info["bounds"] = bounds
    assert all(b > float("-inf") for b in bounds)
