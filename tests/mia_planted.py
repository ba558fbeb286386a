"""A planted label-only mechanism for the membership-inference tests: it claims eps-DP over
training records but serves the network's labels without any noise (a broken claim the
ceiling check must flag)."""

from __future__ import annotations

from typing import Any, ClassVar

import torch

from bench.plugin.protocols import Guarantee
from mechanisms.label_only.lucid import LeaveOneOutAccess


class UnnoisedClaim(LeaveOneOutAccess):
    """N's labels, never noised, declared (eps, 0)-DP over training-set/add-remove."""

    name = "test-unnoised-claim"
    defaults: ClassVar[dict[str, Any]] = {"eps": 0.5, "tune": False}

    def needs_noise(self, x: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
        return torch.zeros(len(x), dtype=torch.bool)

    def guarantee(self) -> Guarantee:
        params = {"eps": float(self.params["eps"]), "delta": 0.0}
        return Guarantee("dp", params, "training-set/add-remove")
