"""The shared machinery of split-inference mechanisms with Gaussian noise at the split and
Fisher-information bounds (`dfil`, `dp-encoder`): the split model (trained and cached per seed),
the noise calibration data (mean Tr(J^T J) over train data), the release, and the bound each
attack job is scored against (`bound_metrics`): Cramer-Rao 1/dFIL(x), from the exact per-sample
trace, for the unbiased `optimization` attack; van Trees for every other attack (they use
priors). See bench.certify.fisher.bounds for how validity is tested on one noise draw.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any, Literal

import torch
from torch import nn

from bench.certify.fisher.bounds import (
    Z_ONE_SIDED,
    cramer_rao_bound,
    cramer_rao_check,
    van_trees_bound,
    van_trees_check,
)
from bench.certify.fisher.score_matching import (
    SMOOTHING,
    PriorTerm,
    estimate_prior_term,
    gaussian_prior_term,
)
from bench.certify.fisher.trace import jacobian_trace, jacobian_trace_estimate
from bench.core.codeversion import code_digest
from bench.core.device import to_cpu, to_device
from bench.core.errors import ConfigError
from bench.core.hashing import seeded_init, tensor_digest
from bench.metrics import MetricResult
from bench.plugin.discrete import EmbeddingSplit
from bench.plugin.protocols import (
    Attack,
    FitContext,
    Mechanism,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.plugin.training import predict_scores, utility_model
from mechanisms.dfil.smooth_nets import Arch, Split, SplitModel, projection_model, split_model
from mechanisms.dfil.training import SplitTraining, train_split

SCORE_FIT_SAMPLES = 4000  # training samples the score model is fitted on (then 1,000 held out)
UNBIASED_ATTACKS = frozenset({"optimization"})
DISCRETE = frozenset({"ids", "text"})
EXACT_DISCRETE_DIM = 4096  # largest embedding input for per-sample exact traces in bounds


def check_number(name: str, value: Any, integer: bool = False, allow_zero: bool = False) -> None:
    """Refuse a parameter that is not a finite (integer) number > 0 (or >= 0) with a
    one-line ConfigError."""
    ok_type = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok_type or not math.isfinite(value):
        raise ConfigError(f"{name} must be a finite {'integer' if integer else 'number'}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ConfigError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")


def module_digest(module: nn.Module) -> str:
    """A hash of a module's architecture and weights (keys cached traces)."""
    state = [t for t in module.state_dict().values() if isinstance(t, torch.Tensor)]
    return f"{tensor_digest(*state)}-{tensor_digest(torch.tensor(list(str(module).encode())))}"


class FisherSplitMechanism(Mechanism):
    """Split inference with Gaussian noise at the split and Fisher-information bounds; the
    subclasses choose the model and the noise calibration."""

    modalities = frozenset({"image", "vector"})

    @dataclass(frozen=True)
    class Params:
        split: Split = "late"
        arch: Arch = "auto"
        proj_dim: int = 10_000
        calib_samples: int = 128
        calib_dirs: int = 64
        smoothing: float = SMOOTHING
        # "raw": attacks target the test images; "smoothed": x + N(0, smoothing^2), the input
        # distribution the van Trees prior term is estimated for (so the bound speaks of it).
        targets: Literal["raw", "smoothed"] = "raw"

    p: Params

    def check_params(self) -> None:
        p = self.p
        check_number(f"mechanism {self.name}: proj_dim", p.proj_dim, integer=True)
        check_number(f"mechanism {self.name}: calib_samples", p.calib_samples, True)
        check_number(f"mechanism {self.name}: calib_dirs", p.calib_dirs, True, True)
        if p.calib_dirs == 1:
            raise ConfigError(f"mechanism {self.name}: calib_dirs must be 0 (exact) or >= 2")
        check_number(f"mechanism {self.name}: smoothing", p.smoothing)

    # ------------------------------------------------------------------ model

    def _arch(self, task: Task) -> str:
        arch = self.p.arch
        if arch == "auto":
            if task.modality == "vector":
                return "projection"
            return "resnet18" if task.name == "cifar10" else "cnn"
        if (arch == "projection") != (task.modality == "vector"):
            raise ConfigError(
                f"mechanism {self.name}: arch {arch!r} does not fit a {task.modality} task"
            )
        return arch

    def code_version(self) -> str:
        """The code an artifact of this mechanism depends on: its class's module and every
        project module below it (this one, the nets, the training, the Fisher code)."""
        return code_digest(type(self).__module__)

    def _recipe(self, task: Task, ctx: FitContext, **extra: Any) -> dict[str, Any]:
        return {
            "task": task.config(),
            "data": task.data_fingerprint(),
            "seed": ctx.seed,
            "epochs": int(task.config().get("train_epochs", 3)),
            "code": self.code_version(),
            **extra,
        }

    def _fresh_image_model(self, task: Task, arch: str) -> SplitModel:
        channels = task.input_shape[0]
        return split_model(
            arch,
            task.input_shape,
            task.num_classes,
            getattr(task, "mean", (0.0,) * channels),
            getattr(task, "std", (1.0,) * channels),
            self.p.split,
            **self._layer_options(),
        )

    def _layer_options(self) -> dict[str, Any]:
        """Extra layers at the split: compression channels, clipping norm."""
        return {}

    def _training(self, task: Task) -> SplitTraining:
        """How the image model is trained from scratch (clean by default)."""
        return SplitTraining(epochs=int(task.config().get("train_epochs", 3)))

    def _image_model(self, task: Task, splits: Splits, ctx: FitContext, arch: str) -> SplitModel:
        """The split model trained from scratch on train data (cached per recipe and seed)."""
        training = self._training(task)
        recipe = self._recipe(
            task,
            ctx,
            artifact=f"{self.name}-split-model",
            arch=arch,
            split=self.p.split,
            layers=self._layer_options(),
            training=repr(training),
        )

        def build() -> dict[str, torch.Tensor]:
            with seeded_init(ctx.seed, f"{self.name}-init"):
                model = self._fresh_image_model(task, arch).to(ctx.device)
            gen = ctx.generator(f"{self.name}-train")
            train_split(model, splits.train, training, gen, progress=ctx.progress)
            return model.state_dict()

        model = self._fresh_image_model(task, arch)
        model.load_state_dict(ctx.cache.get_or_build(recipe, build))
        return model.to(ctx.device).eval()

    def _projection_model(self, task: Task, ctx: FitContext) -> SplitModel:
        """Fixed orthonormal projection; the server is the task's clean utility model behind
        least-squares decoding (exactly x when there is no noise)."""
        d = math.prod(task.input_shape)
        server = copy.deepcopy(utility_model(task, ctx))
        proj = projection_model(d, self.p.proj_dim, server, ctx.generator("proj"))
        return proj.to(ctx.device)  # the projection is drawn on the CPU (float64 QR)

    def build_model(self, task: Task, splits: Splits, ctx: FitContext) -> SplitModel:
        arch = self._arch(task)
        if arch == "projection":
            return self._projection_model(task, ctx)
        return self._image_model(task, splits, ctx, arch)

    # ------------------------------------------------------------ calibration

    def _mean_trace(self, x: torch.Tensor, ctx: FitContext) -> tuple[float, float]:
        """Mean Tr(J^T J) over the first `calib_samples` training samples and its standard
        error (cached): exact traces, or unbiased subsampled ones (`calib_dirs` directions,
        the same draw for every sample). The error combines the spread over samples with the
        direction-sampling error; the latter is shared by all samples (one draw), so it does
        not average out: its standard deviation in the mean is at most the mean of the
        per-sample standard errors (triangle inequality), which is what is added."""
        p = self.p
        x = x[: p.calib_samples]
        exact = (
            p.calib_dirs == 0
            or isinstance(self._client, nn.Linear)
            or self._encoding_dim(x) <= p.calib_dirs  # exact costs <= calib_dirs VJPs
        )
        recipe = {
            "artifact": "dfil-calibration",
            "encoder": module_digest(self._client),
            "x": tensor_digest(x),
            "dirs": 0 if exact else p.calib_dirs,
            "seed": ctx.seed,
            "code": self.code_version(),
        }

        def build() -> torch.Tensor:  # on the encoder's device; the cache keeps it on the CPU
            if exact:
                traces = jacobian_trace(self._client, x)
                return torch.stack([traces, torch.zeros_like(traces)])
            gen = ctx.generator("dfil-calibration")
            est = jacobian_trace_estimate(self._client, x, p.calib_dirs, gen)
            return torch.stack([est.value, est.se])

        traces, dir_se = ctx.cache.get_or_build(recipe, build).double()
        spread = float(traces.std() / math.sqrt(len(traces))) if len(traces) > 1 else 0.0
        return float(traces.mean()), math.hypot(spread, float(dir_se.mean()))

    def _encoding_dim(self, x: torch.Tensor) -> int:
        """Coordinates of the encoding of one sample of `x` (the output side of the trace)."""
        with torch.no_grad():
            return int(self._client(to_device(x[:1], self.device))[0].numel())

    def calibrate(self, mean_trace: float) -> float:
        """The release noise sigma for the current parameters."""
        raise NotImplementedError

    def _prior_term(self, task: Task, splits: Splits, ctx: FitContext) -> PriorTerm:
        """Tr(J(f_pi))/d: exact for a task with a Gaussian prior, else sliced score matching
        on train data smoothed by N(0, smoothing^2) (fixed seed: a property of the data,
        cached per data and smoothing)."""
        exact = getattr(task, "gaussian_prior", None)
        if callable(exact):
            return gaussian_prior_term(exact()[1])
        x = splits.train.x
        n_fit = min(SCORE_FIT_SAMPLES, int(0.8 * len(x)))
        recipe = {
            "artifact": "dfil-prior-term",
            "data": task.data_fingerprint(),
            "task": task.config(),
            "n_fit": n_fit,
            "smoothing": self.p.smoothing,
            "code": self.code_version(),
        }

        def build() -> dict[str, Any]:
            gen = torch.Generator().manual_seed(0)
            held = x[n_fit : n_fit + 1000]
            smoothing = self.p.smoothing
            prior = estimate_prior_term(
                x[:n_fit], held, gen, smoothing=smoothing, device=ctx.device
            )
            return vars(prior)

        return PriorTerm(**ctx.cache.get_or_build(recipe, build))

    # ------------------------------------------------------------------- fit

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self._cache, self.device = ctx.cache, ctx.device
        self._prior: PriorTerm | None = None  # computed when a bound or the claim needs it
        self._table: torch.Tensor | None = None
        self._exact_prior = callable(getattr(task, "gaussian_prior", None))
        if task.modality in DISCRETE:
            if self.p.targets != "raw":
                raise ConfigError(
                    f"mechanism {self.name}: targets = 'smoothed' needs continuous inputs; "
                    f"task {task.name} has {task.modality} inputs"
                )
            self._fit_discrete(task, splits, ctx)
            return
        self._input_dim = math.prod(task.input_shape)
        model = self.build_model(task, splits, ctx)
        self._client = model.client.eval().requires_grad_(False)
        self._server = model.server.eval()
        self._mean_tr, self._mean_tr_se = self._mean_trace(splits.train.x, ctx)
        self._sigma = self.calibrate(self._mean_tr)
        self._prior_source = (task, splits, ctx)

    def _fit_discrete(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        """Token / id inputs: the task's trained split model, cut at `split` (sst2; movielens
        has one split, after the first linear layer). dFIL is taken with respect to the
        embedding-layer input, the looked-up embeddings (N, *input_shape, D): the noise is
        calibrated on the embeddings of train inputs (the paper's text and NCF setting)."""
        split = self._discrete_split(task, ctx)
        self._split = split
        self._table = split.table
        self._client = split.client.eval().requires_grad_(False)
        self._server = split.server.eval()
        self._input_dim = math.prod(task.input_shape) * int(split.table.shape[1])
        ids = splits.train.x[: self.p.calib_samples]
        calibration = split.table[to_device(ids, split.table.device)]
        self._mean_tr, self._mean_tr_se = self._mean_trace(calibration, ctx)
        self._sigma = self.calibrate(self._mean_tr)

    def _discrete_split(self, task: Task, ctx: FitContext) -> EmbeddingSplit:
        """The split model a discrete task's release runs (the task's own, cut at `split`)."""
        return task.split_model(ctx, self.p.split)  # type: ignore[attr-defined]

    def prior_term(self) -> PriorTerm:
        """The van Trees prior term of the task's data (computed once, cached)."""
        if self._prior is None:
            self._prior = self._prior_term(*self._prior_source)
        return self._prior

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        x = to_device(x, self.device)
        if self._table is not None:
            e = self._split.encode(x)
        else:
            with torch.no_grad():
                e = torch.cat([self._client(x[i : i + 512]) for i in range(0, len(x), 512)])
        return Release.all_released(e + self.noise().sample(e.shape, generator, e.device)).cpu()

    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(predict_scores(self._server, release.values))

    def encoder(self) -> nn.Module:
        return self._client

    def embedding_table(self) -> torch.Tensor | None:
        return getattr(self, "_table", None)  # None before fit and on continuous tasks

    def noise(self) -> NoiseModel:
        return NoiseModel("gaussian", self._sigma)

    # ---------------------------------------------------------------- bounds

    def sample_traces(self, x: torch.Tensor) -> torch.Tensor:
        """Exact Tr(J^T J) at each sample of `x` (cached: attacks on the same samples share),
        computed on the encoder's device, handed back on the CPU."""
        recipe = {
            "artifact": "dfil-sample-traces",
            "encoder": module_digest(self._client),
            "x": tensor_digest(x),
            "code": self.code_version(),
        }
        return self._cache.get_or_build(recipe, lambda: jacobian_trace(self._client, x))

    def dfil_of(self, trace: torch.Tensor | float, queries: int = 1) -> torch.Tensor | float:
        """dFIL = k Tr / (sigma^2 d): averaging k independent releases divides the noise
        variance by k, and Fisher information adds over independent observations."""
        return queries * trace / (self._sigma**2 * self._input_dim)

    def unbiased_bound(self, dfil: torch.Tensor, queries: int) -> torch.Tensor:
        """The per-sample MSE floor of unbiased attacks: Cramer-Rao."""
        return cramer_rao_bound(dfil)

    def population_bound(self, queries: int) -> tuple[float, tuple[float, float]]:
        """van Trees at E_pi[dFIL] (the calibration mean over train data) with a 95% interval
        from the errors of that mean and of the prior term."""
        mean_dfil = float(self.dfil_of(self._mean_tr, queries))
        se_dfil = float(self.dfil_of(self._mean_tr_se, queries))
        prior = self.prior_term()
        total = mean_dfil + prior.value
        spread = Z_ONE_SIDED * math.hypot(se_dfil, prior.se)
        bound = van_trees_bound(mean_dfil, prior.value)
        return bound, (1.0 / (total + spread), 1.0 / max(total - spread, 1e-300))

    def bound_metrics(
        self, attack: Attack, x: torch.Tensor, x_hat: torch.Tensor, release: Release
    ) -> dict[str, MetricResult]:
        """Cramer-Rao per sample for the unbiased attack, van Trees for the others. On a
        discrete task only Cramer-Rao, for an attack reconstructing embeddings (ids have no
        MSE), where the exact per-sample trace is affordable (d <= EXACT_DISCRETE_DIM); no
        van Trees there: a score model of the embedding distribution is not fitted."""
        queries = attack.p.queries
        if self._table is not None:
            continuous = type(attack).ranked is Attack.ranked
            if not (continuous and attack.name in UNBIASED_ATTACKS):
                return {}
            if self._input_dim > EXACT_DISCRETE_DIM:
                return {}
        if attack.name in UNBIASED_ATTACKS:
            dfil = self.dfil_of(self.sample_traces(x), queries)
            return cramer_rao_check(x, x_hat, self.unbiased_bound(dfil, queries))
        bound, ci = self.population_bound(queries)
        return van_trees_check(x, x_hat, bound, ci)

    def attack_inputs(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """With targets = "smoothed": x + N(0, smoothing^2 I), a draw from the smoothed data
        distribution whose score the van Trees prior term is fitted to (`_prior_term`), so
        the attacks and the bound speak of the same inputs (dFIL paper, Sec. 3.3.2)."""
        if self.p.targets != "smoothed":
            return x
        noise = torch.randn(x.shape, generator=generator, dtype=x.dtype)
        return x + self.p.smoothing * noise

    def bound_basis(self, attack: Attack) -> dict[str, str]:
        """Which bound `bound_metrics` checks for `attack` and whether it binds that attack
        by theorem. Cramer-Rao (Kay 1993, Thm 3.2) binds unbiased estimators only, and
        gradient inversion of a nonlinear encoder is not proven unbiased; van Trees (Gill &
        Levit 1995, Thm 1) binds every attack, by theorem where the prior term is exact
        (Gaussian task), else through the score-matching estimate, which is of the smoothed
        data: it speaks of smoothed inputs, not of raw images (no smooth density)."""
        if attack.name in UNBIASED_ATTACKS:
            return {
                "bound": "cramer-rao",
                "basis": "estimate",
                "why": "Cramér-Rao binds unbiased attacks; this attack is not proven unbiased",
            }
        if self._exact_prior:
            return {
                "bound": "van-trees",
                "basis": "theorem",
                "why": "van Trees with the exact Gaussian prior term binds every attack",
            }
        smoothing = self.p.smoothing
        if self.p.targets == "smoothed":
            why = (
                f"van Trees on inputs smoothed by N(0, {smoothing:g}²); its prior term is a "
                "sliced score-matching estimate"
            )
        else:
            why = (
                f"van Trees prior term estimated on inputs smoothed by N(0, {smoothing:g}²); "
                "raw images are not from that distribution"
            )
        return {"bound": "van-trees", "basis": "estimate", "why": why}

    def _bound_params(self) -> dict[str, float]:
        """The van Trees prior term Tr(J(f_pi))/d, its standard error and the misfit of the
        score model (bench.certify.fisher.score_matching), once fitted."""
        if not hasattr(self, "_prior_source") or self._table is not None:
            return {}
        prior = self.prior_term()
        return {"prior_term": prior.value, "prior_term_se": prior.se, "prior_term_gap": prior.gap}
