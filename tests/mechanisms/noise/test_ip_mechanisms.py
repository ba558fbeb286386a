"""The IP mechanisms on real Fashion-MNIST at small scale: noise calibrated to its formula
(and measured on releases), certified Lipschitz constants, noise fine-tuning that really
trains, attacks on output releases, and utility that depends on r/eps only."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from attacks.inverter import InverterAttack
from attacks.optimization import OptimizationAttack
from bench.certify.audit.core import audit_mechanism
from bench.certify.lipschitz.global_bounds import lipschitz_upper_bound
from bench.core.errors import ConfigError
from bench.metrics.stats import summarize
from bench.plugin.accounting import analytic_gaussian_delta, gaussian_sigma
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext, Guarantee, Mechanism, NoiseModel
from bench.plugin.training import predict_scores
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput
from mechanisms.noise.output_noise import GaussOutput, LapOutput


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    task = FashionMNIST(n_train=1000, n_aux=200, n_test=500, train_epochs=2)
    return task, task.splits(), ArtifactCache(tmp_path_factory.mktemp("ip-cache"))


def _fit(env, cls: type[Mechanism], seed: int = 0, **params) -> Mechanism:
    task, splits, cache = env
    mech = cls(**params)
    mech.fit(task, splits, FitContext(seed, cache))
    return mech


def _draws(mech: Mechanism, env) -> torch.Tensor:
    """50,000 released noise values: releases of 5,000 inputs minus their clean logits."""
    x = env[1].test.x[:100].repeat(50, 1, 1, 1)
    release = mech.release(x, torch.Generator().manual_seed(11))
    return (release.values - predict_scores(mech.model, x)).flatten().double()


def test_lap_output_scale_is_r_l1_over_eps_and_its_noise_is_laplace(env) -> None:
    mech = _fit(env, LapOutput, eps=0.5, r=0.1)
    l1 = lipschitz_upper_bound(mech.model, (1, 28, 28), "l1").value
    assert mech.lipschitz.norm == "l1" and mech.lipschitz.value == pytest.approx(l1)
    assert l1 <= math.sqrt(10) * (1 + 1e-3)  # the SLL net: sqrt(m) * L2
    b = mech.noise().scale
    assert mech.noise().kind == "laplace" and b == pytest.approx(0.1 * l1 / 0.5, rel=1e-12)
    noise = _draws(mech, env).numpy()
    assert abs(noise).mean() == pytest.approx(b, rel=0.02)  # E|Lap(b)| = b
    assert stats.kstest(noise, "laplace", args=(0, b)).pvalue > 1e-3


@pytest.mark.parametrize(("eps", "rule"), [(0.5, "classic"), (2.0, "analytic")])
def test_gauss_output_sigma_follows_its_formula_and_its_noise_is_gaussian(
    env, eps: float, rule: str
) -> None:
    mech = _fit(env, GaussOutput, eps=eps, delta=1e-5, r=0.1)
    sensitivity = 0.1 * mech.lipschitz.value
    sigma = mech.noise().scale
    assert mech.lipschitz.norm == "l2" and mech.lipschitz.value <= 1 + 1e-3
    assert mech.calibration_rule == rule
    if rule == "classic":
        assert sigma == pytest.approx(math.sqrt(2 * math.log(1.25e5)) * sensitivity / eps)
    else:
        assert analytic_gaussian_delta(sigma, eps, sensitivity) <= 1e-5
        assert analytic_gaussian_delta(0.999 * sigma, eps, sensitivity) > 1e-5
    noise = _draws(mech, env).numpy()
    assert noise.std() == pytest.approx(sigma, rel=0.015)
    assert stats.kstest(noise / sigma, "norm").pvalue > 1e-3


def test_gauss_output_on_the_cnn_pays_its_large_certified_constant(env) -> None:
    mech = _fit(env, GaussOutput, model="cnn", eps=1.0, delta=1e-5, r=0.1)
    l2 = lipschitz_upper_bound(mech.model, (1, 28, 28), "l2").value
    assert l2 > 5  # a trained CNN (with Normalize's 1/std) is far from 1-Lipschitz
    assert mech.noise().scale == pytest.approx(gaussian_sigma(1.0, 1e-5, 0.1 * l2)[0])


def test_output_releases_are_noisy_logits_of_the_encoder(env) -> None:
    mech = _fit(env, GaussOutput, eps=2.0, r=0.1)
    x = env[1].test.x[:20]
    a = mech.release(x, torch.Generator().manual_seed(1))
    b = mech.release(x, torch.Generator().manual_seed(1))
    assert torch.equal(a.values, b.values) and a.values.shape == (20, 10)
    assert torch.equal(mech.predict(a), a.values)
    with torch.no_grad():
        clean = mech.encoder()(x)
    noise = a.values - clean
    assert 0.5 * mech.noise().scale < float(noise.std()) < 2 * mech.noise().scale


def test_attacks_run_on_output_releases(env) -> None:
    task, splits, cache = env
    mech = _fit(env, LapOutput, eps=1.0, r=0.1)
    release = mech.release(splits.test.x[:8], torch.Generator().manual_seed(2))
    for attack in (OptimizationAttack(max_steps=5), InverterAttack(epochs=1)):
        attack.fit(mech, task, splits.aux, FitContext(0, cache))
        assert attack.reconstruct(release).shape == (8, 1, 28, 28)


def _accuracy_per_sample(mech: Mechanism, env, seed: int) -> torch.Tensor:
    splits = env[1]
    release = mech.release(splits.test.x, torch.Generator().manual_seed(seed))
    return (mech.predict(release).argmax(1) == splits.test.y).double()


def test_gauss_input_finetuning_updates_weights_and_helps_on_noisy_inputs(env) -> None:
    clean = _fit(env, GaussInput, eps=0.5, delta=1e-5, r=0.1)
    tuned = _fit(env, GaussInput, eps=0.5, delta=1e-5, r=0.1, finetune=True)
    before, after = clean.model.state_dict(), tuned.model.state_dict()
    changed = [k for k in before if not torch.equal(before[k], after[k])]
    assert any("weight" in k for k in changed)
    assert set(changed) >= {k for k in before if k.endswith("weight")}  # every layer trained
    # Same noise draws for both: the fine-tuned model is clearly better on them.
    acc_clean = float(_accuracy_per_sample(clean, env, seed=3).mean())
    acc_tuned = float(_accuracy_per_sample(tuned, env, seed=3).mean())
    assert acc_tuned > acc_clean + 0.1
    # The cached clean model was not modified by fine-tuning.
    again = _fit(env, GaussInput, eps=0.5, delta=1e-5, r=0.1).model.state_dict()
    assert all(torch.equal(before[k], again[k]) for k in before)


def test_output_finetuning_trains_the_sll_net_and_recertifies_it(env) -> None:
    clean = _fit(env, GaussOutput, eps=0.5, r=0.1)
    tuned = _fit(env, GaussOutput, eps=0.5, r=0.1, finetune=True)
    before, after = clean.model.state_dict(), tuned.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert tuned.lipschitz.value <= 1 + 1e-3
    assert tuned.noise().scale == pytest.approx(clean.noise().scale, rel=1e-3)


def _agree(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Paired bootstrap 95% CI of the accuracy difference contains 0."""
    lo, hi = summarize((a - b).numpy()).ci
    return lo <= 0 <= hi


@pytest.mark.parametrize(
    ("cls", "extra", "pairs"),
    [
        (GaussOutput, {}, [(0.05, 0.25), (0.1, 0.5), (0.18, 0.9)]),  # classic: sigma ~ r/eps
        (LapOutput, {}, [(0.05, 0.5), (0.1, 1.0), (0.4, 4.0)]),  # b = r L1 / eps
        (GaussInput, {"model": "cnn"}, [(0.01, 0.25), (0.02, 0.5), (0.036, 0.9)]),
        (GaussOutput, {}, [(0.1, 1.0), (0.2, 2.0)]),  # analytic: sigma 7% apart
    ],
    ids=["gauss-output-classic", "lap-output", "gauss-input-classic", "gauss-output-analytic"],
)
def test_utility_depends_on_r_over_eps_only(env, cls, extra, pairs) -> None:
    mechs = [_fit(env, cls, r=r, eps=eps, **extra) for r, eps in pairs]
    scales = [m.noise().scale for m in mechs]
    if cls is GaussOutput and pairs[0][1] >= 1:
        # Analytic calibration is not a function of r/eps alone; it stays within 10% here.
        assert scales[1] / scales[0] == pytest.approx(1.069, abs=0.002)
    else:
        assert scales == pytest.approx([scales[0]] * len(scales), rel=1e-12)
    # Independent noise draws per row, as across leaderboard rows.
    acc = [_accuracy_per_sample(m, env, seed=20 + i) for i, m in enumerate(mechs)]
    assert all(_agree(acc[0], a) for a in acc[1:])


def test_utility_differs_when_r_over_eps_differs(env) -> None:
    # The r/eps test has power: four times the ratio is clearly worse at the same scale.
    base = _accuracy_per_sample(_fit(env, GaussOutput, r=0.1, eps=0.5), env, seed=20)
    wide = _accuracy_per_sample(_fit(env, GaussOutput, r=0.4, eps=0.5), env, seed=21)
    assert not _agree(base, wide) and float(base.mean()) > float(wide.mean())


AUDIT = {"n_select": 300, "n_draws": 3000}  # small: each draw is a forward pass of the net


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (GaussOutput, {"eps": 1.0, "r": 0.1}),
        (LapOutput, {"eps": 1.0, "r": 0.1}),
        (GaussInput, {"eps": 0.5, "r": 0.1, "model": "sll"}),
    ],
    ids=["gauss-output", "lap-output", "gauss-input"],
)
def test_privacy_audit_does_not_refute_the_claims(env, cls, params) -> None:
    result = audit_mechanism(_fit(env, cls, **params), env[0], 0, **AUDIT)
    assert result.audited and result.passed, result.summary()


class ChainedGaussOutput(GaussOutput):
    """gauss-output calibrated for (eps, delta, r) but claiming what chaining (Prop. 4)
    gives at k = 3: (3 eps, 3 e^(2 eps) delta, 3 r)."""

    def guarantee(self) -> Guarantee:
        eps, delta, r = (float(self.params[k]) for k in ("eps", "delta", "r"))
        chained = {"eps": 3 * eps, "delta": 3 * math.exp(2 * eps) * delta, "radius": 3 * r}
        return Guarantee("ip", chained, "l2/input")


class UnderpaidGaussOutput(GaussOutput):
    """gauss-output with a tenth of the calibrated noise: must be refuted."""

    def calibrate(self, lipschitz: float) -> NoiseModel:
        return NoiseModel("gaussian", super().calibrate(lipschitz).scale / 10)


def test_privacy_audit_accepts_the_chained_claim_and_refutes_too_little_noise(env) -> None:
    chained = audit_mechanism(_fit(env, ChainedGaussOutput, eps=0.5, r=0.1), env[0], 0, **AUDIT)
    assert chained.audited and chained.passed and chained.radius == pytest.approx(0.3)
    underpaid = audit_mechanism(_fit(env, UnderpaidGaussOutput, eps=1.0, r=0.1), env[0], 0, **AUDIT)
    assert not underpaid.passed, underpaid.summary()


def test_guarantees_declare_ip_with_their_norms() -> None:
    assert LapOutput(eps=2.0, r=0.3).guarantee().to_dict() == {
        "notion": "ip",
        "eps": 2.0,
        "delta": 0.0,
        "radius": 0.3,
        "distance": "l1/input",
    }
    g = GaussOutput(eps=0.5, delta=1e-6, r=0.2).guarantee()
    assert (g.notion, g.params, g.distance) == (
        "ip",
        {"eps": 0.5, "delta": 1e-6, "radius": 0.2},
        "l2/input",
    )
    assert GaussInput(model="sll", finetune=True).guarantee().distance == "l2/input"


@pytest.mark.parametrize(
    ("cls", "params"),
    [
        (GaussOutput, {"model": "resnet"}),
        (LapOutput, {"finetune": "yes"}),
        (GaussInput, {"model": "mlp"}),
        (LapOutput, {"delta": 1e-5}),  # pure: no delta
        (GaussOutput, {"r": 0.0}),
        (LapOutput, {"eps": -1.0}),
    ],
)
def test_bad_parameters_refused(cls, params) -> None:
    with pytest.raises(ConfigError):
        cls(**params)


def test_ip_fmnist_runs_the_papers_figure_points_with_every_attack() -> None:
    """The trimmed ip-fmnist suite: the points of Figs. 3-5 / Table 6 and the reference
    table's rows, all four attacks on each, 3 seeds, within ~350 jobs."""
    from bench.run.plan import expand
    from bench.suite.read import load_suite

    jobs = expand(load_suite("ip-fmnist"))
    assert len({j.hash for j in jobs}) == len(jobs) == 345
    assert {j.attack for j in jobs} == {None, "optimization", "tv", "map", "inverter"}
    settings = {
        (
            j.mechanism,
            j.params.get("model"),
            j.params.get("finetune"),
            j.params.get("eps"),
            j.params.get("r"),
        )
        for j in jobs
        if j.attack is None and j.seed == 0
    }
    assert len(settings) == 23
    fig34 = {(1.0, 0.01), (1.0, 0.1), (1.0, 0.2), (0.5, 0.1), (2.0, 0.1)}
    for curve in (
        ("gauss-input", "cnn", False),
        ("gauss-input", "cnn", True),
        ("gauss-output", "sll", False),
    ):
        assert {(e, r) for (*c, e, r) in settings if tuple(c) == curve} >= fig34, curve
    # the noise fine-tuning comparison on the SLL net's logits, beside the plain rows
    assert {(e, r) for m, k, f, e, r in settings if (m, k, f) == ("gauss-output", "sll", True)}
    # r/eps invariance partners of gauss-output on SLL: the same sigma on each branch
    gout = {(e, r) for m, k, f, e, r in settings if (m, k, f) == ("gauss-output", "sll", False)}
    assert {(0.25, 0.05), (0.5, 0.1)} <= gout and {(1.0, 0.1), (2.0, 0.2)} <= gout
    assert gaussian_sigma(0.25, 1e-5, 0.05) == gaussian_sigma(0.5, 1e-5, 0.1)
