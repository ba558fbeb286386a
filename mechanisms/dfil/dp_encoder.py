"""`dp-encoder`: the DP baseline of the dFIL paper (Maeng et al. 2023, App. A.5). The split
model's encoding is clipped to l2 norm C, e / max(1, ||e|| / C), and Gaussian noise is added;
any two inputs give encodings at most Delta = 2C apart, so the release is
(alpha, alpha Delta^2 / (2 sigma^2))-RDP for every alpha (Mironov 2017, Prop. 7), i.e.
(2, eps)-RDP with sigma = 2C / sqrt(eps).

It is compared with `dfil` at an equal unbiased-MSE bound `inv_dfil`, two ways (`match`):
- "rdp-bound" (the paper's Table 4): eps such that the RDP bound of Guo et al. 2022 (App. A.5,
  Eq. 7), (mean_i diam_i^2 / 4) / (e^eps - 1), equals `inv_dfil`;
- "dfil": sigma calibrated like dfil, to the mean Tr(J^T J) of the clipped encoder over train
  data, so its mean 1/dFIL equals `inv_dfil`; eps = 4C^2 / sigma^2 is then what DP can claim.
The Cramer-Rao bound reported for unbiased attacks is the larger of 1/dFIL(x), from the exact
trace of the clipped encoder, and the RDP bound: both hold, so their maximum does.

The declared claim is local DP over any two inputs, stated as (eps_dp, delta)-DP so that the
privacy audit (bench.certify.audit.core) can test it: the release is a Gaussian mechanism with l2
sensitivity 2C, whose exact (eps, delta) curve is known (Balle & Wang 2018, Thm 8), so eps_dp
is the tightest eps at `delta`; the (2, eps)-RDP parameters are reported alongside (rdp_eps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import torch

from bench.certify.fisher.bounds import cramer_rao_bound, rdp_eps_for_bound, rdp_mse_bound
from bench.certify.fisher.trace import sigma_for_target
from bench.core.errors import ConfigError
from bench.plugin.accounting import analytic_gaussian_eps
from bench.plugin.protocols import FitContext, Guarantee, Splits, Task
from bench.plugin.registry import register_mechanism
from mechanisms.dfil.split import FisherSplitMechanism, check_number


@register_mechanism
class DPEncoder(FisherSplitMechanism):
    """Clipped split encoder + Gaussian noise for (2, eps)-RDP, matched to a 1/dFIL target."""

    name = "dp-encoder"
    paper = "https://arxiv.org/abs/2305.04146"
    modalities = frozenset({"image"})

    @dataclass(frozen=True)
    class Params(FisherSplitMechanism.Params):
        inv_dfil: float = 10.0
        clip: float = 1.0
        match: Literal["rdp-bound", "dfil"] = "rdp-bound"
        delta: float = 1e-5

    p: Params

    def check_params(self) -> None:
        super().check_params()
        check_number("mechanism dp-encoder: inv_dfil", self.p.inv_dfil)
        check_number("mechanism dp-encoder: clip", self.p.clip)
        delta = self.p.delta
        if not 0 < delta < 1:
            raise ConfigError(f"mechanism dp-encoder: delta must lie in (0, 1), got {delta!r}")

    def _layer_options(self) -> dict[str, Any]:
        return {"clip": self.p.clip}

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        lo, hi = task.data_range
        self._diam_sq = (hi - lo) ** 2  # every coordinate ranges over the task's data range
        super().fit(task, splits, ctx)

    def calibrate(self, mean_trace: float) -> float:
        target, clip = self.p.inv_dfil, self.p.clip
        if self.p.match == "rdp-bound":
            self._eps = rdp_eps_for_bound(target, self._diam_sq)
            return 2 * clip / math.sqrt(self._eps)
        sigma = sigma_for_target(mean_trace, target, self._input_dim)
        self._eps = (2 * clip) ** 2 / sigma**2
        return sigma

    def unbiased_bound(self, dfil: torch.Tensor, queries: int) -> torch.Tensor:
        """max(1/dFIL(x), RDP bound); k releases compose to (2, k eps)-RDP."""
        rdp = rdp_mse_bound(queries * self._eps, self._diam_sq)
        return torch.clamp(cramer_rao_bound(dfil), min=rdp)

    def dp_eps(self) -> float:
        """eps of the (eps, delta)-DP the release satisfies for ANY two inputs: a Gaussian
        mechanism of l2 sensitivity 2C (||e|| <= C after clipping) at noise sigma, exact by
        Balle & Wang 2018, Thm 8."""
        sensitivity = 2 * self.p.clip
        return analytic_gaussian_eps(self._sigma, self.p.delta, sensitivity)

    def guarantee(self) -> Guarantee:
        """LDP (eps_dp, delta) over any pair of inputs (audited), with the (2, rdp_eps)-RDP
        parameters and the matched 1/dFIL alongside."""
        params: dict[str, float] = {
            "delta": self.p.delta,
            "rdp_alpha": 2.0,
            "inv_dfil": self.p.inv_dfil,
        }
        if hasattr(self, "_sigma"):
            params["eps"] = self.dp_eps()
            params["rdp_eps"] = float(self._eps)
        return Guarantee("ldp", {**params, **self._bound_params()}, "any pair of inputs")
