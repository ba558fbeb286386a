"""Which audit a mechanism's claim gets: the input-pair audit of core.py, unless the
mechanism's family registers one of its own (an audit of the mechanism's own randomised
test, such as PTR's ⊥ decision or a label-only keep rate).

A family fills the registry when its package is imported (`register_audit(cls, audit)` in
the family's hooks module); the audit looks the mechanism's class up along its bases, so a
subclass inherits its family's audit. The job hash of an audited job covers the module of
the audit it gets (`audit_modules`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.certify.audit.result import AuditResult, Progress, no_progress
from bench.plugin.notions import Claim
from bench.plugin.protocols import Mechanism, Task

# Cost budget of an audit, in units of one input or release coordinate (or one encoder
# weight) per draw: the ladder's top, 10M draws per side, of a 784-pixel image with Gaussian
# input noise (4e10 units; about 40 s on 2 cores), so every Gaussian claim the ladder can
# refute at 1.25x gets its planned size on images of that size.
DEFAULT_COST = 4e10


@dataclass(frozen=True)
class AuditOptions:
    """An audit's size and confidence (core.audit_mechanism documents each)."""

    n_draws: int | None = None
    n_select: int | None = None
    max_cost: float = DEFAULT_COST
    ratio: float = 1.25
    target_power: float = 0.95
    n_random: int = 2
    n_worst: int = 1
    confidence: float = 0.95
    chunk: int | None = None  # releases per work unit (no number depends on it)
    progress: Progress = no_progress  # told the releases drawn of those planned
    workers: int = 1  # threads drawing releases (no number depends on it; draws.py)


FamilyAudit = Callable[[Mechanism, Task, int, Claim, AuditOptions], AuditResult]


@dataclass(frozen=True)
class RegisteredAudit:
    """A family's audit and the claims it answers for (others get the input-pair audit)."""

    audit: FamilyAudit
    applies: Callable[[Claim], bool]


_AUDITS: dict[type, RegisteredAudit] = {}


def _always(claim: Claim) -> bool:
    return True


def register_audit(
    mechanism_cls: type, audit: FamilyAudit, applies: Callable[[Claim], bool] = _always
) -> None:
    """Audit instances of `mechanism_cls` (and its subclasses) with `audit` when their
    claim satisfies `applies`."""
    _AUDITS[mechanism_cls] = RegisteredAudit(audit, applies)


def registered_audit(mechanism_cls: type) -> RegisteredAudit | None:
    """The audit registered for the nearest class along `mechanism_cls`'s bases, or None."""
    for klass in mechanism_cls.__mro__:
        if klass in _AUDITS:
            return _AUDITS[klass]
    return None


def audit_modules(mechanism_cls: type) -> tuple[str, ...]:
    """The module of the family audit `mechanism_cls` gets (none for the input-pair audit)."""
    found = registered_audit(mechanism_cls)
    return () if found is None else (found.audit.__module__,)
