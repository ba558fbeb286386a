"""Input perturbation: `ldp-image` (Laplace, eps-LDP) and `gauss-input` (Gaussian, IP)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from bench.core.errors import ConfigError
from bench.plugin.accounting import check_privacy_params, gaussian_sigma, laplace_scale
from bench.plugin.input_space import DISCRETE, InputSpaceMechanism
from bench.plugin.protocols import FitContext, Guarantee, NoiseModel, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.dfil.split_tuning import noise_tuned_server
from mechanisms.noise.served_models import GaussianIPParams, ServedModel, ip_model


@register_mechanism
class LDPImage(InputSpaceMechanism):
    """Laplace noise on every pixel for eps-LDP over the whole image (Posthoc supplement,
    LDP-Image baseline).

    Any two images of the domain [lo, hi]^d differ by at most d * (hi - lo) in l1, so
    that is the l1 sensitivity and b = d * (hi - lo) / eps (Laplace mechanism). This is
    the honest price of protecting the whole image, and why the baseline is weak.
    """

    name = "ldp-image"
    paper = "https://papers.nips.cc/paper_files/paper/2023/hash/5433b79562b9fa85bd5da0c95a78c907-Abstract-Conference.html"

    @dataclass(frozen=True)
    class Params:
        eps: float = 1.0

    p: Params

    def check_params(self) -> None:
        check_privacy_params(self.p.eps)

    def calibrate(self, task: Task) -> NoiseModel:
        lo, hi = task.data_range
        self.l1_sensitivity = math.prod(task.input_shape) * (hi - lo)
        return NoiseModel("laplace", laplace_scale(self.p.eps, self.l1_sensitivity))

    def guarantee(self) -> Guarantee:
        return Guarantee("ldp", {"eps": self.p.eps}, "any pair of inputs")


@register_mechanism
class GaussInput(InputSpaceMechanism):
    """Gaussian noise on the input for (eps, delta, r)-IP over l2 in input space (IP paper,
    Gauss-Input): inputs within l2 distance r are (eps, delta)-indistinguishable.

    sigma = sqrt(2 ln(1.25/delta)) r / eps for eps < 1 (classic Gaussian mechanism with
    sensitivity r); for eps >= 1 the classic constant is unproven, so sigma comes from the
    analytic Gaussian mechanism (Balle & Wang 2018), which is exact for every eps.

    The server classifies the release with `model`: "cnn" (the task's CNN) or "sll" (the
    1-Lipschitz network, for comparison with gauss-output on the same model). With
    `finetune`, that model is first fine-tuned on train inputs carrying the calibrated noise
    (the IP paper's noise-tuned ResNet-18); privacy is unchanged (post-processing, Prop. 1).

    On a discrete task (token or user / movie ids) the noise is added to the task's split
    intermediate (sst2: hidden states after the split block; movielens: the first linear
    layer's output), so the claim is over l2 in that space ("l2/split"); `finetune` then
    tunes the server part on noisy train intermediates (mechanisms.dfil.split_tuning).
    """

    name = "gauss-input"
    paper = "https://arxiv.org/abs/2411.18746"
    modalities = frozenset({"image", "tabular", "vector", "ids", "text"})

    @dataclass(frozen=True)
    class Params(GaussianIPParams):
        model: ServedModel = "cnn"

    p: Params

    def check_params(self) -> None:
        check_privacy_params(self.p.eps, self.p.delta, self.p.r)

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        self.task, self.device = task, ctx.device
        if task.modality in DISCRETE:  # noise on the split intermediate of the task's model
            if self.p.model != "cnn":
                raise ConfigError(f"mechanism gauss-input: model does not apply to {task.name}")
            self.discrete_fit(task, ctx)
            if self.p.finetune:
                self.model = noise_tuned_server(task, self._split, self._noise, ctx)
            return
        self._noise = self.calibrate(task)
        tuning_noise = self._noise if self.p.finetune else None
        self.model = ip_model(task, ctx, self.p.model, tuning_noise, "input")

    def calibrate(self, task: Task) -> NoiseModel:
        sigma, self.calibration_rule = gaussian_sigma(self.p.eps, self.p.delta, self.p.r)
        return NoiseModel("gaussian", sigma)

    def guarantee(self) -> Guarantee:
        p = self.p
        return Guarantee(
            "ip",
            {"eps": p.eps, "delta": p.delta, "radius": p.r},
            "l2/split" if getattr(self, "_split", None) is not None else "l2/input",
        )
