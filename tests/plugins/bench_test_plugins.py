"""An out-of-tree plug-in distribution used by the tests: faulty mechanisms and a liar about
its privacy claim, registered through the `bench.mechanisms` entry point group (see the
dist-info beside this file)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch
import torch.nn.functional as F

from bench.plugin import (
    FitContext,
    Guarantee,
    InputSpaceMechanism,
    Mechanism,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.plugin.accounting import check_privacy_params, gaussian_sigma


class NaNMechanism(InputSpaceMechanism):
    """Returns NaN for every release: the harness must refuse to store it."""

    name = "test-nan"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        return Release.all_released(torch.full_like(x, float("nan")))

    def guarantee(self) -> Guarantee:
        return Guarantee("none")


class ShortMechanism(InputSpaceMechanism):
    """Drops the last row of every release: a shape mismatch."""

    name = "test-short"

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        return Release.all_released(x[:-1].clone())

    def guarantee(self) -> Guarantee:
        return Guarantee("none")


class HalfNoiseGauss(InputSpaceMechanism):
    """Gaussian noise on the input at half the scale (eps, delta, r)-IP over l2 needs, while
    claiming it (the privacy audit must refute it)."""

    name = "test-half-noise"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0, "delta": 1e-5, "r": 0.1}

    def check_params(self) -> None:
        check_privacy_params(*(float(self.params[k]) for k in ("eps", "delta", "r")))

    def calibrate(self, task: Task) -> NoiseModel:
        eps, delta, r = (float(self.params[k]) for k in ("eps", "delta", "r"))
        return NoiseModel("gaussian", gaussian_sigma(eps, delta, r)[0] / 2)

    def guarantee(self) -> Guarantee:
        claim = {k: float(self.params[k]) for k in ("eps", "delta")}
        return Guarantee("ip", {**claim, "radius": float(self.params["r"])}, "l2/input")


class NoisyCentroids(Mechanism):
    """Labels from the nearest class centroid of the training inputs, the centroids
    perturbed by Gaussian noise of std `std` (1e-3), while claiming (1, 1e-5)-DP over
    training sets: one training record moves a centroid far more than that noise hides, so
    the training-set audit (bench.certify.audit.training_sets) must refute it."""

    name = "test-dp-liar"
    modalities = frozenset({"tabular"})
    releases_labels = True
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0, "delta": 1e-5, "std": 1e-3}

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        x, y = splits.train.x.float().flatten(1), splits.train.y.long()
        self.classes = task.num_classes
        means = torch.stack(
            [x[y == c].mean(0) if bool((y == c).any()) else x.mean(0) for c in range(self.classes)]
        )
        noise = torch.randn(means.shape, generator=ctx.generator("centroids"))
        self.centroids = means + float(self.params["std"]) * noise

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        labels = torch.cdist(x.float().flatten(1), self.centroids).argmin(1)
        return Release.all_released(F.one_hot(labels, self.classes).float())

    def predict(self, release: Release) -> torch.Tensor:
        return release.values

    def guarantee(self) -> Guarantee:
        claim = {k: float(self.params[k]) for k in ("eps", "delta")}
        return Guarantee("dp", claim, "training-set/add-remove")
