"""Mechanisms `posthoc-ptr` (modified PTR on an obfuscator) and `ldp-embedding` (Laplace on
the beta-VAE embedding), after Singh et al. 2023 and its supplement's Table 1.

The networks train and serve on the job's device (bench.core.device); PTR's certificates (local
Lipschitz MILPs, the region certificate, each query's test) are solved on the CPU, from
CPU copies of the embeddings and weights."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from bench.certify import milp as milp_layer  # a module value: the job hash covers it
from bench.certify.lipschitz.local import OutNorm, ReluMLP, local_lipschitz
from bench.core.codeversion import code_digest
from bench.core.device import to_cpu, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import seeded_init
from bench.metrics import MetricSpec, register_metric
from bench.metrics.stats import scalar, summarize
from bench.plugin.accounting import check_privacy_params, laplace_scale
from bench.plugin.protocols import (
    FitContext,
    Guarantee,
    Mechanism,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.plugin.registry import register_mechanism
from mechanisms.posthoc.decisions import (
    as_decisions,
    decide_queries,
    queries_digest,
    run_query_tests,
)
from mechanisms.posthoc.models import (
    BENCH_RECIPE,
    BetaVAE,
    TrainingRecipe,
    Variant,
    classifier,
    finetune_classifier,
    train_obfuscator,
    train_vae,
)
from mechanisms.posthoc.ptr import (
    CertifiedRegion,
    Certifier,
    PTRConfig,
    QueryDecision,
    certify_region,
    default_r_max,
    phi_noise_scale,
    release_scale,
)

# The certification code a cached DeltaP, region or decision depends on; code_digest
# (bench.core.codeversion) follows their project imports (relu.py, patterns.py, ...), so an edit
# below them re-keys it.
_CODE = (
    "mechanisms.posthoc.models",
    "mechanisms.posthoc.ptr",
    "bench.certify.lipschitz.split",
    "bench.certify.lipschitz.local",
    "bench.certify.milp",
)

# The local sensitivity behind PTR's proposal, on every posthoc-ptr utility row (paper Fig. 3:
# a larger ARL weight alpha lowers it). Reference values: they describe the obfuscator, and
# lower is what ARL aims for.
LOCAL_LIPSCHITZ = register_metric(
    MetricSpec(
        "local_lipschitz",
        "lower",
        "reference",
        "posthoc-ptr: mean certified local Lipschitz constant L(f, N(z, R)) (l_inf -> l_1) "
        "over the calibration training embeddings",
    )
)
DELTA_P = register_metric(
    MetricSpec(
        "delta_p",
        "lower",
        "reference",
        "posthoc-ptr: proposed local sensitivity bound DeltaP = mean + 3 std of those constants",
    )
)
LIPSCHITZ_EXACT = register_metric(
    MetricSpec(
        "lipschitz_exact",
        "higher",
        "reference",
        "posthoc-ptr: fraction of those constants the exact search solved exactly within its "
        "work budget (else its certified upper bound)",
    )
)


def default_latent(task: Task) -> int:
    """Embedding size of the supplement: 10 for faces, 8 for MNIST / FMNIST."""
    return 10 if task.name == "faces" else 8


def fit_embedder(task: Task, ctx: FitContext, latent: int, epochs: int) -> BetaVAE:
    """The beta-VAE embedder trained on the task's train split (cached per seed)."""
    train = task.splits().train
    recipe = {
        "artifact": "posthoc-vae",
        "task": task.config(),
        "data": task.data_fingerprint(),
        "latent": latent,
        "epochs": epochs,
        "seed": ctx.seed,
        "code": code_digest("mechanisms.posthoc.models"),
    }

    def build() -> dict[str, torch.Tensor]:
        with seeded_init(ctx.seed, "posthoc-vae-init"):
            gen = ctx.generator("posthoc-vae")
            vae = train_vae(train.x, latent, epochs, gen, device=ctx.device)
        return vae.state_dict()

    vae = BetaVAE(int(train.x[0].numel()), latent)
    vae.load_state_dict(ctx.cache.get_or_build(recipe, build))
    return vae.to(ctx.device).eval()


class _Pipeline(nn.Module):
    """x -> f(g(x)): the deterministic part of the release (white-box attacks use it)."""

    def __init__(self, vae: BetaVAE, f: nn.Module) -> None:
        super().__init__()
        self.vae, self.f = vae, f

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.f(self.vae(x))


@register_mechanism
class PosthocPTR(Mechanism):
    """Posthoc privacy: modified Propose-Test-Release on a trained obfuscator.

    x -> z = g(x) (beta-VAE mean) -> f(z) (ReLU obfuscator, variant of paper Table 1) ->
    ⊥ or f(z) + Lap(DeltaP R / eps) (mechanisms/posthoc/ptr.py, Alg. 1). DeltaP is
    mean + 3 std of the exact local Lipschitz constant (l_inf -> l_1; `lipschitz_method`: the
    exact search) of f over boxes of radius R around TRAINING embeddings. Claim (Theorem
    4.4): (2 eps, delta/2, R)-reconstruction privacy over l_inf distance in embedding space.
    """

    name = "posthoc-ptr"
    paper = "https://papers.nips.cc/paper_files/paper/2023/hash/5433b79562b9fa85bd5da0c95a78c907-Abstract-Conference.html"
    modalities = frozenset({"image"})
    may_abstain = True

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0
        delta: float = 0.05
        R: float = 0.5
        variant: Variant = "arl-c-n"
        alpha: float = 0.99  # ARL weight
        latent: int = 0  # 0: the task's default embedding size
        vae_epochs: int = 20
        obf_epochs: int = 30
        n_calib: int = 60
        r_max: float = 0.0  # 0: the default
        time_limit: float = 0.0  # seconds per MILP, 0: no clock
        node_limit: int = 5000
        split_boxes: int = 200  # 0: MILP only
        solver: str = "highs"  # bench.certify.milp.SOLVERS
        finetune_epochs: int = 5
        lipschitz_method: Literal["milp", "auto"] = "auto"  # the exact search, or the MILP

    p: Params

    def check_params(self) -> None:
        p = self.p
        check_privacy_params(p.eps, p.delta, p.R)
        milp_layer.check_solver(p.solver, "posthoc-ptr")
        if not p.alpha < 1:
            raise ConfigError("posthoc-ptr: alpha (ARL weight) must lie in [0, 1)")
        for key in ("vae_epochs", "obf_epochs", "n_calib", "node_limit"):
            if getattr(p, key) < 1:
                raise ConfigError(f"posthoc-ptr: {key} must be a positive integer")
        if p.r_max and p.r_max <= p.R:
            raise ConfigError("posthoc-ptr: r_max must exceed R (or be 0 for the default)")

    # ------------------------------------------------------------------ override points
    # A study mechanism that measures another choice (bench.plugin: a subclass named as
    # `module:Class` in a suite) overrides these; each returns bench's choice here.

    @property
    def out_norm(self) -> OutNorm:
        """The output norm of every local Lipschitz constant PTR computes: l_inf -> l_1, the
        l_1 sensitivity the Laplace release needs (Theorem 4.4's release step)."""
        return "l1"

    def training_recipe(self, train_x: torch.Tensor | None = None) -> TrainingRecipe:
        """How the obfuscator and the classifier are trained and built
        (mechanisms.posthoc.models.TrainingRecipe): bench's. `train_x` holds the training
        inputs when the recipe is about to train (a recipe may read the embedder there), None
        when it only builds the networks that a cached training's weights load into."""
        return BENCH_RECIPE

    def training_settings(self) -> dict[str, Any]:
        """What, beyond the variant and its budget, decides the trained networks: keys of the
        obfuscator's cache entry (bench's recipe adds none)."""
        return {}

    def proposed_delta_p(self, calibrated: float) -> float:
        """Alg. 1 step 1's proposal DeltaP from the calibrated mean + 3 std: that value. Any
        DeltaP fixed before the query is seen keeps Theorem 4.4, since PTR's test (Lemma 4.3)
        checks it at each query."""
        return calibrated

    # ------------------------------------------------------------------ fit

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        p = self.p
        self.task, self.ctx, self.device = task, ctx, ctx.device
        eps, delta, radius = p.eps, p.delta, p.R
        latent = p.latent or default_latent(task)
        self.vae = fit_embedder(task, ctx, latent, p.vae_epochs)
        train = splits.train
        with torch.no_grad():
            z_train = self.vae(to_device(train.x, self.device))
        self.model_key = {
            "task": task.config(),
            "data": task.data_fingerprint(),
            "seed": ctx.seed,
            "latent": latent,
            "vae_epochs": p.vae_epochs,
            "variant": p.variant,
            "alpha": p.alpha,
            "obf_epochs": p.obf_epochs,
            **self.training_settings(),
            "code": code_digest("mechanisms.posthoc.models"),
        }

        def build_obf() -> dict[str, Any]:
            with seeded_init(ctx.seed, "posthoc-obf-init"):
                f, h = train_obfuscator(
                    z_train,
                    train.x,
                    train.y,
                    task.num_classes,
                    p.variant,
                    p.obf_epochs,
                    ctx.generator("posthoc-obf"),
                    alpha=p.alpha,
                    device=ctx.device,
                    recipe=self.training_recipe(train.x),
                )
            return {"f": f.state_dict(), "h": h.state_dict(), "out_dim": 8}

        nets = ctx.cache.get_or_build(
            {"artifact": "posthoc-obfuscator", **self.model_key}, build_obf
        )
        built = self.training_recipe()
        self.f = built.obfuscator(latent, (8, 8), 8)
        self.f.load_state_dict(nets["f"])
        self.f.to(self.device).eval()
        self.h = built.classifier(8, task.num_classes)
        self.h.load_state_dict(nets["h"])
        self.h.to(self.device).eval()
        self.relu_net = ReluMLP.from_module(self.f)  # CPU float64 weights, for the MILPs
        # 1. Proposal: mean + 3 std of L(f, N(z, R)) over TRAINING embeddings (the reference
        # code used test samples, which would make DeltaP depend on the queries).
        calib = ctx.cache.get_or_build(
            {
                "artifact": "posthoc-deltap",
                **self.model_key,
                "R": radius,
                "n_calib": p.n_calib,
                "certify_code": code_digest(*_CODE),
                "solver": p.solver,
                "time_limit": p.time_limit,
                "node_limit": p.node_limit,
                "out_norm": self.out_norm,
                "lipschitz_method": p.lipschitz_method,
            },
            lambda: self._calibrate(to_cpu(z_train[: p.n_calib]), radius),
        )
        self.calibration = calib
        self.delta_p = self.proposed_delta_p(float(calib["delta_p"]))
        r_max = p.r_max or default_r_max(eps, delta, radius)
        self.cfg = PTRConfig(
            eps,
            delta,
            radius,
            self.delta_p,
            r_max,
            time_limit=self.clock(),
            solver=p.solver,
            node_limit=p.node_limit,
            split_boxes=p.split_boxes,
            out_norm=self.out_norm,
            method="auto" if p.lipschitz_method == "auto" else "milp",
        )
        self.region = self._region(z_train)
        self.scale = release_scale(self.delta_p, eps, radius)
        with torch.no_grad():
            out_train = self.f(z_train)
        with seeded_init(ctx.seed, "posthoc-finetune-dropout"):  # h's dropout, where it has one
            finetune_classifier(
                self.h,
                out_train,
                train.y,
                self.scale,
                p.finetune_epochs,
                ctx.generator("posthoc-finetune"),
            )
        self._certifiers: dict[bytes, Certifier] = {}

    def _region(self, z_train: torch.Tensor) -> CertifiedRegion:
        """The fit-time region certificate over the training embeddings (cached)."""
        recipe = {
            "artifact": "posthoc-region",
            **self.model_key,
            "cfg": repr(self.cfg),
            "certify_code": code_digest(*_CODE),
        }
        z = to_cpu(z_train).double().numpy()
        return self.ctx.cache.get_or_build(
            recipe, lambda: certify_region(self.relu_net, z, self.cfg)
        )

    def clock(self) -> float | None:
        """The wall-clock limit per Lipschitz search, None by default (`time_limit` 0): then
        every search stops on its node budget alone, so DeltaP, the region certificate and
        each PTR decision are the same on every machine, whatever its speed or load."""
        return self.p.time_limit or None

    def _calibrate(self, z: torch.Tensor, radius: float) -> dict[str, Any]:
        """Exact local Lipschitz constants (certified upper bounds) at training embeddings."""
        values, exact = [], []
        for row in z.double().numpy():
            res = local_lipschitz(
                self.relu_net,
                row,
                radius,
                self.out_norm,
                time_limit=self.clock(),
                solver=self.p.solver,
                node_limit=self.p.node_limit,
                method="auto" if self.p.lipschitz_method == "auto" else "milp",
            )
            values.append(res.upper)
            exact.append(res.exact)
        arr = np.asarray(values)
        return {
            "delta_p": float(arr.mean() + 3 * arr.std()),
            "values": arr,
            "exact_fraction": float(np.mean(exact)),
        }

    # ------------------------------------------------------------------ release

    def certifier(self, z: np.ndarray) -> Certifier:
        """The memoised decisions for embedding z (deterministic in z, so kept across
        queries: a repeated input costs nothing)."""
        key = z.tobytes()
        if key not in self._certifiers:
            self._certifiers[key] = self._new_certifier(z)
        return self._certifiers[key]

    def _decisions(self, rows: np.ndarray, noise: list[float]) -> list[QueryDecision]:
        """The PTR test of each query (row i, test noise noise[i]). When no query's embedding
        has been decided before in this job, the decisions are a function of the queries alone
        and are shared through the artifact cache with the other jobs of this setting that
        release the same queries (mechanisms/posthoc/decisions.py); else they are made here,
        from the memoised certifiers."""
        if any(row.tobytes() in self._certifiers for row in rows):
            return run_query_tests(rows, noise, self.certifier)
        recipe = {
            "artifact": "posthoc-ptr-decisions",
            **self.model_key,
            "cfg": repr(self.cfg),
            "region": repr(self.region),
            "certify_code": code_digest(*_CODE, "mechanisms.posthoc.decisions"),
            "queries": queries_digest(rows, noise),
        }
        stored = self.ctx.cache.get_or_build(
            recipe, lambda: decide_queries(rows, noise, self._new_certifier)
        )
        for key, state in stored["states"].items():
            center = np.frombuffer(key, dtype=rows.dtype).copy()
            self._certifiers[key] = state.restore(self._new_certifier(center))
        return as_decisions(stored)

    def _new_certifier(self, z: np.ndarray) -> Certifier:
        return Certifier(self.relu_net, z, self.cfg, self.region)

    @torch.no_grad()
    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        eps, radius = self.p.eps, self.p.R
        z = self.vae(to_device(x, self.device))
        out = self.f(z)
        # 3. Test (Lemma 4.3): draw Z ~ Lap(R / eps), then one certified decision decides
        # phi + Z > ln(1/delta) R / eps (ptr.ptr_test: same law as Alg. 1's bisection).
        # The test is solved on the CPU (MILPs), so its draws are made there.
        test_noise = NoiseModel("laplace", phi_noise_scale(eps, radius)).sample(
            (len(x),), generator
        )
        decisions = self._decisions(to_cpu(z).double().numpy(), test_noise.double().tolist())
        released = torch.tensor([d.released for d in decisions], dtype=torch.bool)
        # 4. Release f(g(x)) + Lap(DeltaP R / eps) per coordinate (ptr.release_scale), drawn
        # on the CPU like the test noise: k values per query, and the audit's replay of this
        # release (mechanisms.posthoc.audit) draws them there too.
        values = to_cpu(out) + NoiseModel("laplace", self.scale).sample(out.shape, generator)
        values = torch.where(released[:, None], values, torch.zeros_like(values))
        return Release(
            values,
            released,
            {
                "test_noise": test_noise.float(),
                "test_radius": torch.tensor(
                    [math.nan if d.radius is None else d.radius for d in decisions]
                ),
                "ptr_exact": torch.tensor([float(d.exact) for d in decisions]),
                "ptr_milps": torch.tensor([float(d.milps) for d in decisions]),
            },
        )

    @torch.no_grad()
    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(self.h(to_device(release.values.float(), self.device)))

    def guarantee(self) -> Guarantee:
        """Theorem 4.4's (2 eps, delta/2, R) reconstruction-privacy claim."""
        p = self.p
        claim: dict[str, Any] = {"eps": 2 * p.eps, "delta": p.delta / 2, "radius": p.R}
        return Guarantee("reconstruction", claim, "linf/embedding")

    def encoder(self) -> nn.Module:
        return _Pipeline(self.vae, self.f).eval()

    def noise(self) -> NoiseModel:
        return NoiseModel("laplace", self.scale)

    def claim_metrics(self, task: Task, splits: Splits) -> dict[str, Any]:
        """The proposal's inputs (step 1 of Alg. 1), from the fit's own calibration: the mean
        certified local Lipschitz constant with its CI over the calibration embeddings,
        DeltaP, and how many of the constants are exact rather than certified upper bounds."""
        values = np.asarray(self.calibration["values"], dtype=float)
        return {
            LOCAL_LIPSCHITZ.name: summarize(values),
            DELTA_P.name: scalar(self.delta_p),
            LIPSCHITZ_EXACT.name: scalar(float(self.calibration["exact_fraction"])),
        }


class _ClippedEmbedder(nn.Module):
    """x -> clip(g(x), lo, hi): the embedding restricted to its declared range."""

    def __init__(self, vae: BetaVAE, lo: torch.Tensor, hi: torch.Tensor) -> None:
        super().__init__()
        self.vae = vae
        self.register_buffer("lo", lo)
        self.register_buffer("hi", hi)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.maximum(torch.minimum(self.vae(x), self.hi), self.lo)


@register_mechanism
class LDPEmbedding(Mechanism):
    """Laplace noise on the beta-VAE embedding for eps-LDP (Posthoc supplement, Table 1).

    The embedding is clipped to the per-coordinate range [lo_j, hi_j] seen on the training
    split, so any two inputs differ by at most sum_j (hi_j - lo_j) in l_1: that is the
    sensitivity, and b = sum_j (hi_j - lo_j) / eps (Laplace mechanism).
    """

    name = "ldp-embedding"
    paper = "https://papers.nips.cc/paper_files/paper/2023/hash/5433b79562b9fa85bd5da0c95a78c907-Abstract-Conference.html"
    modalities = frozenset({"image"})

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0
        latent: int = 0  # 0: the task's default embedding size
        vae_epochs: int = 20
        epochs: int = 10  # of the classifier on noisy embeddings

    p: Params

    def check_params(self) -> None:
        check_privacy_params(self.p.eps)

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        p = self.p
        self.device = ctx.device
        latent = p.latent or default_latent(task)
        vae = fit_embedder(task, ctx, latent, p.vae_epochs)
        train_x = to_device(splits.train.x, self.device)
        with torch.no_grad():
            z = vae(train_x)
        self.embed = _ClippedEmbedder(vae, z.min(0).values, z.max(0).values).eval()
        self.l1_sensitivity = float((z.max(0).values - z.min(0).values).sum())
        self._noise = NoiseModel("laplace", laplace_scale(p.eps, self.l1_sensitivity))
        with seeded_init(ctx.seed, "ldp-embedding-clf"):
            self.h = classifier(latent, task.num_classes).to(self.device)
        with torch.no_grad():
            zc = self.embed(train_x)
        finetune_classifier(
            self.h,
            zc,
            splits.train.y,
            self._noise.scale,
            p.epochs,
            ctx.generator("ldp-embedding-clf"),
        )

    @torch.no_grad()
    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        z = self.embed(to_device(x, self.device))
        return Release.all_released(z + self._noise.sample(z.shape, generator, z.device)).cpu()

    @torch.no_grad()
    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(self.h(to_device(release.values.float(), self.device)))

    def guarantee(self) -> Guarantee:
        return Guarantee("ldp", {"eps": self.p.eps}, "any pair of inputs")

    def encoder(self) -> nn.Module:
        return self.embed

    def noise(self) -> NoiseModel:
        return self._noise
