"""Soundness of modified PTR (posthoc-ptr) and the ldp-embedding baseline."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from scipy.stats import binomtest

from bench.certify.audit.core import audit_mechanism
from bench.certify.lipschitz.local import ReluMLP, build_milp, local_lipschitz, operator_norms
from bench.core.errors import ConfigError
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.protocols import FitContext
from bench.run.plan import code_files
from bench.suite.read import make_task
from mechanisms.posthoc import mechanism as posthoc_mechanism
from mechanisms.posthoc.decisions import CertifierState
from mechanisms.posthoc.mechanism import LDPEmbedding, PosthocPTR
from mechanisms.posthoc.models import contrastive_loss, variant_parts
from mechanisms.posthoc.ptr import (
    Certifier,
    PTRConfig,
    abstain_threshold,
    certify_region,
    compute_phi,
    default_r_max,
    phi_noise_scale,
    ptr_test,
    release_scale,
)
from tests.bench.certify.lipschitz.test_local_lipschitz import random_net

TINY = {"vae_epochs": 2, "obf_epochs": 2, "n_calib": 4, "finetune_epochs": 1, "solver": "highs"}


def test_formulas() -> None:
    assert release_scale(3.0, 2.0, 0.5) == pytest.approx(3.0 * 0.5 / 2.0)
    assert phi_noise_scale(2.0, 0.5) == pytest.approx(0.25)
    assert abstain_threshold(2.0, 0.05, 0.5) == pytest.approx(math.log(20) * 0.5 / 2.0)
    # phi = R_max / 2 clears the threshold by 4 noise scales
    eps, delta, r = 1.0, 0.05, 0.5
    assert default_r_max(eps, delta, r) / 2 - abstain_threshold(eps, delta, r) == pytest.approx(
        4 * phi_noise_scale(eps, r)
    )
    # large eps: the search interval [R, R_max] stays non-empty
    assert default_r_max(50.0, 0.05, 0.1) == pytest.approx(0.2)
    assert PTRConfig(50.0, 0.05, 0.1, 1.0, default_r_max(50.0, 0.05, 0.1)).levels >= 1
    with pytest.raises(ConfigError):
        PTRConfig(1.0, 0.05, 0.5, delta_p=-1.0, r_max=2.0)
    with pytest.raises(ConfigError):
        PTRConfig(1.0, 0.05, 0.5, delta_p=1.0, r_max=0.4)


def _net_and_cfg(delta_p_factor: float) -> tuple[ReluMLP, np.ndarray, PTRConfig]:
    net = random_net([4, 6, 6, 4], 21)
    c = np.random.default_rng(21).uniform(-1, 1, 4)
    at_r = local_lipschitz(net, c, 0.2, "l1", solver="highs").upper
    cfg = PTRConfig(
        2.0,
        0.05,
        0.2,
        delta_p=at_r * delta_p_factor,
        r_max=default_r_max(2.0, 0.05, 0.2),
        solver="highs",
    )
    return net, c, cfg


def test_phi_is_the_largest_certified_grid_radius() -> None:
    """2 phi is a grid radius where L <= DeltaP (checked by an independent full MILP), and the
    next grid point up has L > DeltaP: phi is exactly what Alg. 1 defines, on the grid."""
    net, c, cfg = _net_and_cfg(1.3)
    res = compute_phi(net, c, cfg)
    assert res.exact and res.phi > 0
    rho = 2 * res.phi
    assert any(rho == pytest.approx(cfg.grid_radius(j)) for j in range(cfg.last + 1))
    assert build_milp(net, c, rho, "l1").solve(solver="highs").bound <= cfg.delta_p * (1 + 1e-6)
    step = (cfg.r_max - cfg.radius) / cfg.last
    assert step <= cfg.radius
    if rho < cfg.r_max:
        above = build_milp(net, c, rho + step, "l1").solve(solver="highs")
        assert above.incumbent is not None and above.incumbent > cfg.delta_p


def test_phi_is_zero_when_the_proposal_fails_at_r() -> None:
    net, c, cfg = _net_and_cfg(0.9)
    assert compute_phi(net, c, cfg).phi == 0.0


def test_grid_lookup() -> None:
    cfg = PTRConfig(2.0, 0.05, 0.2, 1.0, default_r_max(2.0, 0.05, 0.2))
    assert cfg.grid_radius(0) == cfg.radius and cfg.grid_radius(cfg.last) == pytest.approx(
        cfg.r_max
    )
    for s in [*np.linspace(-1.0, cfg.r_max + 1.0, 997).tolist(), cfg.grid_radius(5)]:
        j = cfg.first_point_above(s)
        if s >= cfg.r_max:
            assert j is None
            continue
        assert j is not None and cfg.grid_radius(j) > s
        assert j == 0 or cfg.grid_radius(j - 1) <= s


@pytest.mark.parametrize("factor", [0.9, 1.05, 1.3, 3.0])
def test_one_decision_equals_alg1_bisection(factor: float) -> None:
    """ptr_test's single decision releases exactly when phi + Z > ln(1/delta) R / eps with
    phi from the bisection, for every noise value Z (so the test has Alg. 1's law)."""
    net, c, cfg = _net_and_cfg(factor)
    phi = compute_phi(net, c, cfg)
    assert phi.exact
    thr = abstain_threshold(cfg.eps, cfg.delta, cfg.radius)
    shared = Certifier(net, c, cfg)
    noises = np.linspace(thr - cfg.r_max / 2 - 0.1, thr + 0.1, 61).tolist()
    noises += [thr - phi.phi, thr - phi.phi + 1e-9, thr - phi.phi - 1e-9]
    for z in noises:
        fresh = ptr_test(Certifier(net, c, cfg), z)
        assert fresh.released == (phi.phi + z > thr), (z, phi.phi)
        assert ptr_test(shared, z).released == fresh.released  # memoised decisions agree


def test_region_certificate_is_sound_and_decides_covered_boxes() -> None:
    """The region's certified constant bounds the Jacobian norm at every point of the grown
    box; with DeltaP above it, covered boxes are decided without a MILP."""
    net = random_net([4, 6, 6, 4], 21)
    rng = np.random.default_rng(5)
    z_train = rng.uniform(-1, 1, (50, 4))
    cfg = PTRConfig(2.0, 0.05, 0.2, 1e6, default_r_max(2.0, 0.05, 0.2), solver="highs")
    region = certify_region(net, z_train, cfg)
    assert region.feasible
    lo, hi = z_train.min(0) - cfg.r_max, z_train.max(0) + cfg.r_max
    points = rng.uniform(lo, hi, (2000, 4))
    assert operator_norms(net.jacobians(points), "l1").max() <= region.lipschitz
    cert = Certifier(net, z_train[0], cfg, region)
    assert cert.feasible(cfg.last) and cert.milps == 0
    assert not region.covers(hi + 1.0, cfg.radius)  # outside: the per-query path decides
    tight = PTRConfig(2.0, 0.05, 0.2, 1e-3, cfg.r_max, solver="highs")
    assert not certify_region(net, z_train, tight).feasible


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[PosthocPTR, object]:
    task = make_task("mnist", {"n_train": 400, "n_aux": 50, "n_test": 50}, "<test>")
    cache = ArtifactCache(Path(tmp_path_factory.mktemp("cache")))
    mech = PosthocPTR(eps=10.0, R=0.05, variant="arl-c-n", **TINY)
    mech.fit(task, task.splits(), FitContext(0, cache))
    return mech, task


def test_release_noise_scale_guarantee_and_bottom(fitted: tuple[PosthocPTR, object]) -> None:
    mech, task = fitted
    assert mech.noise().kind == "laplace"
    assert mech.noise().scale == pytest.approx(mech.delta_p * 0.05 / 10.0)
    vals = mech.calibration["values"]
    assert mech.delta_p == pytest.approx(vals.mean() + 3 * vals.std())
    g = mech.guarantee()
    assert g.notion == "reconstruction" and g.distance == "linf/embedding"
    assert g.params == {"eps": 20.0, "delta": 0.025, "radius": 0.05}
    x = task.splits().test.x[:3]  # type: ignore[attr-defined]
    rel = mech.release(x, torch.Generator().manual_seed(1))
    thr = abstain_threshold(10.0, 0.05, 0.05)
    z = mech.vae(x).detach().double().numpy()
    phi = torch.tensor([compute_phi(mech.relu_net, row, mech.cfg).phi for row in z])
    assert torch.equal(rel.released, phi + rel.meta["test_noise"].double() > thr)
    assert torch.all(rel.meta["ptr_exact"] == 1)
    # the released values are f(g(x)) + Laplace(scale): residuals have mean |.| = scale
    many = mech.release(x[:1].expand(4000, -1, -1, -1).clone(), torch.Generator().manual_seed(2))
    resid = (many.values - mech.encoder()(x[:1]).detach())[many.released]
    assert resid.abs().mean().item() == pytest.approx(mech.noise().scale, rel=0.05)
    assert mech.predict(rel).shape == (3, 10)


def test_utility_row_reports_the_proposal_inputs(fitted: tuple[PosthocPTR, object]) -> None:
    """Fig. 3's quantity on the row: the mean certified local Lipschitz constant over the
    calibration embeddings (with its CI), DeltaP = mean + 3 std, and the exact fraction."""
    mech, task = fitted
    metrics = mech.claim_metrics(task, task.splits())  # type: ignore[arg-type]
    vals = mech.calibration["values"]
    lip = metrics["local_lipschitz"]
    assert lip.n == len(vals) == TINY["n_calib"]
    assert lip.value == pytest.approx(vals.mean())
    assert lip.ci[0] <= lip.value <= lip.ci[1]
    assert metrics["delta_p"].value == pytest.approx(vals.mean() + 3 * vals.std())
    assert metrics["delta_p"].value >= lip.value
    assert metrics["lipschitz_exact"].value == 1.0  # tiny nets: every MILP solved exactly


def test_never_releases_when_the_proposal_fails_except_with_prob_delta_over_2(
    fitted: tuple[PosthocPTR, object],
) -> None:
    """With DeltaP below every local Lipschitz constant, L(x, R) > DeltaP and phi = 0, so a
    release happens only when Lap(R/eps) > ln(1/delta) R/eps: probability delta/2 exactly."""
    mech, task = fitted
    cfg, region = mech.cfg, mech.region
    mech.cfg = PTRConfig(cfg.eps, cfg.delta, cfg.radius, 1e-6, cfg.r_max, solver="highs")
    mech.region = certify_region(mech.relu_net, np.zeros((1, mech.relu_net.in_dim)), mech.cfg)
    mech._certifiers = {}
    try:
        x = task.splits().test.x[:1].expand(20000, -1, -1, -1).clone()  # type: ignore[attr-defined]
        rel = mech.release(x, torch.Generator().manual_seed(3))
        thr = abstain_threshold(cfg.eps, cfg.delta, cfg.radius)
        assert not mech.region.feasible
        assert torch.equal(rel.released, rel.meta["test_noise"] > thr)  # phi = 0 exactly
        k = int(rel.released.sum())
        assert binomtest(k, len(x), cfg.delta / 2, alternative="greater").pvalue > 1e-3
        assert binomtest(k, len(x), cfg.delta / 2).pvalue > 1e-4  # and it is delta/2, not less
    finally:
        mech.cfg, mech.region = cfg, region
        mech._certifiers = {}


def test_audit_tests_ptr_own_steps_in_embedding_space(
    fitted: tuple[PosthocPTR, object],
) -> None:
    """The claim is over l_inf in embedding space: the audit tests PTR's own steps there
    (mechanisms/posthoc/audit.py), on the claim's scale, and a real fit passes."""
    mech, task = fitted
    result = audit_mechanism(mech, task, 0, n_draws=20_000, n_select=5_000)  # type: ignore[arg-type]
    assert result.audited and result.passed, result.summary()
    assert result.statistic.startswith("PTR") and "embedding pair" in result.pair
    assert result.claimed_eps == 20.0 and result.delta == 0.025
    assert 0.0 < result.eps_lb <= result.eps_detectable and result.n_draws == 20_000


def test_bad_params_are_one_line_errors() -> None:
    for bad in (
        {"variant": "xyz"},
        {"eps": 0},
        {"delta": 1.5},
        {"R": -1},
        {"solver": "cplex"},
        {"solver": "auto"},
        {"alpha": 1.0},
        {"r_max": 0.1, "R": 0.5},
        {"n_calib": 0},
        {"node_limit": 0},
        {"split_boxes": -1},
        {"time_limit": -1.0},
        {"time_limit": "10"},
    ):
        with pytest.raises(ConfigError):
            PosthocPTR(**bad)
    with pytest.raises(ConfigError):
        variant_parts("arl-q")
    assert variant_parts("arl-c-n") == {"arl", "c", "n"} and variant_parts("encoder") == set()


def test_no_wall_clock_reaches_the_solver_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same job, same numbers: by default every Lipschitz search PTR runs (the region
    certificate, each query's decision) stops on its node budget, never on a clock."""
    import mechanisms.posthoc.ptr as ptr_module

    assert PosthocPTR().clock() is None and PosthocPTR(time_limit=5.0).clock() == 5.0
    seen: list[float | None] = []
    real = ptr_module.local_lipschitz

    def spy(*args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        seen.append(kwargs["time_limit"])  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ptr_module, "local_lipschitz", spy)
    net, c, cfg = _net_and_cfg(1.0)
    cfg = dataclasses.replace(cfg, split_boxes=0)
    certify_region(net, c[None], cfg)
    Certifier(net, c, cfg)._decide(cfg.radius)  # L = DeltaP at R: no cheap test settles it
    assert len(seen) == 2 and seen == [None, None]
    certify_region(net, c[None], dataclasses.replace(cfg, time_limit=2.0))
    assert seen[-1] == 40.0  # the region's budget is 20 queries'


def test_contrastive_loss_pulls_same_and_pushes_different() -> None:
    y = torch.tensor([0, 0, 1])
    close = torch.tensor([[0.0, 0.0], [0.1, 0.0], [30.0, 0.0]], requires_grad=True)
    far = torch.tensor([[0.0, 0.0], [5.0, 0.0], [1.0, 0.0]])
    assert contrastive_loss(close, y, 25.0) < contrastive_loss(far, y, 25.0)
    contrastive_loss(close, y, 25.0).backward()
    assert close.grad is not None and torch.isfinite(close.grad).all()


def test_ldp_embedding_scale(tmp_path: Path) -> None:
    task = make_task("mnist", {"n_train": 300, "n_aux": 50, "n_test": 50}, "<test>")
    mech = LDPEmbedding(eps=5.0, vae_epochs=2, epochs=1)
    mech.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path)))
    x = task.splits().test.x
    z = mech.encoder()(x).detach()
    z_train = mech.encoder()(task.splits().train.x).detach()
    sens = float((z_train.max(0).values - z_train.min(0).values).sum())
    assert mech.noise().scale == pytest.approx(sens / 5.0, rel=1e-5)
    # clipped: any two inputs' embeddings differ by at most the sensitivity in l_1
    assert float((z[:, None] - z[None]).abs().sum(-1).max()) <= sens + 1e-5
    assert mech.guarantee().params == {"eps": 5.0}


def test_jobs_releasing_the_same_queries_share_their_decisions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The utility and attack jobs of a setting release the same queries with the same
    stream: the first computes the certified decisions, the next loads them from the cache,
    and both releases, and the certifiers they leave behind, are the ones the per-query
    path gives (mechanisms/posthoc/decisions.py)."""
    import mechanisms.posthoc.mechanism as mech_module

    builds: list[int] = []
    real = mech_module.decide_queries

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        builds.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(mech_module, "decide_queries", counted)
    task = make_task("mnist", {"n_train": 400, "n_aux": 50, "n_test": 50}, "<test>")
    x = task.splits().test.x[:12].clone()  # type: ignore[attr-defined]
    x[6:] = x[:6]  # repeated queries inside one call share one certifier

    def job() -> tuple[PosthocPTR, object]:
        mech = PosthocPTR(eps=2.0, R=0.05, variant="arl-c-n", **TINY)
        mech.fit(task, task.splits(), FitContext(0, ArtifactCache(tmp_path)))
        return mech, mech.release(x, torch.Generator().manual_seed(4))

    (first, rel1), (second, rel2) = job(), job()
    assert len(builds) == 1  # the second job loaded the first one's decisions
    assert torch.equal(rel1.values, rel2.values) and torch.equal(rel1.released, rel2.released)
    for key in rel1.meta:
        assert torch.equal(rel1.meta[key].nan_to_num(-1), rel2.meta[key].nan_to_num(-1))
    assert rel1.meta["test_radius"].isfinite().any()  # some queries needed a decision

    # The per-query path (fresh certifiers, one per distinct embedding) decides the same.
    rows = first.vae(x).detach().double().numpy()
    noise = rel1.meta["test_noise"].double().tolist()
    certs: dict[bytes, Certifier] = {}
    direct = [
        ptr_test(
            certs.setdefault(r.tobytes(), Certifier(first.relu_net, r, first.cfg, first.region)), z
        )
        for r, z in zip(rows, noise, strict=True)
    ]
    assert torch.equal(rel1.released, torch.tensor([d.released for d in direct]))
    states = {k: CertifierState.of(c) for k, c in certs.items()}
    for mech in (first, second):
        assert {k: CertifierState.of(c) for k, c in mech._certifiers.items()} == states

    # A later call that repeats an embedding goes on from the restored certifiers, in-process.
    again1 = first.release(x, torch.Generator().manual_seed(5))
    again2 = second.release(x, torch.Generator().manual_seed(5))
    assert len(builds) == 1 and torch.equal(again1.released, again2.released)


def test_cached_certificates_are_keyed_by_the_code_below_them() -> None:
    """A cached DeltaP, region certificate or decision must be rebuilt when any code it was
    computed with changes, helpers of helpers included (the pattern search and the ReLU
    bounds are imported by the Lipschitz search, not named in the recipe)."""
    covered = {f.as_posix() for f in code_files(*posthoc_mechanism._CODE)}
    for helper in ("lipschitz/relu.py", "lipschitz/patterns.py", "lipschitz/split.py", "milp.py"):
        assert any(path.endswith(f"bench/certify/{helper}") for path in covered), helper
