"""An out-of-tree plug-in distribution used by the tests: faulty mechanisms, registered
through the `bench.mechanisms` entry point group (see the dist-info beside this file)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from bench.plugin import Guarantee, InputSpaceMechanism, NoiseModel, Release, Task
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
