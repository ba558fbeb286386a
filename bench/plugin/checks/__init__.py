"""Contract checks for mechanisms, in the style of scikit-learn's `check_estimator`.

Each check is a small named function `check_*(mut) -> note` that raises `CheckFailed` with
a message saying what broke and how to fix it; `CHECKS` lists them in run order. `bench
validate` runs them all (see bench/plugin/checks/validation.py); pytest runs them one test per
check:

    from bench.plugin.checks import parametrize_with_checks

    @parametrize_with_checks(["gauss-input", MyMechanism, (MyMechanism, {"eps": 2.0})])
    def test_mechanism(mechanism, check):
        check(mechanism)

so `pytest -k check_no_nan` runs one check. A mechanism may declare checks it is known to
fail, each with a written reason, as a class attribute
`expected_failures = {"check_name": "why"}`; they are reported (pytest: xfail) rather
than hidden. The privacy audit cannot be waived this way.
"""

from __future__ import annotations

import atexit
import math
import random
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from bench.core.errors import BenchError, ConfigError
from bench.core.hashing import derive_seed
from bench.plugin.artifacts import ArtifactCache
from bench.plugin.checks.waivers import expected_failures_of
from bench.plugin.notions import known_notion, notion_spec, notions
from bench.plugin.protocols import (
    FitContext,
    Guarantee,
    Mechanism,
    NoiseModel,
    Release,
    Task,
)

VALIDATION_TASK = "fmnist"
VALIDATION_TASK_OPTIONS = {"n_train": 300, "n_aux": 100, "n_test": 100, "train_epochs": 1}
# The validation task by the mechanism's modality (first supported wins), and the options of
# a tabular one: 40 training records and 2x10 networks keep label-only fits (41 leave-one-out
# networks, LUCID's MILPs) within about a minute.
VALIDATION_TASKS = {"image": "fmnist", "tabular": "spam"}
TABULAR_TASK_OPTIONS = {"subsample": 40, "n_test": 200, "arch": "2x10", "train_epochs": 100}
LABEL_PROBES = 2000  # uniform domain samples behind the label-only noise checks
MIN_NOISED = 200  # noised answers needed to test a keep rate (4 sigma < 0.15)
BATCH = 16
RESIDUAL_DRAWS = 20_000  # noise coordinates behind the check of the declared noise scale


class CheckFailed(AssertionError):
    """A mechanism broke a contract; the message names the problem and the fix."""


def _fail(message: str) -> CheckFailed:
    return CheckFailed(message)


_SHARED_CACHE: list[Path] = []


def _shared_cache_root() -> Path:
    """One temporary artifact cache per process (removed at exit), so the utility model of
    the validation task is trained once for all mechanisms under test."""
    if not _SHARED_CACHE:
        root = Path(tempfile.mkdtemp(prefix="bench-checks-"))
        atexit.register(shutil.rmtree, root, ignore_errors=True)
        _SHARED_CACHE.append(root)
    return _SHARED_CACHE[0]


def default_validation_task(cls: type) -> str:
    """The validation task for a mechanism class: by the first of its modalities that has
    one (image before tabular), else Fashion-MNIST (prepare then names the mismatch)."""
    modalities = getattr(cls, "modalities", frozenset())
    for modality, task in VALIDATION_TASKS.items():
        if modality in modalities:
            return task
    return VALIDATION_TASK


def validation_task(name: str = VALIDATION_TASK) -> Task:
    """A small real task to validate on: Fashion-MNIST with 300 / 100 / 100 samples and one
    training epoch by default, a tabular task with TABULAR_TASK_OPTIONS; other tasks get
    whichever of the image options they accept."""
    import inspect

    from bench.plugin.registry import TASKS
    from bench.suite.read import make_task

    cls = TASKS.get(name)
    wanted = TABULAR_TASK_OPTIONS if cls.modality == "tabular" else VALIDATION_TASK_OPTIONS
    accepted = set(inspect.signature(cls.__init__).parameters)
    options = {k: v for k, v in wanted.items() if k in accepted}
    return make_task(name, options, "<validation>")


@dataclass(eq=False)
class MechanismUnderTest:
    """A mechanism class and its parameters, fitted once (lazily, on the validation task)
    and shared by every check; fresh instances come from `new()`."""

    cls: type[Mechanism]
    params: dict[str, Any] = field(default_factory=dict)
    task_name: str | None = None  # None: by the mechanism's modality
    seed: int = 0
    cache_root: Path | None = None
    fit_budget_s: float = 300.0
    release_budget_ms: float = 100.0
    audit_options: dict[str, Any] = field(default_factory=dict)
    _fit_error: str | None = field(default=None, init=False, repr=False)
    _fitted: Mechanism | None = field(default=None, init=False, repr=False)
    fit_seconds: float | None = field(default=None, init=False)
    audit_result: Any = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        return str(getattr(self.cls, "name", self.cls.__name__))

    @property
    def label(self) -> str:
        """e.g. "gauss-input" or "gauss-input(eps=2.0)": the pytest id prefix."""
        if not self.params:
            return self.name
        return f"{self.name}({','.join(f'{k}={v}' for k, v in sorted(self.params.items()))})"

    def __repr__(self) -> str:  # pytest shows this for the parameter
        return self.label

    def new(self) -> Mechanism:
        """A fresh, unfitted instance with the parameters under test."""
        return self.cls(**self.params)

    @cached_property
    def task(self) -> Task:
        task = validation_task(self.task_name or default_validation_task(self.cls))
        task.splits()
        return task

    def fitted(self) -> Mechanism:
        """The instance fitted on the validation task (fit once; a fit error fails every
        check that needs it, with the original message)."""
        if self._fit_error is not None:
            raise _fail(f"not run: fit failed ({self._fit_error})")
        if self._fitted is None:
            mech = self.new()
            cache = ArtifactCache(self.cache_root or _shared_cache_root())
            start = time.perf_counter()
            try:
                mech.fit(self.task, self.task.splits(), FitContext(self.seed, cache))
            except Exception as exc:  # the mechanism's bug, reported by check_fit
                self._fit_error = f"{type(exc).__name__}: {exc}"
                raise _fail(f"fit raised {self._fit_error}") from exc
            self.fit_seconds = time.perf_counter() - start
            self._fitted = mech
        return self._fitted

    def inputs(self, n: int = BATCH) -> torch.Tensor:
        """The first `n` test inputs of the validation task (a fresh copy)."""
        return self.task.splits().test.x[:n].clone()

    def release(self, x: torch.Tensor, seed: int) -> Release:
        return self.fitted().release(x, torch.Generator().manual_seed(seed))

    def randomized(self) -> bool:
        """Whether each release must draw fresh randomness: it declares noise, or a privacy
        claim about its inputs (a claim about the training data, e.g. DP training, may be
        met in fit and leave the release deterministic)."""
        mech = self.fitted()
        spec = notion_spec(mech.guarantee().notion)
        return mech.noise() is not None or (spec.claims_privacy and spec.neighbours == "inputs")

    @property
    def label_only(self) -> bool:
        """Whether the mechanism releases labels only (declares `releases_labels`)."""
        return bool(getattr(self.cls, "releases_labels", False))

    def label_probes(self) -> torch.Tensor:
        """Test inputs plus LABEL_PROBES uniform samples of the data range: distinct inputs,
        many of them far from the data where label-only mechanisms tend to noise."""
        lo, hi = self.task.data_range
        test = self.task.splits().test.x
        gen = torch.Generator().manual_seed(derive_seed(self.seed, "label-probes"))
        uniform = lo + (hi - lo) * torch.rand((LABEL_PROBES, *test.shape[1:]), generator=gen)
        return torch.cat([test.clone(), uniform.to(test.dtype)])


# ---------------------------------------------------------------------------- checks


def check_declares_guarantee(mut: MechanismUnderTest) -> str:
    """guarantee() returns a Guarantee with a registered notion (bench.plugin.notions) and
    well-formed parameters: a claim needs its notion's level (eps, or e.g. inv_dfil) finite
    and > 0 (>= 0 where the notion allows 0, as 0-iDP), delta in [0, 1), a radius and a
    distance for a notion that holds within a radius, and for a notion over training sets the
    neighbouring relation on the training data as its distance, e.g.
    'training-set/add-remove'; "none" is a valid declaration for reference mechanisms."""
    g = mut.fitted().guarantee()
    if not isinstance(g, Guarantee):
        raise _fail(
            f"guarantee() must return a bench.plugin.protocols.Guarantee, got {type(g).__name__}"
        )
    if not known_notion(g.notion):
        names = ", ".join(s.name for s in notions())
        raise _fail(f"unknown notion {g.notion!r}; use one of {names} (or register_notion)")
    spec = notion_spec(g.notion)
    # "not_private": a diagnostic setting's own statement that its claim does not hold (why).
    void = g.params.get("not_private")
    if void is not None and not (isinstance(void, str) and void):
        raise _fail("guarantee parameter 'not_private' must be a non-empty reason (a string)")
    bad = [
        k
        for k, v in g.params.items()
        if k != "not_private" and not (isinstance(v, int | float) and math.isfinite(v))
    ]
    if bad:
        raise _fail(f"guarantee parameters {bad} must be finite numbers")
    if spec.claims_privacy:
        param = spec.level.param
        level = g.params.get(param)
        ok = level is not None and (level >= 0 if spec.zero_level else level > 0)
        if not ok:
            bound = ">= 0" if spec.zero_level else "> 0"
            raise _fail(f"a {g.notion} claim needs {param} {bound} in its params, got {level!r}")
        delta = g.params.get("delta", 0.0)
        if not 0 <= delta < 1:
            raise _fail(f"delta must lie in [0, 1), got {delta}")
    if spec.neighbours == "training set" and not str(g.distance or "").startswith("training-"):
        raise _fail(
            f"a {g.notion} claim must name its neighbouring datasets as its distance, e.g. "
            f"'training-set/add-remove' or 'training-labels/replace-one', got {g.distance!r}"
        )
    if spec.radius:
        if not g.params.get("radius", 0) > 0:
            raise _fail(f"a {g.notion} claim needs a radius > 0 in its params")
        if not g.distance:
            raise _fail(f"a {g.notion} claim must name its distance, e.g. 'l2/input'")
    from bench.report.board.labels import describe_guarantee

    return describe_guarantee(g.to_dict())


def check_unknown_parameter_refused(mut: MechanismUnderTest) -> str:
    """An unknown constructor parameter is a ConfigError (a typo in a suite must not be
    silently ignored); Mechanism.__init__ does this unless a subclass bypasses it."""
    try:
        mut.cls(**mut.params, no_such_parameter=1)
    except ConfigError:
        return ""
    except Exception as exc:
        raise _fail(f"an unknown parameter raised {type(exc).__name__}, not ConfigError") from exc
    raise _fail("an unknown parameter was accepted; call Mechanism.__init__ (bench.plugin.params)")


def check_fit(mut: MechanismUnderTest) -> str:
    """fit(task, splits, ctx) runs on the validation task."""
    mut.fitted()
    return f"{mut.fit_seconds:.1f} s on {mut.task.name}"


def check_release_contract(mut: MechanismUnderTest) -> str:
    """release() returns a Release with N rows of numeric values, a bool (N,) released
    mask, (N,)-shaped meta, and the same per-row shape for every batch size."""
    x = mut.inputs()
    n = len(x)
    rel = mut.release(x, 0)
    if not isinstance(rel, Release):
        raise _fail(f"release() must return a Release, got {type(rel).__name__}")
    if not isinstance(rel.values, torch.Tensor) or len(rel.values) != n:
        got = tuple(rel.values.shape) if isinstance(rel.values, torch.Tensor) else rel.values
        raise _fail(f"release of {n} inputs has values of shape {got}; need {n} rows")
    if rel.values.dtype in (torch.bool, torch.complex64, torch.complex128):
        raise _fail(f"release values must be real numbers, got dtype {rel.values.dtype}")
    if not isinstance(rel.released, torch.Tensor) or rel.released.dtype != torch.bool:
        raise _fail("Release.released must be a bool tensor")
    if tuple(rel.released.shape) != (n,):
        raise _fail(f"Release.released has shape {tuple(rel.released.shape)}; need ({n},)")
    for key, value in rel.meta.items():
        if not isinstance(value, torch.Tensor) or len(value) != n:
            raise _fail(f"Release.meta[{key!r}] must be a tensor with {n} rows")
    single = mut.release(x[:1], 0)
    if tuple(single.values.shape[1:]) != tuple(rel.values.shape[1:]):
        raise _fail(
            f"per-row release shape depends on the batch: {tuple(single.values.shape[1:])} "
            f"for 1 input, {tuple(rel.values.shape[1:])} for {n}"
        )
    return f"values {tuple(rel.values.shape)} {rel.values.dtype}"


def check_predict_contract(mut: MechanismUnderTest) -> str:
    """predict(release) returns (N, num_classes) floating-point class scores."""
    x = mut.inputs()
    scores = mut.fitted().predict(mut.release(x, 0))
    want = (len(x), mut.task.num_classes)
    if not isinstance(scores, torch.Tensor) or tuple(scores.shape) != want:
        got = tuple(scores.shape) if isinstance(scores, torch.Tensor) else type(scores).__name__
        raise _fail(f"predict() must return scores of shape {want}, got {got}")
    if not scores.is_floating_point():
        raise _fail(f"predict() scores must be floating point, got {scores.dtype}")
    return ""


def check_no_nan(mut: MechanismUnderTest) -> str:
    """Released values and predictions are finite, on real inputs and on the corners of
    the data range (all lo, all hi), where saturating code tends to break."""
    lo, hi = mut.task.data_range
    x = mut.inputs()
    for what, batch in (
        ("test inputs", x),
        ("all-lo inputs", torch.full_like(x[:4], lo)),
        ("all-hi inputs", torch.full_like(x[:4], hi)),
    ):
        rel = mut.release(batch, 1)
        kept = rel.values[rel.released]
        if kept.is_floating_point() and not torch.isfinite(kept).all():
            bad = int((~torch.isfinite(kept)).flatten(1).any(1).sum())
            raise _fail(f"release values contain NaN or inf for {bad} of {len(kept)} {what}")
        scores = mut.fitted().predict(rel)
        if isinstance(scores, torch.Tensor) and not torch.isfinite(scores).all():
            raise _fail(f"predict() returns NaN or inf on {what}")
    return ""


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal shapes and values, NaN equal to NaN (NaN is check_no_nan's business)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.is_floating_point():
        return bool(torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))
    return torch.equal(a, b)


def check_deterministic_under_seed(mut: MechanismUnderTest) -> str:
    """Two releases with generators seeded alike are identical (results reproduce)."""
    x = mut.inputs()
    a, b = mut.release(x, 7), mut.release(x, 7)
    if not (_identical(a.values, b.values) and torch.equal(a.released, b.released)):
        raise _fail(
            "two releases with the same generator seed differ; draw every random "
            "number from the `generator` argument"
        )
    return ""


def _global_states() -> tuple[torch.Tensor, Any, Any]:
    return torch.get_rng_state(), np.random.get_state(), random.getstate()


def check_randomness_from_generator_only(mut: MechanismUnderTest) -> str:
    """release() neither reads nor advances the global RNGs (torch, numpy, random): the
    output depends on the generator alone."""
    x = mut.inputs()
    mut.fitted()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        before = _global_states()
        a = mut.release(x, 11)
        after = _global_states()
        torch.manual_seed(2)
        b = mut.release(x, 11)
    if not _identical(a.values, b.values):
        raise _fail("release output depends on the global torch seed; use `generator`")
    same = (
        torch.equal(before[0], after[0]),
        _numpy_state_equal(before[1], after[1]),
        before[2] == after[2],
    )
    for used, rng in zip(same, ("torch", "numpy", "random"), strict=True):
        if not used:
            raise _fail(f"release() consumed the global {rng} RNG; draw from `generator`")
    return ""


def _numpy_state_equal(a: Any, b: Any) -> bool:
    return a[0] == b[0] and np.array_equal(a[1], b[1]) and tuple(a[2:]) == tuple(b[2:])


def check_randomness_not_reused(mut: MechanismUnderTest) -> str:
    """A randomized mechanism (declared noise or claim) draws fresh randomness per call and
    per row: two calls with one generator differ, identical rows in a batch differ, and
    different seeds differ. Deterministic mechanisms without a claim have nothing to check."""
    if mut.label_only:
        return "label-only: see check_repeated_queries_agree, check_label_noise_calibration"
    if not mut.randomized():
        return "deterministic release (no noise, no claim about inputs): nothing to check"
    mech = mut.fitted()
    x = mut.inputs(4)
    gen = torch.Generator().manual_seed(3)
    first, second = mech.release(x, gen), mech.release(x, gen)
    kept = first.released & second.released
    if kept.any() and _identical(first.values[kept], second.values[kept]):
        raise _fail(
            "two calls with one generator returned identical releases: the "
            "randomness is reused (re-seeded inside release?)"
        )
    rows = mut.release(x[:1].expand(8, *x.shape[1:]).clone(), 5)
    flat = rows.values[rows.released].flatten(1)
    if len(flat) > 1 and len(torch.unique(flat, dim=0)) < len(flat):
        raise _fail(
            "identical inputs in one batch got identical releases: noise is shared across rows"
        )
    if _identical(mut.release(x, 5).values, mut.release(x, 6).values):
        raise _fail("different generator seeds give identical releases")
    return ""


def check_input_not_modified(mut: MechanismUnderTest) -> str:
    """release() leaves its input tensor unchanged (callers reuse it for metrics)."""
    x = mut.inputs()
    original = x.clone()
    mut.release(x, 0)
    if not torch.equal(x, original):
        raise _fail("release() modified its input in place; work on a copy")
    return ""


def _residual_problem(residual: torch.Tensor, noise: NoiseModel) -> str | None:
    """Why `residual` (release - encoder output) does not look like i.i.d. draws of the
    declared noise, or None: its std within 10% (over 20,000 draws that is > 10 standard
    errors, Laplace included) and its mean within 5 standard errors."""
    r = residual.double().flatten()
    if len(r) < 100:
        return None
    std = float(r.std())
    if abs(std - noise.std) > 0.1 * noise.std:
        return f"release - encoder(x) has std {std:.4g}, the declared noise() has {noise.std:.4g}"
    if abs(float(r.mean())) > 5 * noise.std / math.sqrt(len(r)):
        return f"release - encoder(x) has mean {float(r.mean()):.3g}; the noise must be centred"
    return None


def check_encoder_and_noise_exposed(mut: MechanismUnderTest) -> str:
    """encoder() returns the deterministic part of the release as an nn.Module (white-box
    threat model) and noise() a NoiseModel or None; a declared additive noise model must
    match the release: release = encoder(x) + noise, with the declared scale."""
    mech = mut.fitted()
    encoder, noise = mech.encoder(), mech.noise()
    if mut.label_only and encoder is None and noise is None:
        return "label-only access: no encoder to attack (no reconstruction attacks)"
    if not isinstance(encoder, nn.Module):
        raise _fail(
            "encoder() returns no nn.Module: expose the deterministic part of the "
            "release for white-box attacks (or declare an expected failure with a "
            "reason)"
        )
    if noise is not None and not isinstance(noise, NoiseModel):
        raise _fail(f"noise() must return a NoiseModel or None, got {type(noise).__name__}")
    if noise is None:
        return "encoder exposed; no additive noise model"
    x = mut.inputs()
    per_batch = mut.release(x, 2).values.numel()
    reps = max(8, -(-RESIDUAL_DRAWS // max(per_batch, 1)))  # enough coordinates for the std
    x = x.repeat(reps, *[1] * (x.dim() - 1))
    rel = mut.release(x, 2)
    with torch.no_grad():
        mean = encoder(x)
    if tuple(mean.shape) != tuple(rel.values.shape):
        raise _fail(
            f"encoder output {tuple(mean.shape)} does not match the release "
            f"{tuple(rel.values.shape)} though an additive noise() is declared"
        )
    problem = _residual_problem((rel.values - mean)[rel.released], noise)
    if problem:
        raise _fail(problem)
    return f"encoder exposed; {noise.kind} noise, scale {noise.scale:.4g}"


def check_label_release(mut: MechanismUnderTest) -> str:
    """A label-only mechanism (`releases_labels`) releases one label per query: (N,
    num_classes) one-hot rows, and predict() ranks the released label first."""
    if not mut.label_only:
        return "not label-only: nothing to check"
    x = mut.label_probes()
    rel = mut.release(x, 0)
    k = mut.task.num_classes
    if tuple(rel.values.shape) != (len(x), k):
        got = tuple(rel.values.shape)
        raise _fail(f"a label release must be (N, {k}) one-hot rows, got {got}")
    v = rel.values[rel.released]
    bad = int((((v != 0) & (v != 1)).any(1) | (v.sum(1) != 1)).sum())
    if bad:
        raise _fail(f"{bad} of {len(v)} released rows are not one-hot labels")
    scores = mut.fitted().predict(rel)[rel.released]
    if not torch.equal(scores.argmax(1), v.argmax(1)):
        raise _fail("predict() does not rank the released label first")
    return f"{len(v)} one-hot labels over {k} classes"


def check_repeated_queries_agree(mut: MechanismUnderTest) -> str:
    """A label-only mechanism that refuses repeated queries (`repeatable_queries` False)
    remembers its answers: the same input gets the same label again, under another
    generator and within one batch, so repeating a query gains an attacker nothing."""
    if not mut.label_only or getattr(mut.cls, "repeatable_queries", True):
        return "no per-input memory claimed: nothing to check"
    x = mut.label_probes()
    first, again = mut.release(x, 21), mut.release(x, 22)
    both = first.released & again.released
    differ = int((first.values[both] != again.values[both]).any(1).sum())
    if differ:
        raise _fail(
            f"{differ} of {int(both.sum())} repeated queries got another answer; remember "
            "each noisy answer per input"
        )
    noised = first.meta.get("noised", torch.zeros(len(x), dtype=torch.bool))
    picks = torch.cat([noised.nonzero().squeeze(1)[:4], torch.arange(2)])
    lo, hi = mut.task.data_range
    fresh = (x[-4:] + 1e-3).clamp(lo, hi)  # inputs not queried yet: memory within a batch
    for row in torch.cat([x[picks], fresh]):
        rel = mut.release(row.unsqueeze(0).repeat(8, *[1] * row.dim()), 23)
        if len(torch.unique(rel.values[rel.released], dim=0)) > 1:
            raise _fail("copies of one input in one batch got different answers")
    return f"{len(x)} inputs queried twice ({int(noised.sum())} noised): the same answers"


def check_label_noise_calibration(mut: MechanismUnderTest) -> str:
    """Label-only noise matches the claim: answers not marked noised (Release.meta
    "noised") are the served network's (`model`) label, and noised answers keep that label
    at a rate eps allows, at most e^eps / (e^eps + k - 1) (4 sigma): against a neighbouring
    network predicting another label, a higher rate breaks eps-(i)DP."""
    if not mut.label_only:
        return "not label-only: nothing to check"
    mech = mut.fitted()
    model = getattr(mech, "model", None)
    if not isinstance(model, nn.Module):
        return "no served network exposed as `model`: nothing to compare with"
    x = mut.label_probes()
    rel = mut.release(x, 31)
    with torch.no_grad():
        predicted = model(x).argmax(1)
    labels = rel.values.argmax(1)
    noised = rel.meta.get("noised", torch.zeros(len(x), dtype=torch.bool)) & rel.released
    plain = rel.released & ~noised
    changed = int((labels[plain] != predicted[plain]).sum())
    if changed:
        raise _fail(
            f"{changed} answers not marked noised differ from the served network's label; "
            "mark noised answers in Release.meta['noised']"
        )
    n = int(noised.sum())
    if n == 0:
        return f"no query-time noise on {len(x)} probes: the network's labels as they are"
    eps = mech.guarantee().params.get("eps")
    if eps is None or not math.isfinite(eps):
        return f"{n} noised answers; no finite eps declared to check them against"
    if n < MIN_NOISED:
        return f"only {n} noised answers of {len(x)} probes: too few to test the keep rate"
    k = mut.task.num_classes
    allowed = math.exp(eps) / (math.exp(eps) + k - 1)
    keep = float((labels[noised] == predicted[noised]).float().mean())
    if keep > allowed + 4 * math.sqrt(allowed * (1 - allowed) / n):
        raise _fail(
            f"noised answers keep the network's label at rate {keep:.3f} over {n}, above "
            f"e^eps / (e^eps + k - 1) = {allowed:.3f} that eps = {eps:g} allows"
        )
    return f"{n} noised answers keep the label at rate {keep:.3f} (eps = {eps:g}: <= {allowed:.3f})"


def check_time_budget(mut: MechanismUnderTest) -> str:
    """fit on the validation task and release per sample stay within the time budget."""
    mut.fitted()
    x = mut.task.splits().test.x
    start = time.perf_counter()
    mut.release(x, 0)
    per_sample_ms = 1000 * (time.perf_counter() - start) / len(x)
    if mut.fit_seconds is not None and mut.fit_seconds > mut.fit_budget_s:
        raise _fail(f"fit took {mut.fit_seconds:.1f} s > budget {mut.fit_budget_s:g} s")
    if per_sample_ms > mut.release_budget_ms:
        raise _fail(
            f"release took {per_sample_ms:.1f} ms per sample > budget {mut.release_budget_ms:g} ms"
        )
    return f"fit {mut.fit_seconds:.1f} s, release {per_sample_ms:.3g} ms/sample"


def check_privacy_audit(mut: MechanismUnderTest) -> str:
    """The empirical lower bound on eps (bench.certify.audit.core) does not exceed the claim at
    95% confidence; claims the audit cannot test pass with the reason noted."""
    from bench.certify.audit.core import audit_mechanism

    result = audit_mechanism(mut.fitted(), mut.task, mut.seed, **mut.audit_options)
    mut.audit_result = result
    if not result.passed:
        raise _fail(f"claim refuted at {result.confidence:.0%} confidence: {result.verdict()}")
    return result.verdict()


CHECKS: tuple[Callable[[MechanismUnderTest], str], ...] = (
    check_declares_guarantee,
    check_unknown_parameter_refused,
    check_fit,
    check_release_contract,
    check_predict_contract,
    check_no_nan,
    check_deterministic_under_seed,
    check_randomness_from_generator_only,
    check_randomness_not_reused,
    check_input_not_modified,
    check_encoder_and_noise_exposed,
    check_label_release,
    check_repeated_queries_agree,
    check_label_noise_calibration,
    check_time_budget,
    check_privacy_audit,
)


# ----------------------------------------------------------------------------- pytest

# What a user without pytest is told: `pip install bench-privacy` does not bring it.
PYTEST_MISSING = (
    "parametrize_with_checks needs pytest, which bench does not install: "
    "pip install 'bench-privacy[test]' (or pip install pytest)"
)

MechanismSpec = str | type | tuple[str | type, dict[str, Any]] | MechanismUnderTest


def under_test(spec: MechanismSpec, **options: Any) -> MechanismUnderTest:
    """A MechanismUnderTest from a registered name, `module:Class`, a class, or a
    (name or class, params) tuple; `options` are MechanismUnderTest fields."""
    from bench.plugin.registry import MECHANISMS

    if isinstance(spec, MechanismUnderTest):
        return spec
    target, params = spec if isinstance(spec, tuple) else (spec, {})
    cls = MECHANISMS.get(target) if isinstance(target, str) else target
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)):
        raise BenchError(f"{target!r} is not a bench Mechanism subclass")
    # Every registered family imported, so each has registered its notion (its hooks module):
    # a mechanism under test may claim a family's notion without importing that family.
    MECHANISMS.names()
    return MechanismUnderTest(cls, dict(params), **options)


def parametrize_with_checks(mechanisms: Iterable[MechanismSpec], **options: Any) -> Any:
    """pytest.mark.parametrize over (mechanism, check): one test per check per mechanism,
    id "<label>-<check name>", declared expected failures marked xfail with their reason.
    `options` are MechanismUnderTest fields (seed, audit_options, budgets, ...)."""
    try:
        import pytest
    except ImportError as exc:  # bench's own dependencies do not include pytest
        raise ImportError(PYTEST_MISSING) from exc

    params = []
    for spec in mechanisms:
        mut = under_test(spec, **options)
        expected = expected_failures_of(mut.cls)
        for check in CHECKS:
            name = check.__name__
            marks = [pytest.mark.xfail(reason=expected[name])] if name in expected else []
            params.append(pytest.param(mut, check, id=f"{mut.label}-{name}", marks=marks))
    return pytest.mark.parametrize(("mechanism", "check"), params)


__all__ = [
    "CHECKS",
    "CheckFailed",
    "MechanismUnderTest",
    "default_validation_task",
    "expected_failures_of",
    "parametrize_with_checks",
    "under_test",
    "validation_task",
]
