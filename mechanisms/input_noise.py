"""Input perturbation: `ldp-image` (Laplace, eps-LDP) and `gauss-input` (Gaussian, IP)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from bench.protocols import Guarantee, NoiseModel, Task
from bench.registry import register_mechanism
from mechanisms.base import InputSpaceMechanism
from mechanisms.calibration import check_privacy_params, gaussian_sigma, laplace_scale


@register_mechanism
class LDPImage(InputSpaceMechanism):
    """Laplace noise on every pixel for eps-LDP over the whole image (Posthoc supplement,
    LDP-Image baseline).

    Any two images of the domain [lo, hi]^d differ by at most d * (hi - lo) in l1, so
    that is the l1 sensitivity and b = d * (hi - lo) / eps (Laplace mechanism). This is
    the honest price of protecting the whole image, and why the baseline is weak.
    """

    name = "ldp-image"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0}

    def check_params(self) -> None:
        check_privacy_params(float(self.params["eps"]))

    def calibrate(self, task: Task) -> NoiseModel:
        eps = float(self.params["eps"])
        lo, hi = task.data_range
        self.l1_sensitivity = math.prod(task.input_shape) * (hi - lo)
        return NoiseModel("laplace", laplace_scale(eps, self.l1_sensitivity))

    def guarantee(self) -> Guarantee:
        return Guarantee("ldp", {"eps": float(self.params["eps"])}, "any pair of inputs")


@register_mechanism
class GaussInput(InputSpaceMechanism):
    """Gaussian noise on the input for (eps, delta, r)-IP over l2 in input space (IP paper,
    Gauss-Input): inputs within l2 distance r are (eps, delta)-indistinguishable.

    sigma = sqrt(2 ln(1.25/delta)) r / eps for eps < 1 (classic Gaussian mechanism with
    sensitivity r); for eps >= 1 the classic constant is unproven, so sigma comes from the
    analytic Gaussian mechanism (Balle & Wang 2018), which is exact for every eps.
    """

    name = "gauss-input"
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0, "delta": 1e-5, "r": 0.1}

    def check_params(self) -> None:
        check_privacy_params(*(float(self.params[k]) for k in ("eps", "delta", "r")))

    def calibrate(self, task: Task) -> NoiseModel:
        eps, delta, r = (float(self.params[k]) for k in ("eps", "delta", "r"))
        sigma, self.calibration_rule = gaussian_sigma(eps, delta, r)
        return NoiseModel("gaussian", sigma)

    def guarantee(self) -> Guarantee:
        p = self.params
        return Guarantee(
            "ip",
            {"eps": float(p["eps"]), "delta": float(p["delta"]), "radius": float(p["r"])},
            "l2/input",
        )
