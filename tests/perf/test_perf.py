"""Performance benchmarks (pytest-benchmark), compared side by side in one run:
`make bench-perf`. In the normal test run they execute once, as smoke tests."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.metrics.reconstruction import mse, ssim
from bench.metrics.stats import aggregate_seeds, summarize
from bench.tasks.images import FashionMNIST
from mechanisms.noise.input_noise import GaussInput, LDPImage

X = torch.rand(256, 1, 28, 28, generator=torch.Generator().manual_seed(0))
TASK = FashionMNIST(n_train=10, n_aux=10, n_test=10)
TASK.splits()


@pytest.mark.benchmark(group="release-256")
@pytest.mark.parametrize("cls", [GaussInput, LDPImage], ids=["gauss-input", "ldp-image"])
def test_release_throughput(benchmark, cls) -> None:
    mech = cls(eps=2.0)
    mech._noise = mech.calibrate(TASK)
    out = benchmark(lambda: mech.release(X, torch.Generator().manual_seed(1)))
    assert out.values.shape == X.shape


@pytest.mark.benchmark(group="metrics-256")
@pytest.mark.parametrize("metric", [mse, ssim], ids=["mse", "ssim"])
def test_metric_cost(benchmark, metric) -> None:
    noisy = X + 0.1 * torch.randn(X.shape, generator=torch.Generator().manual_seed(2))
    args = (X, noisy) if metric is mse else (X, noisy, 1.0)
    assert len(benchmark(metric, *args)) == len(X)


@pytest.mark.benchmark(group="bootstrap")
def test_hierarchical_bootstrap_cost(benchmark) -> None:
    rng = np.random.default_rng(0)
    per_seed = [summarize(rng.normal(size=1000)) for _ in range(5)]
    result = benchmark(aggregate_seeds, per_seed)
    assert result.ci[0] < result.value < result.ci[1]


@pytest.mark.benchmark(group="optimization-attack-32-images")
@pytest.mark.parametrize("batch_size", [32, 1], ids=["batched", "one-at-a-time"])
def test_optimization_attack_throughput(benchmark, batch_size, tmp_path) -> None:
    """Images/s of the optimisation attack: 32 images, 100 steps each, batched vs serial."""
    from attacks.optimization import OptimizationAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext
    from mechanisms.noise.identity import Identity

    mech = Identity()
    mech._noise = None
    attack = OptimizationAttack(max_steps=100, batch_size=batch_size, solver="iterative")
    attack.fit(mech, TASK, TASK.splits().aux, FitContext(0, ArtifactCache(tmp_path)))
    release = mech.release(X[:32], torch.Generator().manual_seed(0))
    out = benchmark.pedantic(attack.reconstruct, args=(release,), rounds=3, iterations=1)
    assert out.shape == X[:32].shape


@pytest.mark.benchmark(group="optimization-attack-32-images")
@pytest.mark.slow
def test_prior_attack_throughput(benchmark, tmp_path) -> None:
    """Images/s of the learned-prior attack on the same 32 images, beside the optimisation
    attack. It runs its default reconstruction budget: 4 restarts x 200 latent steps through
    the VAE decoder, then 300 refinement steps. Its VAE is trained before timing, on TASK's
    10 aux images (the minimum of 400 updates): that cost is paid once per (task, aux,
    seed), and every mechanism shares it. Timed on one thread, the count a job runs with
    (bench.core.threads). On a loaded 2-core machine, two threads made its rounds 3x to 40x slower
    and much noisier (OpenMP workers wait on each other over ~1,500 small steps)."""
    from attacks.vae_prior import PriorAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext
    from mechanisms.noise.identity import Identity

    mech = Identity()
    mech._noise = None
    attack = PriorAttack()
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        attack.fit(mech, TASK, TASK.splits().aux, FitContext(0, ArtifactCache(tmp_path)))
        release = mech.release(X[:32], torch.Generator().manual_seed(0))
        out = benchmark.pedantic(attack.reconstruct, args=(release,), rounds=3, iterations=1)
    finally:
        torch.set_num_threads(before)
    assert out.shape == X[:32].shape


@pytest.mark.benchmark(group="map-attack-gauss-input-64-images")
@pytest.mark.parametrize("solver", ["auto", "iterative"], ids=["closed-form", "descent"])
def test_map_attack_closed_form_against_descent(benchmark, solver, tmp_path) -> None:
    """The Gaussian-prior MAP through an identity encoder: one Cholesky solve against the
    default 500-step descent, on the same 64 noisy images (the answers agree; see
    tests/attacks/test_attack_suite.py)."""
    from attacks.optimization import MAPAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext

    mech = GaussInput(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(TASK)
    attack = MAPAttack(solver=solver)
    attack.fit(mech, TASK, TASK.splits().aux, FitContext(0, ArtifactCache(tmp_path)))
    release = mech.release(X[:64], torch.Generator().manual_seed(0))
    out = benchmark.pedantic(attack.reconstruct, args=(release,), rounds=3, iterations=1)
    assert out.shape == X[:64].shape


INVERTER_SCHEDULES = {
    "residual-default": {},
    "residual-mse+ssim": {"loss": "mse+ssim"},
    "conv-width16-batch32": {"decoder": "conv"},
    "conv-width32-batch64": {
        "decoder": "conv",
        "width": 32,
        "batch_size": 64,
        "epochs": 30,
        "patience": 5,
    },
}


@pytest.mark.benchmark(group="inverter-fit-gauss-input-200-aux")
@pytest.mark.parametrize("schedule", list(INVERTER_SCHEDULES), ids=list(INVERTER_SCHEDULES))
@pytest.mark.slow
def test_inverter_fit_new_against_old_schedule(benchmark, schedule, tmp_path) -> None:
    """Training the inverter on 200 aux releases: the residual decoder (the default, and
    trained on MSE + SSIM) beside the conv decoder with its two earlier training schedules
    (docs/reproductions/inverter-schedule)."""
    if benchmark.disabled and schedule != "residual-default":
        pytest.skip("timed only with benchmarks enabled (make bench-perf)")
    from attacks.inverter import InverterAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext

    task = FashionMNIST(n_train=10, n_aux=200, n_test=10)
    mech = GaussInput(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(task)
    aux = task.splits().aux
    attack = InverterAttack(**INVERTER_SCHEDULES[schedule])

    def fit() -> float:
        attack.fit(mech, task, aux, FitContext(0, ArtifactCache(tmp_path)))
        return attack.val_mse

    assert benchmark.pedantic(fit, rounds=1, iterations=1) > 0


@pytest.mark.benchmark(group="tv-fit-gauss-input")
@pytest.mark.parametrize("tune", [True, False], ids=["lambda-tuned-on-aux", "lambda-fixed"])
def test_tv_fit_tuned_against_fixed_lambda(benchmark, tune, tmp_path) -> None:
    """The tv attack's fit: choosing its weight on 32 aux queries (one batched descent over
    the 8-weight grid) beside the fixed weight, which fits nothing."""
    from attacks.optimization import TVAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext

    task = FashionMNIST(n_train=10, n_aux=64, n_test=10)
    mech = GaussInput(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(task)
    attack = TVAttack(max_steps=100, tune_lambda=tune)

    def fit() -> float:
        attack.fit(mech, task, task.splits().aux, FitContext(0, ArtifactCache(tmp_path)))
        return float(attack.weight)

    assert benchmark.pedantic(fit, rounds=1, iterations=1) >= 0


@pytest.mark.benchmark(group="map-prior-fit-1000-aux")
@pytest.mark.parametrize("shrinkage", ["oas", "ledoit-wolf", "fixed"])
def test_map_prior_fit_by_shrinkage(benchmark, shrinkage, tmp_path) -> None:
    """Fitting map's full-covariance prior on 1,000 aux images: the shrinkage chosen from the
    data (OAS, Ledoit-Wolf) beside the previous fixed amount."""
    from attacks.optimization import MAPAttack
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.protocols import FitContext

    task = FashionMNIST(n_train=10, n_aux=1000, n_test=10)
    mech = GaussInput(eps=2.0, r=0.5)
    mech._noise = mech.calibrate(task)
    attack = MAPAttack(shrinkage=shrinkage)

    def fit() -> float:
        attack.fit(mech, task, task.splits().aux, FitContext(0, ArtifactCache(tmp_path)))
        return attack.tuned()["prior_shrinkage"]

    assert 0 <= benchmark.pedantic(fit, rounds=1, iterations=1) <= 1
