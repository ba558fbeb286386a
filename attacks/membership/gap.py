"""The gap attack (Yeom et al. 2018, "Privacy Risk in Machine Learning: Analyzing the
Connection to Overfitting", Sec. 3.2): a record is called a member iff the served label is
its true label. Its advantage is the gap between the accuracy on members and on
non-members: the baseline every label-only attack must beat."""

from __future__ import annotations

import torch

from bench.plugin.membership import LabelAccess, MembershipAttack
from bench.plugin.registry import register_attack


@register_attack
class GapAttack(MembershipAttack):
    """One query per record: score 1 if the served label is right, else 0."""

    name = "mia-gap"

    def score(
        self, access: LabelAccess, x: torch.Tensor, y: torch.Tensor, train_index: torch.Tensor
    ) -> torch.Tensor:
        return (access.labels(x) == y).double()
