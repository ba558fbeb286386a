"""The classes a mechanism or attack is written against (a public module, for in-tree
families and plug-ins alike): the protocols, the input-space base, the data containers, the
task's trained utility model and the registration decorators. A plug-in imports from here,
bench.accounting and bench.hooks, never from a family package under mechanisms/."""

from __future__ import annotations

from bench.protocols import (
    Attack,
    DataSplit,
    FitContext,
    Guarantee,
    Mechanism,
    NoiseModel,
    Release,
    Splits,
    Task,
)
from bench.registry import register_attack, register_mechanism, register_task
from bench.training import predict_scores, utility_model
from mechanisms.base import InputSpaceMechanism

__all__ = [
    "Attack",
    "DataSplit",
    "FitContext",
    "Guarantee",
    "InputSpaceMechanism",
    "Mechanism",
    "NoiseModel",
    "Release",
    "Splits",
    "Task",
    "predict_scores",
    "register_attack",
    "register_mechanism",
    "register_task",
    "utility_model",
]
