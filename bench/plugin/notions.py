"""Privacy notions: what each kind of claim means to the harness, declared once and looked
up by name, so no harness module (the audit, the membership ceiling, the report) spells a
notion or a family.

A `NotionSpec` says how a reader names the notion, which guarantee parameter states its
privacy level (eps, or a family's own such as 1/dFIL) and which way is stronger, what two
neighbours differ in (two inputs, or two training sets), whether the harness's input-pair
audit tests it, how its bound rows are judged, and whether a membership attack is held to
the DP ceiling TPR <= e^eps FPR + delta. The standard notions are declared here; a family
with a notion of its own registers it from its hooks module (`register_notion`), as an
Opacus accountant registers itself.

`Claim` is the typed form of a mechanism's declared guarantee: the audit tests it, the
membership ceiling and the report read it, and it is never a dict read by string keys or a
positional tuple outside this module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from bench.core.errors import ConfigError, UnknownNameError, did_you_mean

Neighbours = Literal["inputs", "training set", "none"]


@dataclass(frozen=True)
class PrivacyLevel:
    """The guarantee parameter `param` (shown as `symbol`) that states the privacy level of
    a notion's claims, and whether a higher value is the stronger claim."""

    param: str
    symbol: str
    higher_is_stronger: bool = False


EPS = PrivacyLevel("eps", "ε")


@dataclass(frozen=True)
class NotionSpec:
    """What one privacy notion means to the harness.

    - `words`: how a reader names it ("IP", "iDP", "dFIL bound").
    - `level`: the parameter stating its privacy level (eps unless the notion has its own).
    - `neighbours`: what two neighbours of the claim differ in: two inputs ("inputs", the
      claim is about one user's query), two training sets ("training set", about the records
      a model was trained on), or nothing ("none": no claim).
    - `input_pair_audit`: the harness's input-pair audit (bench.certify.audit.core) tests an
      (eps, delta[, radius]) claim of this notion by releasing two inputs many times.
    - `radius`: the claim holds for inputs within `radius` of each other (IP), not any pair.
    - `unaudited`: for a notion no audit tests, why (what `bench validate` says instead of a
      pass).
    - `bound_false_alarm`: its bound rows (bound_validity) are per-sample statistical
      estimates, each allowed to fail at this rate (a Fisher-information MSE bound); None
      means the bound is exact, so a single violation breaks it (an iDP certificate).
    - `membership_ceiling`: a membership-inference attack on the training records is held
      to DP's ceiling TPR <= e^eps FPR + delta (Kairouz, Oh and Viswanath 2015), which
      holds for DP over training records and for no other notion here.
    - `zero_level`: a level of 0 is a claim that can be met (0-iDP); otherwise the level
      must be positive.
    """

    name: str
    words: str
    level: PrivacyLevel = EPS
    neighbours: Neighbours = "inputs"
    input_pair_audit: bool = False
    radius: bool = False
    unaudited: str = ""
    bound_false_alarm: float | None = None
    membership_ceiling: bool = False
    zero_level: bool = False

    @property
    def claims_privacy(self) -> bool:
        """Whether the notion claims anything (the unprotected reference does not)."""
        return self.neighbours != "none"


UNPROTECTED = "none"  # the notion of a reference that claims nothing (identity, plain labels)

_NOTIONS: dict[str, NotionSpec] = {}


def register_notion(spec: NotionSpec) -> NotionSpec:
    """Declare a notion (a family's hooks module calls this); re-registering the identical
    spec is a no-op, a different spec under a taken name is refused."""
    known = _NOTIONS.get(spec.name)
    if known is not None and known != spec:
        raise ConfigError(f"notion {spec.name!r} is already registered with another meaning")
    _NOTIONS[spec.name] = spec
    return spec


def notion_spec(name: str | None) -> NotionSpec:
    """The spec of notion `name` (None: the unprotected reference); an unknown name is a
    one-line error with the closest registered names. A family's notion is registered when
    its package is imported (the report loads the families of a board's mechanisms first,
    bench.plugin.families.load_families)."""
    key = UNPROTECTED if name is None else name
    if key not in _NOTIONS:
        raise UnknownNameError(f"unknown privacy notion {key!r}{did_you_mean(key, _NOTIONS)}")
    return _NOTIONS[key]


def known_notion(name: str | None) -> bool:
    """Whether `name` is a registered notion."""
    try:
        notion_spec(name)
    except UnknownNameError:
        return False
    return True


def notions() -> tuple[NotionSpec, ...]:
    """Every registered notion, by name."""
    return tuple(_NOTIONS[n] for n in sorted(_NOTIONS))


def privacy_levels() -> tuple[PrivacyLevel, ...]:
    """Every notion's level parameter once, eps first, then by parameter name."""
    levels = {spec.level.param: spec.level for spec in notions()}
    return (EPS, *(levels[p] for p in sorted(levels) if p != EPS.param))


@dataclass(frozen=True)
class Claim:
    """A declared privacy claim in typed form: its notion, epsilon, delta, radius and
    distance, and its privacy level (the notion's level parameter: eps, or e.g. 1/dFIL).

    `eps` is the claim's epsilon, not a mechanism parameter of that name: for modified PTR
    it is 2 eps (Posthoc privacy, Theorem 4.4). A claim that the mechanism's own rows say
    is not met (`not_private`: a diagnostic setting) keeps the reason."""

    notion: str
    eps: float | None = None
    delta: float = 0.0
    radius: float | None = None
    distance: str | None = None
    level: float | None = None
    not_private: str | None = None

    @property
    def spec(self) -> NotionSpec:
        return notion_spec(self.notion)

    @classmethod
    def of(
        cls, notion: str | None, params: Mapping[str, Any], distance: str | None = None
    ) -> Claim:
        """The claim a guarantee's notion, parameters and distance make."""
        spec = notion_spec(notion)
        eps, radius, level = params.get("eps"), params.get("radius"), params.get(spec.level.param)
        reason = params.get("not_private")
        return cls(
            notion=spec.name,
            eps=_number(eps),
            delta=float(params.get("delta") or 0.0),
            radius=_number(radius),
            distance=distance,
            level=_number(level),
            not_private=str(reason) if reason else None,
        )

    @classmethod
    def from_row(cls, guarantee: Mapping[str, Any] | None) -> Claim:
        """The claim a board row's guarantee dict states (its JSON form)."""
        guarantee = dict(guarantee or {})
        notion = guarantee.pop("notion", None)
        distance = guarantee.pop("distance", None)
        return cls.of(notion, guarantee, distance)

    def comparable_key(self) -> tuple[Any, ...]:
        """What two claims must share to be compared on one scale: the notion, its distance,
        delta and radius (IP at r = 0.01 is not IP at r = 0.1; add-remove DP is not
        replace-one label DP). Only the level then orders them."""
        return (self.notion, self.distance, self.delta, self.radius)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(float(value)) else None


# The standard notions. Families with a notion of their own register it in their hooks.
register_notion(NotionSpec(UNPROTECTED, "none", neighbours="none", unaudited="nothing claimed"))
register_notion(
    NotionSpec("ldp", "LDP", neighbours="inputs", input_pair_audit=True)  # any two inputs
)
register_notion(NotionSpec("ip", "IP", neighbours="inputs", input_pair_audit=True, radius=True))
register_notion(
    NotionSpec(
        "dp",
        "DP",
        neighbours="training set",
        unaudited="a claim over training sets: the input-pair audit does not test it",
        membership_ceiling=True,
    )
)
