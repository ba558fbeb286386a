"""bench's public API for mechanism, attack and task authors, in-tree families and plug-ins
alike: the protocols and data containers, the input-space base class, typed parameters, the
registration decorators, the task's trained utility model, noise calibration and the hooks a
family adds to the harness (its audit, board plots, privacy level).

    from bench.plugin import Guarantee, InputSpaceMechanism, NoiseModel, register_mechanism

Names resolve lazily (PEP 562), so importing one submodule (bench.plugin.registry, say) or
this package costs nothing until a name is used: the commands that compute nothing stay
torch-free. Submodules: protocols, params, registry, input_space, training, artifacts,
accounting, hooks, checks (contract checks, `parametrize_with_checks`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(
        (
            "Attack",
            "DataSplit",
            "FitContext",
            "Guarantee",
            "Mechanism",
            "NoiseModel",
            "Release",
            "Splits",
            "Task",
        ),
        "bench.plugin.protocols",
    ),
    **dict.fromkeys(
        ("register_attack", "register_mechanism", "register_task"), "bench.plugin.registry"
    ),
    **dict.fromkeys(
        ("predict_scores", "train_classifier", "utility_model"), "bench.plugin.training"
    ),
    "InputSpaceMechanism": "bench.plugin.input_space",
    "ArtifactCache": "bench.plugin.artifacts",
    **dict.fromkeys(
        (
            "analytic_gaussian_delta",
            "analytic_gaussian_eps",
            "analytic_gaussian_sigma",
            "check_privacy_params",
            "classic_gaussian_sigma",
            "gaussian_sigma",
            "laplace_scale",
        ),
        "bench.plugin.accounting",
    ),
    **dict.fromkeys(
        (
            "AuditOptions",
            "AuditResult",
            "BoardPlot",
            "Claim",
            "FamilyAudit",
            "NotionSpec",
            "PrivacyLevel",
            "audit_generator",
            "eps_lower_bound",
            "register_audit",
            "register_board_plot",
            "register_notion",
        ),
        "bench.plugin.hooks",
    ),
}

__all__ = [
    "ArtifactCache",
    "Attack",
    "AuditOptions",
    "AuditResult",
    "BoardPlot",
    "Claim",
    "DataSplit",
    "FamilyAudit",
    "FitContext",
    "Guarantee",
    "InputSpaceMechanism",
    "Mechanism",
    "NoiseModel",
    "NotionSpec",
    "PrivacyLevel",
    "Release",
    "Splits",
    "Task",
    "analytic_gaussian_delta",
    "analytic_gaussian_eps",
    "analytic_gaussian_sigma",
    "audit_generator",
    "check_privacy_params",
    "classic_gaussian_sigma",
    "eps_lower_bound",
    "gaussian_sigma",
    "laplace_scale",
    "predict_scores",
    "register_attack",
    "register_audit",
    "register_board_plot",
    "register_mechanism",
    "register_notion",
    "register_task",
    "train_classifier",
    "utility_model",
]


def __getattr__(name: str) -> Any:
    """The public name `name`, imported from its submodule on first use."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'bench.plugin' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # what type checkers and IDEs see (the same names, imported eagerly)
    from bench.plugin.accounting import (
        analytic_gaussian_delta,
        analytic_gaussian_eps,
        analytic_gaussian_sigma,
        check_privacy_params,
        classic_gaussian_sigma,
        gaussian_sigma,
        laplace_scale,
    )
    from bench.plugin.artifacts import ArtifactCache
    from bench.plugin.hooks import (
        AuditOptions,
        AuditResult,
        BoardPlot,
        Claim,
        FamilyAudit,
        NotionSpec,
        PrivacyLevel,
        audit_generator,
        eps_lower_bound,
        register_audit,
        register_board_plot,
        register_notion,
    )
    from bench.plugin.input_space import InputSpaceMechanism
    from bench.plugin.protocols import (
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
    from bench.plugin.registry import register_attack, register_mechanism, register_task
    from bench.plugin.training import predict_scores, train_classifier, utility_model
