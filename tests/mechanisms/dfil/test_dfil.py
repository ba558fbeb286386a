"""dFIL-calibrated split inference: the gaussian task, calibration, the bounds each attack is
scored against, and what the dFIL paper shows (Fig. 2 on synthetic data, the Table 1 and
Table 4 trends on Fashion-MNIST at small scale)."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest
import torch

from attacks.inverter import InverterAttack
from attacks.optimization import MAPAttack, OptimizationAttack
from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.plugin.registry import MECHANISMS, TASKS
from bench.run.kinds.reconstruction import utility_metrics
from bench.tasks.images import FashionMNIST
from bench.tasks.synthetic import GaussianTask
from mechanisms.dfil.dp_encoder import DPEncoder
from mechanisms.dfil.mechanism import DFIL
from tests.conftest import ROOT

TAU2 = GaussianTask.tau**2
TARGETS = (1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0)


pytestmark = pytest.mark.usefixtures("one_thread")


def _ctx(root: Path, seed: int = 0) -> FitContext:
    return FitContext(seed=seed, cache=ArtifactCache(root))


# ------------------------------------------------------------------ gaussian task


def test_gaussian_task_is_registered_with_its_exact_prior() -> None:
    task = TASKS.get("gaussian")(n_train=50, n_aux=20, n_test=10)
    s = task.splits()
    assert s.train.x.shape == (50, 784) and s.test.x.shape == (10, 784)
    assert task.modality == "vector" and task.num_classes == 2
    assert task.data_range == pytest.approx((-0.25, 0.25))
    mean, var = task.gaussian_prior()
    assert torch.equal(mean, torch.zeros(784)) and torch.allclose(var, torch.full((784,), TAU2))
    assert s.train.x.std().item() == pytest.approx(0.05, rel=0.02)
    assert torch.equal(s.train.y, (s.train.x.sum(1) > 0).long())
    # Fixed splits: the same data on every construction, train independent of n_test.
    again = GaussianTask(n_train=50, n_aux=20, n_test=99).splits()
    assert torch.equal(again.train.x, s.train.x)


def test_gaussian_task_refuses_empty_splits() -> None:
    with pytest.raises(ConfigError):
        GaussianTask(n_train=0)


# ------------------------------------------------------- Fig. 2: synthetic bounds


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, float]]:
    """Per 1/dFIL target: both attacks' MSE and the bounds bench scores them against.

    A 1,000-dim projection (the suite uses the paper's 10,000): with orthonormal columns the
    bounds depend on M^T M = I only. 16 samples x 784 coordinates put the MSE of the
    efficient estimator within about 1.3% (one standard error) of its expectation.
    """
    task = GaussianTask(n_train=200, n_aux=50, n_test=16, train_epochs=1)
    splits = task.splits()
    x = splits.test.x
    root = tmp_path_factory.mktemp("synthetic")
    rows = []
    for target in TARGETS:
        mech = DFIL(inv_dfil=target, proj_dim=1000)
        mech.fit(task, splits, _ctx(root))
        release = mech.release(x, torch.Generator().manual_seed(1))
        row: dict[str, float] = {"target": target, "sigma": mech.noise().scale}
        for attack in (OptimizationAttack(), MAPAttack()):
            attack.fit(mech, task, splits.aux, _ctx(root, 1))
            x_hat = attack.reconstruct(release)
            bounds = mech.bound_metrics(attack, x, x_hat, release)
            row[f"{attack.name}_mse"] = float((x_hat - x).pow(2).mean())
            row[f"{attack.name}_bound"] = bounds["bound_mse"].value
            row[f"{attack.name}_valid"] = bounds["bound_validity"].value
        rows.append(row)
    return rows


@pytest.mark.slow
def test_calibration_sets_sigma_for_the_target(synthetic) -> None:
    for row in synthetic:  # Tr(M^T M) = d, so sigma^2 = target exactly
        assert row["sigma"] == pytest.approx(math.sqrt(row["target"]), rel=1e-6)


def test_the_unbiased_attack_meets_cramer_rao_within_10_percent_everywhere(synthetic) -> None:
    for row in synthetic:
        assert row["optimization_bound"] == pytest.approx(row["target"], rel=1e-6)
        ratio = row["optimization_mse"] / row["optimization_bound"]
        assert 0.9 <= ratio <= 1.1, row
        assert row["optimization_valid"] >= 0.9, row


def test_map_breaks_cramer_rao_yet_respects_van_trees_and_approaches_tau2(synthetic) -> None:
    for row in synthetic:
        van_trees = 1 / (1 / row["target"] + 1 / TAU2)
        assert row["map_bound"] == pytest.approx(van_trees, rel=1e-6)
        assert row["map_valid"] == 1.0, row
        assert row["map_mse"] >= 0.95 * van_trees, row
        if row["target"] >= 1e-2:  # prior-dominated: far below the unbiased floor
            assert row["map_mse"] < 0.5 * row["target"], row
    assert synthetic[-1]["map_mse"] == pytest.approx(TAU2, rel=0.05)


# ---------------------------------------------------------- bounds per attack


def test_bound_metrics_pick_cramer_rao_or_van_trees_and_scale_with_queries(tmp_path) -> None:
    task = GaussianTask(n_train=100, n_aux=50, n_test=8, train_epochs=1)
    mech = DFIL(inv_dfil=0.5, proj_dim=800)
    mech.fit(task, task.splits(), _ctx(tmp_path))
    x = task.splits().test.x
    release = mech.release(x, torch.Generator().manual_seed(0))
    x_hat = torch.zeros_like(x)
    cr = mech.bound_metrics(OptimizationAttack(), x, x_hat, release)
    assert cr["bound_mse"].value == pytest.approx(0.5) and cr["bound_mse"].n == 8
    cr4 = mech.bound_metrics(OptimizationAttack(queries=4), x, x_hat, release)
    assert cr4["bound_mse"].value == pytest.approx(0.125)  # 4 releases: 4x the information
    for attack in (MAPAttack(), InverterAttack()):
        vt = mech.bound_metrics(attack, x, x_hat, release)
        assert vt["bound_mse"].value == pytest.approx(1 / (2 + 400))
    # Guessing the prior mean has MSE ~ tau^2 > van Trees: respected; it is biased, so the
    # Cramer-Rao statement (0.5 per sample) is violated by every sample.
    assert mech.bound_metrics(MAPAttack(), x, x_hat, release)["bound_validity"].value == 1.0
    assert cr["bound_validity"].value == 0.0
    claim = mech.guarantee()
    assert claim.notion == "dfil" and claim.params["inv_dfil"] == 0.5
    assert claim.params["prior_term"] == pytest.approx(400.0)
    # What each bound rests on: van Trees with the exact Gaussian prior term is a theorem for
    # every attack; Cramer-Rao needs an unbiased attack, which gradient inversion is not
    # proven to be.
    assert mech.bound_basis(MAPAttack()) | {"why": ""} == {
        "bound": "van-trees",
        "basis": "theorem",
        "why": "",
    }
    assert mech.bound_basis(OptimizationAttack())["basis"] == "estimate"


def test_smoothed_targets_draw_from_the_distribution_the_prior_term_is_of(tmp_path) -> None:
    """targets = "smoothed": the attacked inputs are x + N(0, smoothing^2), and van Trees on
    an image task (score-matching prior term) is then labelled an estimate for them, as on
    raw inputs, with the reason saying which inputs it speaks of."""
    x = torch.rand(64, 1, 28, 28)
    raw = DFIL(inv_dfil=1.0)
    assert raw.attack_inputs(x, torch.Generator().manual_seed(0)) is x
    smoothed = DFIL(inv_dfil=1.0, targets="smoothed", smoothing=0.25)
    out = smoothed.attack_inputs(x, torch.Generator().manual_seed(0))
    again = smoothed.attack_inputs(x, torch.Generator().manual_seed(0))
    assert torch.equal(out, again) and out.shape == x.shape
    assert (out - x).std().item() == pytest.approx(0.25, rel=0.02)
    assert abs((out - x).mean().item()) < 0.01
    smoothed._exact_prior = False
    basis = smoothed.bound_basis(MAPAttack())
    assert basis["basis"] == "estimate" and "smoothed by N(0, 0.25²)" in basis["why"]
    with pytest.raises(ConfigError, match="'targets' must be one of raw, smoothed"):
        DFIL(inv_dfil=1.0, targets="noisy")


def test_release_noise_has_the_calibrated_scale(tmp_path) -> None:
    task = GaussianTask(n_train=100, n_aux=50, n_test=64, train_epochs=1)
    mech = DFIL(inv_dfil=0.01, proj_dim=1000)
    mech.fit(task, task.splits(), _ctx(tmp_path))
    x = task.splits().test.x
    noise = mech.release(x, torch.Generator().manual_seed(3)).values - mech.encoder()(x)
    assert noise.std().item() == pytest.approx(0.1, rel=0.01)  # 64,000 draws


@pytest.mark.parametrize(
    "params",
    [
        {"inv_dfil": 0.0},
        {"inv_dfil": float("inf")},
        {"split": "middle-ish"},
        {"noise_aware": 1},
        {"compression": -1},
        {"compression": 2.5},
        {"snr_reg": -0.1},
        {"calib_dirs": 1},
        {"arch": "vgg"},
        {"smoothing": 0.0},
    ],
)
def test_dfil_refuses_bad_parameters(params) -> None:
    with pytest.raises(ConfigError):
        DFIL(**params)


def test_dfil_refuses_encoder_options_on_a_fixed_projection(tmp_path) -> None:
    task = GaussianTask(n_train=20, n_aux=10, n_test=5, train_epochs=1)
    with pytest.raises(ConfigError, match="fixed"):
        DFIL(compression=4).fit(task, task.splits(), _ctx(tmp_path))


def test_dp_encoder_calibrations_follow_rdp_and_the_dfil_match() -> None:
    mech = DPEncoder(inv_dfil=0.01, clip=2.0)
    mech._diam_sq, mech._input_dim = 1.0, 784
    sigma = mech.calibrate(mean_trace=3.0)
    eps = math.log(1 + 1 / (4 * 0.01))  # Eq. 7 of App. A.5 set equal to the target
    assert mech._eps == pytest.approx(eps)
    assert sigma == pytest.approx(2 * 2.0 / math.sqrt(eps))  # eps = 2 (2C)^2 / (2 sigma^2)
    matched = DPEncoder(inv_dfil=0.01, clip=2.0, match="dfil")
    matched._diam_sq, matched._input_dim = 1.0, 784
    sigma = matched.calibrate(mean_trace=3.0)
    assert sigma == pytest.approx(math.sqrt(0.01 * 3.0 / 784))
    assert matched._eps == pytest.approx(16.0 / sigma**2)
    assert "dp-encoder" in MECHANISMS.names() and "dfil" in MECHANISMS.names()
    with pytest.raises(ConfigError):
        DPEncoder(match="worst")


# ------------------------------------------- Tables 1 and 4 trends, small scale


@pytest.fixture(scope="module")
def fmnist() -> FashionMNIST:
    task = FashionMNIST(n_train=2000, n_aux=100, n_test=500, train_epochs=2)
    task.splits()
    return task


def _accuracy(mech, task, root: Path) -> float:
    mech.fit(task, task.splits(), _ctx(root))
    test = task.splits().test
    release = mech.release(test.x, torch.Generator().manual_seed(0))
    return utility_metrics(task, mech, release, test.y, "test")["accuracy"].value


@pytest.mark.slow
def test_optimisations_raise_accuracy_at_equal_inverse_dfil(fmnist, tmp_path) -> None:
    # Early split at 1/dFIL = 10 (measured: 0.17 without, 0.60 with).
    plain = _accuracy(DFIL(inv_dfil=10.0, split="early"), fmnist, tmp_path)
    tuned = DFIL(inv_dfil=10.0, split="early", noise_aware=True, compression=4, snr_reg=0.1)
    assert _accuracy(tuned, fmnist, tmp_path) > plain + 0.2


@pytest.mark.slow
def test_dfil_beats_the_dp_encoder_at_equal_unbiased_mse_bound(fmnist, tmp_path) -> None:
    # Late split, bound 1 per pixel: eps = ln(1.25) for the RDP encoder (measured: dfil about
    # 0.59, dp-encoder 0.10, chance).
    dfil = _accuracy(DFIL(inv_dfil=1.0, split="late"), fmnist, tmp_path)
    dp = _accuracy(DPEncoder(inv_dfil=1.0, split="late"), fmnist, tmp_path)
    assert dfil > dp + 0.3


def test_noise_aware_training_tunes_the_server_behind_a_fixed_projection(tmp_path) -> None:
    task = GaussianTask(n_train=300, n_aux=20, n_test=200, train_epochs=2)
    plain, tuned = (
        DFIL(inv_dfil=1e-3, proj_dim=900),
        DFIL(inv_dfil=1e-3, proj_dim=900, noise_aware=True),
    )
    for mech in (plain, tuned):
        mech.fit(task, task.splits(), _ctx(tmp_path))
    assert torch.equal(plain.encoder().weight, tuned.encoder().weight)  # same seed, same M
    assert tuned.noise().scale == pytest.approx(plain.noise().scale)
    before = dict(plain._server.named_parameters())
    changed = [not torch.equal(p, before[n]) for n, p in tuned._server.named_parameters()]
    assert any(changed)


@pytest.mark.parametrize(
    "split, shape", [("early", (64, 32, 32)), ("middle", (128, 16, 16)), ("late", (256, 8, 8))]
)
def test_resnet18_splits_sit_after_the_stem_block_4_and_block_6(split, shape) -> None:
    from mechanisms.dfil.smooth_nets import split_model

    model = split_model("resnet18", (3, 32, 32), 10, (0.5,) * 3, (0.25,) * 3, split).eval()
    x = torch.rand(2, 3, 32, 32)
    assert model.client(x).shape == (2, *shape)
    assert model(x).shape == (2, 10)
    assert not any(isinstance(m, (torch.nn.ReLU, torch.nn.MaxPool2d)) for m in model.modules())


def test_split_inference_accuracy_on_gaussian_data_follows_the_noise(tmp_path) -> None:
    # Label = sign of the sum; least-squares decoding adds N(0, t) per coordinate, so the best
    # accuracy is 1 - arctan(sqrt(t) / tau) / pi: 0.937 at t = 1e-4, 0.648 at t = 1e-2.
    task = GaussianTask(n_train=1000, n_aux=20, n_test=500)
    test = task.splits().test
    for target in (1e-4, 1e-2):
        mech = DFIL(inv_dfil=target, proj_dim=800)
        mech.fit(task, task.splits(), _ctx(tmp_path))
        release = mech.release(test.x, torch.Generator().manual_seed(0))
        accuracy = utility_metrics(task, mech, release, test.y, "test")["accuracy"].value
        best = 1 - math.atan(math.sqrt(target) / GaussianTask.tau) / math.pi
        assert accuracy == pytest.approx(best, abs=0.05)


# ------------------------------------------------------------------ privacy audit


@pytest.fixture(scope="module")
def small_fmnist() -> FashionMNIST:
    return FashionMNIST(n_train=300, n_aux=50, n_test=50, train_epochs=1)


@pytest.fixture(scope="module")
def audit_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One artifact cache for the audit tests: the split model and the prior term are shared."""
    return tmp_path_factory.mktemp("audit")


@pytest.fixture(scope="module")
def dp_encoder(small_fmnist, audit_root) -> DPEncoder:
    mech = DPEncoder(split="late", inv_dfil=1.0, clip=1.0, calib_samples=16)
    mech.fit(small_fmnist, small_fmnist.splits(), _ctx(audit_root))
    return mech


def test_dp_encoder_claims_the_exact_ldp_of_its_gaussian_release(small_fmnist, dp_encoder) -> None:
    from bench.plugin.accounting import analytic_gaussian_delta

    claim = dp_encoder.guarantee()
    assert claim.notion == "ldp" and claim.distance == "any pair of inputs"
    eps_rdp = math.log(1.25)  # Eq. 7 at diam 1, bound 1
    assert claim.params["rdp_eps"] == pytest.approx(eps_rdp)
    sigma = dp_encoder.noise().scale
    assert sigma == pytest.approx(2 / math.sqrt(eps_rdp))
    # (eps, delta) of a Gaussian mechanism with sensitivity 2C (Balle & Wang 2018, Thm 8).
    eps, delta = claim.params["eps"], claim.params["delta"]
    assert delta == 1e-5
    assert analytic_gaussian_delta(sigma, eps, 2.0) <= delta
    assert analytic_gaussian_delta(sigma, 0.999 * eps, 2.0) > delta
    # Every encoding lies in the l2 ball of radius C: the sensitivity the claim relies on.
    with torch.no_grad():
        e = dp_encoder.encoder()(small_fmnist.splits().test.x)
    assert e.flatten(1).norm(dim=1).max().item() <= 1.0 + 1e-5


def test_the_audit_passes_the_dp_encoder_and_catches_it_with_too_little_noise(
    small_fmnist, dp_encoder
) -> None:
    from bench.certify.audit.core import audit_mechanism

    claimed = dp_encoder.guarantee().params["eps"]
    options = {"n_draws": 5_000, "n_select": 1_000}
    honest = audit_mechanism(dp_encoder, small_fmnist, 0, **options)
    assert honest.audited and honest.passed, honest.summary()
    assert 0 < honest.eps_lb <= claimed
    # The same claim with a twentieth of the noise is refuted.
    broken = copy.copy(dp_encoder)
    broken._sigma = dp_encoder._sigma / 20
    broken.dp_eps = lambda: claimed  # type: ignore[method-assign]
    refuted = audit_mechanism(broken, small_fmnist, 0, **options)
    assert refuted.audited and not refuted.passed, refuted.summary()


def test_dfil_declares_no_dp_claim_and_is_not_audited(small_fmnist, audit_root) -> None:
    from bench.certify.audit.core import audit_mechanism

    mech = DFIL(inv_dfil=10.0, split="late", calib_samples=16)
    mech.fit(small_fmnist, small_fmnist.splits(), _ctx(audit_root))
    claim = mech.guarantee()
    assert claim.notion == "dfil" and "eps" not in claim.params
    assert claim.params["prior_term"] > 0 and claim.params["prior_term_se"] >= 0
    result = audit_mechanism(mech, small_fmnist, 0)
    assert result.passed and not result.audited and "notion 'dfil'" in result.reason


# ------------------------------------------------------------------- job identity


@pytest.mark.parametrize("task_cls", [GaussianTask, FashionMNIST])
def test_the_job_code_version_covers_every_module_of_the_dfil_stack(task_cls) -> None:
    from bench.run.plan import code_files_of

    for mech in (DFIL, DPEncoder):
        files = {p.resolve() for p in code_files_of(task_cls, mech, OptimizationAttack)}
        needed = [
            "bench/certify/fisher/trace.py",
            "bench/certify/fisher/bounds.py",
            "bench/certify/fisher/score_matching.py",
            "mechanisms/dfil/split.py",
            "mechanisms/dfil/smooth_nets.py",
            "mechanisms/dfil/training.py",
            "bench/run/kinds/reconstruction.py",
            "bench/metrics/stats.py",
            "mechanisms/dfil/mechanism.py" if mech is DFIL else "mechanisms/dfil/dp_encoder.py",
        ]
        if mech is DPEncoder:
            needed.append("bench/plugin/accounting.py")  # its Gaussian accounting
        if task_cls is FashionMNIST:  # the image split models normalise with its module
            needed.append("bench/plugin/models.py")
        missing = [n for n in needed if (ROOT / n).resolve() not in files]
        assert not missing, (mech.name, task_cls.name, missing)


def test_subsampled_calibration_agrees_with_the_exact_mean_trace(small_fmnist, audit_root) -> None:
    exact = DFIL(split="late", calib_samples=16, calib_dirs=0)
    sampled = DFIL(split="late", calib_samples=16, calib_dirs=64)
    for mech in (exact, sampled):
        mech.fit(small_fmnist, small_fmnist.splits(), _ctx(audit_root))
    assert torch.equal(exact.encoder()[1].weight, sampled.encoder()[1].weight)  # same model
    assert abs(sampled._mean_tr - exact._mean_tr) <= 4 * sampled._mean_tr_se
    assert sampled._mean_tr_se > exact._mean_tr_se > 0  # direction sampling adds error
    # sigma^2 is proportional to the mean trace (sigma = sqrt(target * mean Tr / d)).
    ratio = (sampled.noise().scale / exact.noise().scale) ** 2
    assert ratio == pytest.approx(sampled._mean_tr / exact._mean_tr, rel=1e-9)


# ----------------------------------------------------------------- end to end

E2E_SUITE = """
name = "dfil-e2e"
version = "1"
seeds = 1
attack_samples = 8

[[task]]
name = "gaussian"
n_train = 100
n_aux = 50
n_test = 8
train_epochs = 1

[[mechanism]]
name = "dfil"
params = { inv_dfil = 0.01, proj_dim = 800 }

[[attack]]
name = "optimization"
params = { max_steps = 100 }

[[attack]]
name = "map"
params = { max_steps = 100 }
"""


@pytest.mark.slow
def test_bench_run_scores_every_dfil_attack_row_and_plots_the_bounds(tmp_path) -> None:
    import json

    from tests.conftest import run_cli, tiny_run_args

    suite = tmp_path / "dfil-e2e.toml"
    suite.write_text(E2E_SUITE)
    run_cli(*tiny_run_args(suite), cwd=tmp_path, check=True)
    rows = json.loads((tmp_path / "lb" / "leaderboard.json").read_text())["rows"]
    attack_rows = [r for r in rows if r["attack"] in ("optimization", "map")]
    assert len(attack_rows) == 2
    for row in attack_rows:
        assert {"bound_mse", "bound_validity"} <= set(row["metrics"]), row
        target = row["params"]["inv_dfil"]
        expected = target if row["attack"] == "optimization" else 1 / (1 / target + 1 / TAU2)
        assert row["metrics"]["bound_mse"]["value"] == pytest.approx(expected, rel=1e-4)
    assert all(r["guarantee"]["notion"] == "dfil" for r in rows)
    bases = {r["attack"]: r["guarantee"]["bound"]["basis"] for r in attack_rows}
    assert bases == {"optimization": "estimate", "map": "theorem"}
    # One 1/dFIL level is no sweep: the bounds plot needs >= 3 levels (test_plots_dfil.py
    # beside this file draws one), and a page never shows a one-point curve.
    assert not (tmp_path / "lb" / "plots" / "gaussian_dfil_bounds.png").exists()
