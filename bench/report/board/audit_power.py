"""Whether a leaderboard row's privacy audit could have refuted its claim: its power (the
chance of refuting a mechanism at 1.25x the claimed eps at the draws it used), from what
the row stores, the "inconclusive" label for an audit below the stated level, and the
"untestable" one for a claim no audit bench plans could refute (more draws would not help).

Only the input-space audit (notions ip and ldp, bench.certify.audit.core) is judged here;
its power follows from the row alone where:
- delta > 0: the audit plans on the Gaussian trade-off at (eps, delta) whatever the noise
  (power.claim_models), so `plan_at` on the row's claim and draws is its own power;
- delta = 0: the power depends on the noise's spread, which the row does not hold; it is
  certainly 0 when even a perfect test's bound at these draws (eps_detectable, the bound
  of zero errors, which no audit exceeds) is at most the claim.
PTR's audit tests a per-step claim and the label-only audits their keep rates, neither on
the row: their cells are not labelled. `audit_verdict` says, per setting, what the audit
concluded of its claim (refuted, inconclusive, consistent, or not audited and why).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from bench.plugin.notions import Claim, known_notion, notion_spec

# The power a pass needs to count as evidence (`bench validate` uses the same level).
POWER_LEVEL = 0.8
RATIO = 1.25  # the violation the power is measured against: 1.25x the claimed eps
ALPHA = 0.05  # the audit's 95% confidence


@cache
def _gaussian_power(eps: float, delta: float, draws: int) -> float:
    from bench.certify.audit.power import plan_at

    return plan_at("gaussian", eps, delta, draws, ratio=RATIO, alpha=ALPHA).power


@cache
def _ceiling(draws: int, delta: float) -> float:
    from bench.certify.audit.bounds import eps_detectable

    return eps_detectable(draws, draws, delta, ALPHA)


def audit_power(row: dict[str, Any]) -> float | None:
    """The power of the row's audit (see the module docstring), None when the row does not
    determine it (another audit, no audit, no eps claim, or a pure claim with power > 0)."""
    claim = Claim.from_row(row.get("guarantee")) if _known(row) else None
    draws = (row.get("metrics") or {}).get("audit_draws")
    # Judged here: claims the input-pair audit tests (a family's own audit reports its own).
    if claim is None or not claim.spec.input_pair_audit or draws is None:
        return None
    eps, delta = claim.eps, claim.delta
    if eps is None or eps <= 0:
        return None
    n = int(draws["value"])
    if n == 0:
        return 0.0
    if delta > 0:
        return _gaussian_power(float(eps), delta, n)
    return 0.0 if _ceiling(n, delta) <= eps else None


def _known(row: dict[str, Any]) -> bool:
    return known_notion((row.get("guarantee") or {}).get("notion"))


def inconclusive(row: dict[str, Any], level: float = POWER_LEVEL) -> str | None:
    """ "inconclusive: power P% < L%" when the row's audit passed with power below `level`
    (a refuted claim is conclusive and flagged elsewhere); else None."""
    metrics = row.get("metrics") or {}
    lb, eps = metrics.get("eps_audit_lb"), (row.get("guarantee") or {}).get("eps")
    if lb is None or (isinstance(eps, int | float) and lb["value"] > eps):
        return None
    if untestable(row) is not None:
        return None
    power = audit_power(row)
    if power is None or power >= level:
        return None
    return f"inconclusive: power {power:.0%} < {level:.0%} against {RATIO:g}x the claim"


def _not_audited_reason(guarantee: dict[str, Any]) -> str:
    """Why a setting carries no audit: its notion's declared reason (NotionSpec.unaudited),
    else that this suite ran no audit of it."""
    notion = guarantee.get("notion")
    if known_notion(notion):
        spec = notion_spec(notion)
        if spec.unaudited:
            return spec.unaudited
    return "this suite ran no audit of the claim"


def untestable(row: dict[str, Any]) -> str | None:
    """ "untestable: ..." when the row's input-pair claim is beyond the largest audit bench
    plans (power.LADDER's top, 10M draws a side): for delta > 0, that audit's power against
    1.25x the claim is below POWER_LEVEL; for delta = 0, the claim's eps is above even a
    perfect test's bound at that size. Low power there is not a shortfall of the board's
    audit, which more draws would fix, but a claim too weak for any audit bench runs to
    refute; else None."""
    from bench.certify.audit.power import LADDER

    claim = Claim.from_row(row.get("guarantee")) if _known(row) else None
    if claim is None or not claim.spec.input_pair_audit or claim.eps is None or claim.eps <= 0:
        return None
    eps, delta, most = float(claim.eps), claim.delta, LADDER[-1]
    level = f"{eps:,.0f}" if eps >= 1000 else f"{eps:.4g}"
    size = f"{most / 1e6:g}M draws a side"
    if delta > 0:
        power = _gaussian_power(eps, delta, most)
        if power >= POWER_LEVEL:
            return None
        return (
            f"untestable: even {size}, the largest audit bench plans, refute "
            f"{RATIO:g}x eps {level} with power {power:.0%} < {POWER_LEVEL:.0%}"
        )
    ceiling = _ceiling(most, delta)  # a perfect test's bound at the largest planned audit
    if eps < ceiling:
        return None
    return (
        f"untestable: eps {level} is above {ceiling:.3g}, the most a perfect test shows at {size}"
    )


def audit_verdict(row: dict[str, Any] | None) -> dict[str, str]:
    """The privacy audit's verdict on a setting's claim, read off its utility row: `kind` is
    "refuted" (the audit's 95% lower bound on eps above the claimed eps), "untestable" (a
    claim above what any audit bench plans could show: `untestable`), "inconclusive"
    (passed with power below POWER_LEVEL, or no testable pair), "consistent" (passed, with
    its power where the row determines it) or "not audited" (`why` says why); `text` says
    it in a few words. A family's own audit (PTR's per-step test, the label-only keep rate)
    stores its bound as eps_audit_lb too and is judged the same way."""
    row = row or {}
    guarantee, metrics = row.get("guarantee") or {}, row.get("metrics") or {}
    lb = metrics.get("eps_audit_lb")
    if lb is None:
        why = _not_audited_reason(guarantee)
        return {"kind": "not audited", "text": f"not audited: {why}", "why": why}
    bound, eps = float(lb["value"]), guarantee.get("eps")
    claimed = isinstance(eps, int | float) and not isinstance(eps, bool)
    if claimed and bound > eps:
        return {"kind": "refuted", "text": f"refuted: lb {bound:.3g} > claim {eps:g}"}
    weak = untestable(row)
    if weak is not None:
        return {"kind": "untestable", "text": weak}
    draws = metrics.get("audit_draws")
    if draws is not None and int(draws["value"]) == 0:
        return {"kind": "inconclusive", "text": "inconclusive: no testable pair (0 draws)"}
    power = audit_power(row)
    if power is not None and power < POWER_LEVEL:
        return {
            "kind": "inconclusive",
            "text": f"inconclusive: power {power:.0%} below {POWER_LEVEL:.0%}",
        }
    if power is not None:
        return {"kind": "consistent", "text": f"consistent, power {power:.0%}"}
    against = f" ≤ claim {eps:g}" if claimed else ""
    return {"kind": "consistent", "text": f"consistent: lb {bound:.3g}{against}"}
