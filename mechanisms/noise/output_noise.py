"""Output perturbation for inference privacy (IP paper, Sec. IV): `lap-output` and
`gauss-output` release the utility model's logits f(x) plus noise scaled by r times a
certified global Lipschitz bound of f (bench.certify.lipschitz.global_bounds), so that inputs within
distance r give outputs within sensitivity r L and the Laplace / Gaussian mechanism applies.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch
from torch import nn

from bench.certify.lipschitz.global_bounds import LipschitzBound, Norm, lipschitz_upper_bound
from bench.core.device import to_cpu
from bench.plugin.accounting import check_privacy_params, gaussian_sigma, laplace_scale
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
from bench.plugin.training import predict_scores
from mechanisms.noise.served_models import (
    GaussianIPParams,
    ServedModel,
    base_model,
    noise_finetuned,
)


class OutputNoiseMechanism(Mechanism):
    """Release f(x) + noise on the logits; the server reads the noisy logits (predict is the
    identity) and white-box attackers invert f, the encoder.

    `model` picks f: "sll" (1-Lipschitz by construction) or "cnn" (the task's CNN, whose
    certified constant is large). With `finetune`, f is first fine-tuned with the calibrated
    noise on its logits; the constant is then re-certified on the fine-tuned weights and the
    release noise recalibrated to it.
    """

    norm: ClassVar[Norm]
    modalities = frozenset({"image"})

    @abstractmethod
    def calibrate(self, lipschitz: float) -> NoiseModel:
        """The noise for sensitivity r * lipschitz under the current parameters."""

    def certify(self, model: nn.Module, input_shape: tuple[int, ...]) -> NoiseModel:
        """Certify the global Lipschitz bound of `model` (kept as `self.lipschitz`) and
        return the noise calibrated to it."""
        self.lipschitz: LipschitzBound = lipschitz_upper_bound(model, input_shape, self.norm)
        return self.calibrate(self.lipschitz.value)

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        kind = self.p.model
        self.device = ctx.device
        self.model = base_model(task, ctx, kind)
        self._noise = self.certify(self.model, task.input_shape)
        if self.p.finetune:
            self.model = noise_finetuned(task, ctx, kind, self._noise, "output")
            self._noise = self.certify(self.model, task.input_shape)

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        logits = predict_scores(self.model, x)  # on the model's device, as are the draws
        noisy = logits + self._noise.sample(logits.shape, generator, logits.device)
        return Release.all_released(noisy).cpu()

    def predict(self, release: Release) -> torch.Tensor:
        return to_cpu(release.values)

    def encoder(self) -> nn.Module:
        return self.model

    def noise(self) -> NoiseModel:
        return self._noise


@register_mechanism
class LapOutput(OutputNoiseMechanism):
    """f(x) + Lap(r L1 / eps) per logit: pure (eps, 0, r)-IP over l1 in input space (IP
    paper, Thm 1: ||f(x) - f(x')||_1 <= L1 r, then the Laplace mechanism, Dwork & Roth
    Thm 3.6). L1 is the certified l1 -> l1 constant of f."""

    name = "lap-output"
    paper = "https://arxiv.org/abs/2411.18746"
    norm = "l1"

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0
        r: float = 0.1
        model: ServedModel = "sll"
        finetune: bool = False

    p: Params

    def check_params(self) -> None:
        check_privacy_params(self.p.eps, None, self.p.r)

    def calibrate(self, lipschitz: float) -> NoiseModel:
        return NoiseModel("laplace", laplace_scale(self.p.eps, self.p.r * lipschitz))

    def guarantee(self) -> Guarantee:
        return Guarantee("ip", {"eps": self.p.eps, "delta": 0.0, "radius": self.p.r}, "l1/input")


@register_mechanism
class GaussOutput(OutputNoiseMechanism):
    """f(x) + N(0, sigma^2) per logit: (eps, delta, r)-IP over l2 in input space (IP paper,
    Thm 2), sensitivity r L2 with L2 the certified l2 constant of f. sigma is the classic
    sqrt(2 ln(1.25/delta)) r L2 / eps for eps < 1 (Dwork & Roth Thm A.1), and for eps >= 1,
    where that constant is unproven, the analytic Gaussian mechanism (Balle & Wang 2018)."""

    name = "gauss-output"
    paper = "https://arxiv.org/abs/2411.18746"
    norm = "l2"

    Params = GaussianIPParams
    p: Params

    def check_params(self) -> None:
        check_privacy_params(self.p.eps, self.p.delta, self.p.r)

    def calibrate(self, lipschitz: float) -> NoiseModel:
        p = self.p
        sigma, self.calibration_rule = gaussian_sigma(p.eps, p.delta, p.r * lipschitz)
        return NoiseModel("gaussian", sigma)

    def guarantee(self) -> Guarantee:
        p = self.p
        return Guarantee("ip", {"eps": p.eps, "delta": p.delta, "radius": p.r}, "l2/input")
