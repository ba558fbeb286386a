"""The contracts every task, mechanism and attack implements (see README, Architecture).

Threat model (as in the papers the mechanisms come from): the attacker knows the task, the
mechanism's parameters, its deterministic encoder and its noise model, everything except the
noise draw. A mechanism therefore exposes `encoder()` and `noise()`.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal

import torch
from torch import nn

from bench.core.device import CPU, rand, randn, to_device
from bench.plugin.notions import Claim
from bench.plugin.params import (
    ParamSpec,
    Range,
    as_dicts,
    declared_specs,
    params_dataclass,
    resolve_specs,
)

Modality = Literal["image", "tabular", "text", "ids", "vector"]
Notion = str  # a registered privacy notion (bench.plugin.notions: "ldp", "ip", "dp", ...)


@dataclass(frozen=True)
class DataSplit:
    """Inputs `x` (N, *input_shape) in the task's data range and integer labels `y` (N,)."""

    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        if len(self.x) != len(self.y):
            raise ValueError(f"x has {len(self.x)} rows but y has {len(self.y)}")

    def __len__(self) -> int:
        return len(self.x)

    def head(self, n: int) -> DataSplit:
        """The first `n` samples (splits are pre-shuffled with a fixed seed)."""
        return DataSplit(self.x[:n], self.y[:n])


@dataclass(frozen=True)
class Splits:
    """Fixed splits of a task: train (the defender's), aux (the attacker's), test."""

    train: DataSplit
    aux: DataSplit
    test: DataSplit

    def head(self, n_train: int | None, n_aux: int | None, n_test: int | None) -> Splits:
        """The first n of each split (None: all of it), for a task's size options."""
        return Splits(
            self.train.head(n_train or len(self.train)),
            self.aux.head(n_aux or len(self.aux)),
            self.test.head(n_test or len(self.test)),
        )


@dataclass(frozen=True)
class Guarantee:
    """A mechanism's declared privacy claim, e.g. (eps, delta, r)-IP over l2 in input space."""

    notion: Notion
    params: dict[str, float] = field(default_factory=dict)
    distance: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"notion": self.notion, **self.params, "distance": self.distance}

    def claim(self) -> Claim:
        """The typed claim this guarantee makes (bench.plugin.notions.Claim): what the audit
        tests, the membership ceiling applies to and the report groups by."""
        return Claim.of(self.notion, self.params, self.distance)


@dataclass(frozen=True)
class NoiseModel:
    """Additive i.i.d. noise on the encoder output: `release = encoder(x) + noise`.

    `kind` is "gaussian" (scale = standard deviation) or "laplace" (scale = b).
    """

    kind: Literal["gaussian", "laplace"]
    scale: float

    def __post_init__(self) -> None:
        if not (self.scale > 0 and math.isfinite(self.scale)):
            raise ValueError(f"noise scale must be positive and finite, got {self.scale}")

    @property
    def std(self) -> float:
        """Standard deviation of one noise coordinate."""
        return self.scale if self.kind == "gaussian" else math.sqrt(2.0) * self.scale

    def sample(
        self,
        shape: torch.Size | tuple[int, ...],
        generator: torch.Generator,
        device: torch.device | None = None,
    ) -> torch.Tensor:
        """Draw noise of `shape` from `generator` (never from the global RNG), on `device`
        (default: the generator's; bench.core.device draws there from a generator it seeds)."""
        if self.kind == "gaussian":
            return randn(shape, generator, device) * self.scale
        # Laplace by inverse CDF on u ~ U(-1/2, 1/2): -b sign(u) ln(1 - 2|u|).
        u = rand(shape, generator, device, dtype=torch.float64) - 0.5
        noise = -self.scale * torch.sign(u) * torch.log1p(-2.0 * u.abs())
        return to_device(noise.to(torch.float32), device)

    def neg_log_likelihood(self, observed: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
        """Per-sample negative log-density of `observed` given the noiseless `mean`, up to a
        constant; what a MAP attack adds to its prior."""
        diff = (observed - mean).flatten(1)
        if self.kind == "gaussian":
            return (diff**2).sum(1) / (2 * self.scale**2)
        return diff.abs().sum(1) / self.scale


@dataclass
class Release:
    """What the untrusted party receives for a batch of N inputs.

    `released[i]` is False where the mechanism answered ⊥ (nothing released); the
    corresponding `values[i]` are then meaningless and must be ignored.
    `meta` holds per-sample side information (dFIL, phi, ...), each a (N,) tensor.
    """

    values: torch.Tensor
    released: torch.Tensor
    meta: dict[str, torch.Tensor] = field(default_factory=dict)

    @classmethod
    def all_released(cls, values: torch.Tensor, **meta: torch.Tensor) -> Release:
        return cls(values, torch.ones(len(values), dtype=torch.bool), dict(meta))

    def to(self, device: torch.device | str | None) -> Release:
        """This release with every tensor on `device` (itself when all are there already)."""
        moved = (to_device(self.values, device), to_device(self.released, device))
        meta = to_device(self.meta, device)
        if moved[0] is self.values and moved[1] is self.released and meta is self.meta:
            return self
        return Release(moved[0], moved[1], meta)

    def cpu(self) -> Release:
        """This release on the CPU: how releases cross component boundaries."""
        return self.to(CPU)

    def __len__(self) -> int:
        return len(self.values)


class Parameterised:
    """A component with declared parameters (bench.plugin.params): a frozen `Params` dataclass, or
    for plug-ins a `defaults` dict (each default's type is the parameter's) with optional
    `param_ranges`. Either declaration yields the other, so `defaults` / `param_ranges`
    always describe `Params`. An instance holds the resolved values twice: `params`, the
    dict a job hashes and records, and `p`, the same values as a typed `Params` object."""

    @dataclass(frozen=True)
    class Params:
        """No parameters."""

    defaults: ClassVar[dict[str, Any]] = {}
    # Inclusive (low, high) of numeric parameters where [0, inf) is not right (bench.plugin.params).
    param_ranges: ClassVar[dict[str, tuple[float, float]]] = {}
    params: dict[str, Any]
    p: Any

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "Params" not in own and ("defaults" in own or "param_ranges" in own):
            cls.Params = params_dataclass(  # type: ignore[misc]
                f"{cls.__name__}Params", cls.defaults, cls.param_ranges, cls._params_bases()
            )
        elif "Params" in own:
            cls.defaults, cls.param_ranges = cls._own_dicts(declared_specs(cls.Params))

    @classmethod
    def _params_bases(cls) -> tuple[type, ...]:
        """What a dict-declared `Params` dataclass extends (the parameters every component
        of the kind takes)."""
        return ()

    @classmethod
    def _own_dicts(
        cls, specs: dict[str, ParamSpec]
    ) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        """The `defaults` and `param_ranges` dicts of a `Params` declaration."""
        return as_dicts(specs)

    @classmethod
    def param_specs(cls) -> dict[str, ParamSpec]:
        """Every parameter the component takes, with its type, default, range and choices."""
        return declared_specs(cls.Params)

    def _resolve(self, component: str, given: dict[str, Any]) -> None:
        """Defaults overridden by `given`, each value checked against its declaration and
        normalised (bench.plugin.params; any violation is a one-line ConfigError), then the
        component's own cross-parameter checks."""
        self.params = resolve_specs(component, self.param_specs(), given)
        self.p = self.Params(**self.params)
        self.check_params()

    def check_params(self) -> None:
        """Refuse invalid combinations of parameter values with a ConfigError, before
        anything runs (each value alone is checked against its declaration)."""


@dataclass(frozen=True)
class AttackParams:
    """The parameter every attack takes: `queries` = k > 1 averages k releases of each input
    (only for mechanisms that allow repeated queries); the harness does the averaging."""

    queries: Annotated[int, Range(1, math.inf)] = 1


class Task(ABC):
    """A standardised setting: data with fixed splits, a utility model, a data range."""

    name: ClassVar[str]
    version: ClassVar[str]
    modality: ClassVar[Modality]
    utility_metric: ClassVar[str] = "accuracy"

    input_shape: tuple[int, ...]
    data_range: tuple[float, float]
    num_classes: int

    @abstractmethod
    def splits(self) -> Splits:
        """The task's train / aux / test splits (fixed; the job seed does not change them)."""

    @abstractmethod
    def model(self, arch: str = "default") -> nn.Module:
        """A fresh, untrained utility model mapping inputs to class scores."""

    def config(self) -> dict[str, Any]:
        """Resolved options that change the data or the model (part of a job's identity)."""
        return {}

    def data_fingerprint(self) -> str:
        """A short hash of the data actually loaded, stored with every result."""
        from bench.core.hashing import tensor_digest

        s = self.splits()
        return tensor_digest(s.train.x, s.train.y, s.aux.x, s.aux.y, s.test.x, s.test.y)


@dataclass
class FitContext:
    """What the harness hands a mechanism or attack while fitting: a seed, the cache and
    the job's device (bench.core.device: models and their tensors go there; data, releases and
    results cross component boundaries on the CPU)."""

    seed: int
    cache: (
        Any  # bench.plugin.artifacts.ArtifactCache; typed loosely to keep this module import-light
    )
    progress: bool = False
    device: torch.device = CPU

    def generator(self, purpose: str) -> torch.Generator:
        """An independent torch generator for `purpose`, derived from the job seed."""
        from bench.core.hashing import derive_seed

        return torch.Generator().manual_seed(derive_seed(self.seed, purpose))


class Mechanism(Parameterised, ABC):
    """What stands between a private input and the untrusted party.

    Lifecycle: construct with parameters, `fit(task, splits, ctx)`, then `release` and
    `predict`. Subclasses declare `name`, `modalities`, and `repeatable_queries`
    (whether a user may query the same input again with fresh randomness).

    Devices (bench.core.device): `fit` keeps `ctx.device` as `self.device` and puts its models
    there; `release` and `predict` accept inputs on any device and return CPU tensors;
    `encoder()` is the module on the mechanism's device.
    """

    device: torch.device = CPU  # where fit put the models (FitContext.device)

    name: ClassVar[str]
    modalities: ClassVar[frozenset[str]] = frozenset({"image", "tabular", "vector"})
    repeatable_queries: ClassVar[bool] = True
    # Where the mechanism (or, for a baseline, the comparison it comes from) is published:
    # a DOI or arXiv URL the leaderboard links; "" for reference points such as identity.
    paper: ClassVar[str] = ""

    def __init__(self, **params: Any) -> None:
        self._resolve(f"mechanism {self.name}", params)

    @abstractmethod
    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        """Train or calibrate whatever the mechanism needs (cached through `ctx.cache`)."""

    @abstractmethod
    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        """Protect a batch of private inputs; all randomness comes from `generator`."""

    @abstractmethod
    def predict(self, release: Release) -> torch.Tensor:
        """Server-side utility output (class scores, N x C) computed from the release."""

    @abstractmethod
    def guarantee(self) -> Guarantee:
        """The privacy claim this mechanism makes with its current parameters."""

    may_abstain: ClassVar[bool] = False  # True if release() can answer ⊥
    releases_labels: ClassVar[bool] = False  # label-only access: no reconstruction attacks

    def encoder(self) -> nn.Module | None:
        """The deterministic, differentiable part of the release (white-box attacks).

        For discrete inputs (modality "ids" / "text") it maps the looked-up embeddings
        (N, *input_shape, D) to the release, and `embedding_table()` gives the rows.
        """
        return None

    def embedding_table(self) -> torch.Tensor | None:
        """The (V, D) embedding table of a discrete-input mechanism (for `lookup`)."""
        return None

    def bound_metrics(
        self, attack: Attack, x: torch.Tensor, x_hat: torch.Tensor, release: Release
    ) -> dict[str, Any]:
        """Metrics checking the mechanism's own claim against one attack's reconstructions,
        e.g. {"bound_mse": MetricResult, "bound_validity": MetricResult}; none by default."""
        return {}

    def bound_basis(self, attack: Attack) -> dict[str, str]:
        """What the bound of `bound_metrics` rests on for `attack`: {"bound": its name,
        "basis": "theorem" (holds for this attack by a stated theorem) or "estimate" (rests on
        an estimated quantity or on an assumption the attack need not meet), "why": one
        line}; empty where the mechanism checks no bound against attacks."""
        return {}

    def attack_inputs(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """The inputs an attack job releases, attacks and scores against: the test samples
        themselves, unless the mechanism's claim is stated for transformed inputs (dFIL's
        van Trees bound, for inputs from the smoothed distribution its prior term is of)."""
        return x

    def noise(self) -> NoiseModel | None:
        """The distribution of the randomness added to `encoder(x)`, if additive."""
        return None

    def claim_metrics(self, task: Task, splits: Splits) -> dict[str, Any]:
        """Metrics on the utility row that check the mechanism's own claim without an attack
        (e.g. LUCID's bound_validity on probe inputs); none by default."""
        return {}


class Attack(Parameterised, ABC):
    """A reconstruction attack: `fit` on the attacker's aux data, then `reconstruct`.

    Devices (bench.core.device): `fit` keeps `ctx.device` as `self.device` and computes there;
    `reconstruct` and `ranked` accept a release on any device and return CPU tensors.
    """

    device: torch.device = CPU  # where fit put the attack's models (FitContext.device)

    name: ClassVar[str]
    modalities: ClassVar[frozenset[str]] = frozenset({"image", "tabular", "vector"})
    # An attack's `defaults` and `param_ranges` are its own parameters; `queries`
    # (AttackParams), which every attack takes, is added to them.
    Params = AttackParams

    def __init__(self, **params: Any) -> None:
        self._resolve(f"attack {self.name}", params)

    @classmethod
    def _params_bases(cls) -> tuple[type, ...]:
        return (AttackParams,)

    @classmethod
    def _own_dicts(
        cls, specs: dict[str, ParamSpec]
    ) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        shared = {f.name for f in fields(AttackParams)}
        return as_dicts({k: v for k, v in specs.items() if k not in shared})

    @classmethod
    def declared_params(cls) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
        """Every parameter the attack takes (`queries` and its own), as `defaults` and
        `param_ranges` dicts."""
        return as_dicts(cls.param_specs())

    @abstractmethod
    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        """Prepare the attack (train an inverter, fit a prior) from aux data only."""

    @abstractmethod
    def reconstruct(self, release: Release) -> torch.Tensor:
        """Estimate the private inputs (N, *input_shape) from a release."""

    def tuned(self) -> dict[str, float]:
        """What `fit` chose from aux data (a prior's shrinkage, a penalty weight), by metric
        name; the harness reports each on the attack's row, so a reader sees the setting
        behind the number."""
        return {}

    def ranked(self, release: Release, k: int) -> torch.Tensor:
        """For discrete inputs: the k best candidate ids per position, (N, *input_shape, k)."""
        raise NotImplementedError(f"attack {self.name} does not rank discrete candidates")
