"""LUCID on one-hot encoded tables: the iDP decision bound over valid records (each one-hot
group a single 1) stays above the brute-force maximum on every record, is never looser than
the bound over the whole box, and the served answer is that of the canonical record."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from bench.certify.idp.bound import decision_bound, dense_layers
from bench.certify.idp.diff import differential_bound
from bench.core.errors import ConfigError
from bench.plugin.protocols import DataSplit
from bench.plugin.registry import TASKS
from bench.tasks.tabular import tabular_model
from mechanisms.label_only.base import canonical_records
from mechanisms.label_only.leave_one_out import LooRecipe, leave_one_out, stacked_logits

GROUPS = ((1, 2, 3),)  # input 0 numeric, inputs 1-3 one category of three


def _records(n: int, seed: int) -> DataSplit:
    """A numeric feature and a three-way category whose label effects differ."""
    g = torch.Generator().manual_seed(seed)
    numeric = torch.rand(n, 1, generator=g)
    category = torch.randint(0, 3, (n,), generator=g)
    x = torch.cat([numeric, torch.nn.functional.one_hot(category, 3).float()], 1)
    shift = torch.tensor([-0.3, 0.0, 0.3])[category]
    y = (numeric[:, 0] + shift + 0.3 * torch.randn(n, generator=g) > 0.5).long()
    return DataSplit(x, y)


@pytest.fixture(scope="module")
def grouped_networks():
    arch = tabular_model("2x6", 4, 2)
    stacked = leave_one_out(arch, _records(16, 0), LooRecipe(lr=0.5, epochs=60, batch_size=8))
    n = next(iter(stacked.values())).shape[0]
    layers = [dense_layers(arch, {k: v[i] for k, v in stacked.items()}, 4) for i in range(n)]
    return arch, stacked, layers


def _record_grid_max(arch, stacked, target: int) -> float:
    """Brute force over valid records (numeric on a 2,001-point grid, every category):
    N's largest confidence in `target` where some leave-one-out network leaves it."""
    numeric = torch.linspace(0, 1, 2001)
    rows = [
        torch.cat([numeric[:, None], torch.eye(3)[c].expand(len(numeric), 3)], 1) for c in range(3)
    ]
    x = torch.cat(rows)
    with torch.no_grad():
        logits = stacked_logits(arch, stacked, x)
    leaks = (logits[1:].argmax(-1) != target).any(0)
    margin = logits[0][:, target] - logits[0][:, 1 - target]
    return float(margin[leaks].max()) if leaks.any() else -math.inf


@pytest.mark.parametrize(("target", "variant"), list(itertools.product([0, 1], ["HM", "full"])))
def test_record_domain_bound_is_sound_and_no_looser_than_the_box(
    grouped_networks, target: int, variant: str
) -> None:
    arch, stacked, layers = grouped_networks
    truth = _record_grid_max(arch, stacked, target)
    assert math.isfinite(truth)  # the leave-one-out networks do disagree on some record
    on_records = decision_bound(layers[0], layers[1:], target, variant=variant, groups=GROUPS)
    on_box = decision_bound(layers[0], layers[1:], target, variant=variant)
    assert on_records.bound >= truth - 1e-6
    assert on_records.bound <= on_box.bound + 1e-6


@pytest.mark.parametrize("target", [0, 1])
def test_differential_bound_on_records_is_sound_and_no_looser_than_the_box(
    grouped_networks, target: int
) -> None:
    arch, stacked, layers = grouped_networks
    truth = _record_grid_max(arch, stacked, target)
    on_records = differential_bound(layers[0], layers[1:], target, groups=GROUPS)
    on_box = differential_bound(layers[0], layers[1:], target)
    assert on_records.complete and on_records.bound >= truth - 1e-6
    # Unbudgeted, both end in an exact MILP of the worst network: the hull is in the box.
    assert on_records.bound <= on_box.bound + 1e-6


def test_record_domain_tightens_the_bound_somewhere(grouped_networks) -> None:
    """The box holds inputs no record reaches (a category at 0.5 with another at 0.5, or
    none at all): restricting to the records' hull must pay off on this toy."""
    _, _, layers = grouped_networks
    gaps = [
        decision_bound(layers[0], layers[1:], c, variant="HM").bound
        - decision_bound(layers[0], layers[1:], c, variant="HM", groups=GROUPS).bound
        for c in (0, 1)
    ]
    assert max(gaps) > 1e-3


@pytest.mark.parametrize("groups", [((0, 1), (1, 2)), ((),), ((3, 4),)])
def test_malformed_one_hot_groups_are_refused(grouped_networks, groups) -> None:
    _, _, layers = grouped_networks
    with pytest.raises(ConfigError, match="one-hot groups"):
        decision_bound(layers[0], layers[1:], 0, variant="H", groups=groups)


def test_canonical_records_keep_records_and_map_other_queries_to_one() -> None:
    """Records are fixed points; other queries are clamped to [0, 1] and each one-hot group
    set to its largest entry."""
    records = _records(20, 1).x
    assert torch.equal(canonical_records(records, GROUPS), records)
    query = torch.tensor([[0.4, 0.2, 0.7, 0.1], [0.9, 0.0, 0.0, 0.0], [1.7, -3.0, 0.0, 2.0]])
    expected = torch.tensor([[0.4, 0.0, 1.0, 0.0], [0.9, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 1.0]])
    assert torch.equal(canonical_records(query, GROUPS), expected)


def test_adult_declares_its_one_hot_groups() -> None:
    task = TASKS.get("adult")(subsample=300)
    x = task.splits().train.x
    groups = task.one_hot_groups()
    assert len(groups) == 8  # workclass ... native-country
    covered = sorted(j for g in groups for j in g)
    assert len(covered) == len(set(covered)) and len(covered) == x.shape[1] - 6
    for group in groups:
        assert torch.equal(x[:, list(group)].sum(1), torch.ones(len(x)))


def test_lucid_answers_a_query_as_its_canonical_record(tmp_path) -> None:
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext
    from bench.plugin.registry import MECHANISMS

    task = TASKS.get("credit")(subsample=30, arch="2x6", train_epochs=100, n_test=50)
    lucid = MECHANISMS.get("lucid")(
        eps=0.0, variant="H", node_limit=1000, max_milps=16, time_limit=0.0, budget=0.0
    )
    lucid.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path)))
    assert lucid.groups == task.one_hot_groups() and lucid.groups
    records = task.splits().test.x
    blurred = records.clone()
    for group in lucid.groups:  # every category's 1 becomes 0.6, the rest 0.1: same argmax
        index = list(group)
        blurred[:, index] = 0.1 + 0.5 * records[:, index]
    numeric = [j for j in range(records.shape[1]) if all(j not in g for g in lucid.groups)]
    blurred[:, numeric] = torch.where(records[:, numeric] >= 1.0, 5.0, records[:, numeric])
    first = lucid.release(records, torch.Generator().manual_seed(0))
    again = lucid.release(blurred, torch.Generator().manual_seed(1))
    assert torch.equal(first.values, again.values)
    assert torch.equal(first.meta["noised"], again.meta["noised"])
