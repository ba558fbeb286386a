"""An out-of-tree plug-in distribution used by the tests: faulty mechanisms, registered
through the `bench.mechanisms` entry point group (see the dist-info beside this file)."""

from __future__ import annotations

import torch

from bench.protocols import Guarantee, NoiseModel, Release, Task
from mechanisms.base import InputSpaceMechanism
from mechanisms.noise.input_noise import GaussInput


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


class HalfNoiseGauss(GaussInput):
    """gauss-input with its noise scale halved: claims (eps, delta, r)-IP it does not have
    (the privacy audit must refute it)."""

    name = "test-half-noise"

    def calibrate(self, task: Task) -> NoiseModel:
        return NoiseModel("gaussian", super().calibrate(task).scale / 2)
