"""The contract of a membership-inference attack against a label-only mechanism (for in-tree
attacks and plug-ins alike): `MembershipAttack`, which scores records, and `LabelAccess`, the
attacker's only view of the mechanism, the labels it serves for the records asked.

The harness runs these attacks as membership jobs (bench.run.kinds.membership), never
through the reconstruction path.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch

from bench.core.device import to_cpu
from bench.core.errors import ConfigError, MechanismOutputError
from bench.plugin.protocols import (
    Attack,
    AttackParams,
    DataSplit,
    FitContext,
    Mechanism,
    Release,
    Task,
)
from bench.plugin.registry import ATTACKS

QUERY_CHUNK = 512  # records per release call: bounds naive-idp's (networks x queries) logits


class LabelAccess:
    """The attacker's only view of the mechanism: the label it serves for each record asked.
    Every call goes through `release` with one generator for the whole attack, in the order
    the attacker asks, so the answers (and the mechanism's memory) are the same on every run."""

    def __init__(self, mechanism: Mechanism, generator: torch.Generator) -> None:
        self._mechanism = mechanism
        self._generator = generator
        self.queries = 0

    def labels(self, x: torch.Tensor) -> torch.Tensor:
        """(N,) served labels of the records `x` (N, d)."""
        out = []
        for chunk in x.split(QUERY_CHUNK):
            release = self._mechanism.release(chunk, self._generator)
            if not isinstance(release, Release) or len(release) != len(chunk):
                raise MechanismOutputError(
                    f"mechanism {self._mechanism.name}: release of {len(chunk)} queries did "
                    "not return a Release with one row per query"
                )
            out.append(to_cpu(release.values).argmax(1))
            self.queries += len(chunk)
        return torch.cat(out)


class MembershipAttack(Attack):
    """A membership-inference attack: scores records, higher meaning "more likely a member".

    It is an Attack (parameters, registry, suites) that reconstructs nothing; the harness runs
    it through `run_membership_job`, never through the reconstruction path."""

    modalities: ClassVar[frozenset[str]] = frozenset({"tabular"})

    @dataclass(frozen=True)
    class Params(AttackParams):
        records: int = 0  # members attacked, as many non-members (0: every training record)

    p: Params
    infers_membership: ClassVar[bool] = True  # bench.run.plan pairs it with label-only mechanisms
    job_kind: ClassVar[str] = "membership"  # run as a membership job (bench.run.kinds)

    task: Task
    ctx: FitContext

    def check_params(self) -> None:
        if self.p.queries != 1:
            raise ConfigError(
                f"attack {self.name}: queries must be 1 (label-only mechanisms remember their "
                "answers; the attack decides itself which records it asks about)"
            )

    def fit(self, mechanism: Mechanism, task: Task, aux: DataSplit, ctx: FitContext) -> None:
        """Keep what the attacker may know besides the answers: the task (its records'
        encoding) and the job's seed and cache. The mechanism is never kept: its answers
        come through `LabelAccess` only."""
        self.task, self.ctx = task, ctx

    def reconstruct(self, release: Release) -> torch.Tensor:
        raise NotImplementedError(f"attack {self.name} infers membership; it reconstructs nothing")

    @abstractmethod
    def score(
        self, access: LabelAccess, x: torch.Tensor, y: torch.Tensor, train_index: torch.Tensor
    ) -> torch.Tensor:
        """(N,) membership scores of the records `x` with true labels `y`. `train_index[k]`
        is record k's position in the training split if it has one, else -1: what an
        attacker who knows the rest of the training set (the DP adversary) uses to pick the
        network trained without it; an attack that does not use it must ignore it."""


def is_membership_attack(name: str | None) -> bool:
    """Whether the registered attack `name` is a membership-inference attack."""
    return name is not None and issubclass(ATTACKS.get(name), MembershipAttack)
