"""Audits of mechanisms' own randomised tests: Posthoc PTR's release noise and ⊥ decision
(mechanisms/posthoc/audit.py) and label-only iDP access's keep rate
(mechanisms/label_only/audit.py). Correct mechanisms pass in >= 19 of 20 seeds, planted
under-noised ones are refuted in >= 19 of 20.

The stand-ins run the REAL release() of PosthocPTR and NaiveIDP on tiny hand-built parts
(an identity embedder, a 2-3 unit obfuscator, a stack of tiny networks) instead of fitting
a VAE or training leave-one-out networks, so 20 seeded audits stay cheap."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from bench.certify.audit.core import audit_mechanism
from bench.certify.lipschitz.local import ReluMLP
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import DataSplit, FitContext, Guarantee, Splits, Task
from bench.plugin.registry import MECHANISMS, TASKS
from mechanisms.label_only.leave_one_out import StackMember
from mechanisms.label_only.lucid import NaiveIDP
from mechanisms.posthoc.mechanism import PosthocPTR
from mechanisms.posthoc.ptr import PTRConfig, default_r_max, release_scale

SEEDS = range(20)
EPS, DELTA, R = 1.0, 0.05, 0.5  # per step: the claim is (2, 0.025, 0.5)


class EmbeddingTask(Task):
    """Inputs are the embeddings themselves (the stand-in's embedder is the identity); every
    test input is `anchor`, so the audit's pairs sit where the test is chosen to matter."""

    name = "test-embedding"
    version = "1"
    modality = "vector"
    data_range = (-10.0, 10.0)
    num_classes = 2

    def __init__(self, anchor: list[float]) -> None:
        self.input_shape = (len(anchor),)
        self.anchor = torch.tensor([anchor])

    def splits(self) -> Splits:
        part = DataSplit(self.anchor.repeat(4, 1), torch.zeros(4, dtype=torch.long))
        return Splits(part, part, part)

    def model(self, arch: str = "default") -> nn.Module:
        return nn.Linear(self.input_shape[0], 2)


class HalfTestNoise(PosthocPTR):
    """Runs its PTR test at 2 eps (Laplace scale R / (2 eps), threshold to match) while
    claiming eps per step: the ⊥ decision with 0.5x its Laplace scale."""

    def guarantee(self) -> Guarantee:
        g = super().guarantee()
        return Guarantee(g.notion, {**g.params, "eps": g.params["eps"] / 2}, g.distance)


def _relu_net(w1: list, b1: list, w2: list, b2: list) -> nn.Sequential:
    net = nn.Sequential(nn.Linear(len(w1[0]), len(w1)), nn.ReLU(), nn.Linear(len(w1), len(w2)))
    with torch.no_grad():
        for layer, w, b in ((net[0], w1, b1), (net[2], w2, b2)):
            layer.weight.copy_(torch.tensor(w))
            layer.bias.copy_(torch.tensor(b))
    return net.requires_grad_(False)


def stand_in(
    f: nn.Sequential, delta_p: float, noise_factor: float = 1.0, test_eps_factor: float = 1.0
) -> PosthocPTR:
    """PosthocPTR on obfuscator f with the identity embedder, assembled without fit: its own
    release(), certifier and claim, the release noise scaled by `noise_factor` and (for
    test_eps_factor 2) the test run at 2 eps by HalfTestNoise."""
    test_eps = EPS * test_eps_factor
    cls = HalfTestNoise if test_eps_factor != 1.0 else PosthocPTR
    mech = cls(eps=test_eps, delta=DELTA, R=R, solver="highs")
    mech.vae, mech.f, mech.relu_net = nn.Identity(), f, ReluMLP.from_module(f)
    mech.delta_p, mech.region, mech._certifiers = delta_p, None, {}
    mech.cfg = PTRConfig(
        test_eps, DELTA, R, delta_p, default_r_max(test_eps, DELTA, R), solver="highs"
    )
    mech.scale = release_scale(delta_p, EPS, R) * noise_factor
    return mech


# Linear on the audited region (the hidden ReLUs never switch): L(f, any box) = 4 exactly,
# reached on the corner pair, so the release step sits at its claim.
W = [[1.0, 2.0], [-1.0, 0.5], [0.5, -1.0]]
LINEAR = _relu_net(
    [[1.0, 0.0], [0.0, 1.0]],
    [100.0, 100.0],
    W,
    [-100.0 * sum(row) for row in W],
)
LINEAR_TASK = EmbeddingTask([0.3, -0.2])
# Slope 0.5 below 0, 2.5 above, DeltaP 1: phi(z) ~ -z / 2 for z < 0, so pairs within R
# differ in phi by ~R / 2 and the ⊥ decision carries the signal.
KINK = _relu_net([[1.0], [-1.0]], [0.0, 0.0], [[2.5, -0.5]], [0.0])
KINK_TASK = EmbeddingTask([-1.6])


pytestmark = pytest.mark.usefixtures("one_thread")


def _caught(mech: Any, task: Task, **options: Any) -> list[bool]:
    results = [audit_mechanism(mech, task, seed, **options) for seed in SEEDS]
    assert all(r.audited for r in results), results[0].reason
    return [not r.passed for r in results]


PTR_SIZE = {"n_random": 1, "n_worst": 1}


def test_ptr_release_noise_correct_passes_and_under_noised_is_caught() -> None:
    correct = _caught(stand_in(LINEAR, 4.0 * 1.001), LINEAR_TASK, **PTR_SIZE)
    assert sum(correct) <= 1, correct
    for factor in (0.5, 0.8):
        plant = stand_in(LINEAR, 4.0 * 1.001, noise_factor=factor)
        caught = _caught(plant, LINEAR_TASK, **PTR_SIZE)
        assert sum(caught) >= 19, (factor, caught)


def test_ptr_release_audit_reports_power_and_the_claim_scale() -> None:
    result = audit_mechanism(stand_in(LINEAR, 4.0 * 1.001), LINEAR_TASK, 0, **PTR_SIZE)
    assert result.audited and result.passed and result.statistic.startswith("PTR release")
    assert result.claimed_eps == 2 * EPS and result.delta == DELTA / 2
    # eps_lb and eps_ideal are 2 x the step's bound: near (and below) the claim of 2.
    assert 1.6 < result.eps_lb <= 2.0 and 1.6 < result.eps_ideal <= 2.0
    assert result.power >= 0.95 and result.n_draws >= 100_000


def test_ptr_bottom_decision_correct_passes_and_half_laplace_scale_is_caught() -> None:
    correct = [audit_mechanism(stand_in(KINK, 1.0), KINK_TASK, s, **PTR_SIZE) for s in SEEDS]
    assert all(r.audited and r.statistic.startswith("PTR ⊥") for r in correct)
    assert sum(not r.passed for r in correct) <= 1
    caught = _caught(stand_in(KINK, 1.0, test_eps_factor=2.0), KINK_TASK, **PTR_SIZE)
    assert sum(caught) >= 19, caught


def test_ptr_release_not_following_its_attributes_is_not_audited() -> None:
    class Rogue(PosthocPTR):
        def release(self, x: torch.Tensor, generator: torch.Generator):  # type: ignore[override]
            out = super().release(x, generator)
            out.values = out.values * 0.5
            return out

    mech = stand_in(LINEAR, 4.0 * 1.001)
    mech.__class__ = Rogue
    result = audit_mechanism(mech, LINEAR_TASK, 0, **PTR_SIZE)
    assert not result.audited and "replay" in result.reason


# ----------------------------------------------------------------------- label-only


class TinyTable(Task):
    """Records in [0, 1]^3 without one-hot groups."""

    name = "test-table"
    version = "1"
    modality = "tabular"
    input_shape = (3,)
    data_range = (0.0, 1.0)
    num_classes = 3

    def splits(self) -> Splits:
        x = torch.rand(20, 3, generator=torch.Generator().manual_seed(0))
        part = DataSplit(x, torch.zeros(20, dtype=torch.long))
        return Splits(part, part, part)

    def model(self, arch: str = "default") -> nn.Module:
        return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 3))


TABLE = TinyTable()


class Overclaiming(NaiveIDP):
    """Runs the exponential mechanism at `factor` x the eps it claims."""

    factor = 1.0

    def guarantee(self) -> Guarantee:
        g = super().guarantee()
        return Guarantee(g.notion, {**g.params, "eps": g.params["eps"] / self.factor}, g.distance)


def naive_idp(factor: float = 1.0, eps: float = 1.0) -> NaiveIDP:
    """NaiveIDP on N and 5 perturbed 'leave-one-out' networks (they disagree somewhere),
    assembled without training; it runs at factor x eps and claims eps."""
    arch = TABLE.model()
    g = torch.Generator().manual_seed(1)
    base = {k: torch.randn(v.shape, generator=g) for k, v in arch.named_parameters()}
    stacked = {
        k: torch.stack([v] + [v + 0.3 * torch.randn(v.shape, generator=g) for _ in range(5)])
        for k, v in base.items()
    }
    cls = type("Planted", (Overclaiming,), {"factor": factor})
    mech = cls(eps=eps * factor)
    mech.num_classes, mech.memory, mech.groups, mech.arch = 3, {}, (), arch
    mech.stacked = stacked
    mech.model = StackMember(arch, {k: v[0] for k, v in stacked.items()})
    return mech


@pytest.mark.slow
def test_label_keep_rate_correct_passes_and_overclaimed_is_caught() -> None:
    # LUCID's exponential mechanism loses eps / 2 on a disagreeing pair: running it at
    # 2.5x (loss 1.25 eps) or 4x (2 eps) the claim is what refutes the claim.
    correct = _caught(naive_idp(), TABLE)
    assert sum(correct) <= 1, correct
    for factor in (2.5, 4.0):
        caught = _caught(naive_idp(factor), TABLE)
        assert sum(caught) >= 19, (factor, caught)


def test_label_audit_reports_power_and_leaves_memory_alone() -> None:
    mech = naive_idp()
    x = TABLE.splits().test.x
    first = mech.release(x, torch.Generator().manual_seed(0)).values
    result = audit_mechanism(mech, TABLE, 0)
    assert result.audited and result.passed and result.power >= 0.95
    # A correct mechanism's bound sits near eps / 2, below the ideal at the claim.
    assert 0.2 < result.eps_lb < 0.6 < result.eps_ideal <= 1.0
    again = mech.release(x, torch.Generator().manual_seed(5)).values
    assert torch.equal(first, again)  # the audit's fresh memories left the real one intact


def test_label_audit_says_why_eps_0_and_no_claim_are_not_audited() -> None:
    result = audit_mechanism(naive_idp(eps=0.0), TABLE, 0)
    assert not result.audited and result.passed and "0-iDP" in result.reason


@pytest.fixture(scope="module")
def credit(tmp_path_factory: pytest.TempPathFactory):
    task = TASKS.get("credit")(subsample=20, arch="2x6", train_epochs=100, n_test=100)
    return task, FitContext(0, ArtifactCache(Path(tmp_path_factory.mktemp("cache"))))


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("naive-idp", {"eps": 1.0}),
        ("lucid", {"eps": 1.0, "variant": "HMB", "max_milps": 4, "node_limit": 200}),
    ],
)
def test_real_label_only_fit_is_audited_and_passes(credit, name: str, params: dict) -> None:
    task, ctx = credit
    mech = MECHANISMS.get(name)(**params)
    mech.fit(task, task.splits(), ctx)
    result = audit_mechanism(mech, task, 0)
    assert result.audited and result.passed, result.summary()
    assert result.n_draws > 0 and math.isfinite(result.eps_lb)
    unprotected = MECHANISMS.get("label-only")()
    unprotected.fit(task, task.splits(), ctx)
    assert not audit_mechanism(unprotected, task, 0).audited
