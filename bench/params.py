"""Typed component parameters: every value a suite gives is checked against the type of the
component's declared default (and its declared range) and normalised before it is hashed,
so that `eps = 4` and `eps = 4.0` are one job and `eps = "4.0"`, `eps = true`, a NaN or a
negative step count are one-line errors before any job runs."""

from __future__ import annotations

import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.errors import ConfigError

# Numbers are >= 0 unless a component declares another range: no parameter of a privacy
# mechanism or an attack here is meaningfully negative (eps, delta, radii, step counts,
# learning rates, epochs, sizes), and a sign typo must not run.
DEFAULT_RANGE = (0.0, math.inf)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter's declaration: its type (from the default), default and range."""

    name: str
    kind: type  # bool, int, float or str; object for any other default (left unchecked)
    default: Any
    low: float | None = None
    high: float | None = None

    def describe(self) -> str:
        """`eps: float = 1.0 in [0, inf)`, for `bench list` and error messages."""
        text = f"{self.name}: {self.kind.__name__} = {self.default!r}"
        if self.low is not None and self.high is not None:
            text += f" in [{self.low:g}, {self.high:g}]"
        return text.replace("inf]", "inf)")


def specs_of(
    defaults: dict[str, Any], ranges: dict[str, tuple[float, float]] | None = None
) -> dict[str, ParamSpec]:
    """The typed declaration of a component's parameters, from its `defaults` (which fix
    each type) and optional `ranges` (inclusive; numbers default to [0, inf))."""
    ranges = ranges or {}
    specs = {}
    for name, default in defaults.items():
        kind = type(default)
        if kind not in (bool, int, float, str):
            kind = object  # None, a list, ...: a plug-in's own type, checked by its own code
        low, high = ranges.get(name, DEFAULT_RANGE) if kind in (int, float) else (None, None)
        specs[name] = ParamSpec(name, kind, default, low, high)
    return specs


def _type_name(value: Any) -> str:
    return "a boolean" if isinstance(value, bool) else f"{value!r} ({type(value).__name__})"


def normalise(spec: ParamSpec, value: Any, component: str) -> Any:
    """`value` as the declared type (an int for a float parameter becomes a float, an
    integral float for an int parameter an int), or a one-line ConfigError."""
    where = f"{component}: parameter '{spec.name}'"
    if spec.kind is object:
        return value
    if spec.kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {_type_name(value)}")
        return value
    if spec.kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where} must be a string, got {_type_name(value)}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where} must be a number, got {_type_name(value)}")
    if not math.isfinite(value):
        raise ConfigError(f"{where} must be finite, got {value!r}")
    if spec.kind is int:
        if not float(value).is_integer():
            raise ConfigError(f"{where} must be an integer, got {value!r}")
        value = int(value)
    else:
        value = float(value)
    assert spec.low is not None and spec.high is not None
    if not spec.low <= value <= spec.high:
        raise ConfigError(
            f"{where} must be in [{spec.low:g}, {spec.high:g}], got {value!r}".replace(
                "inf]", "inf)"
            )
        )
    return value


def resolve(
    component: str,
    defaults: dict[str, Any],
    given: dict[str, Any],
    ranges: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Defaults overridden by `given`, every given value normalised to its declared type;
    an unknown parameter is a one-line ConfigError naming the known ones."""
    specs = specs_of(defaults, ranges)
    unknown = sorted(set(given) - set(specs))
    if unknown:
        known = ", ".join(sorted(specs)) or "none"
        raise ConfigError(f"{component} has no parameter {unknown[0]!r}; its parameters: {known}")
    return {**defaults, **{k: normalise(specs[k], v, component) for k, v in given.items()}}


def _accepted_kinds(hint: Any) -> tuple[type, ...]:
    """The scalar types an annotation accepts (`int | None` -> (int, NoneType))."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(k for arg in typing.get_args(hint) for k in _accepted_kinds(arg))
    return (hint,) if isinstance(hint, type) else ()


def normalise_options(
    component: str, init: Callable[..., Any], options: dict[str, Any]
) -> dict[str, Any]:
    """Task options checked against the annotations of the task's `__init__` (the task's
    declaration of them): bool / int / float / str values of the wrong type, non-integral
    counts and non-finite numbers are one-line errors; ints for floats become floats."""
    hints = typing.get_type_hints(init)
    out = {}
    for key, value in options.items():
        kinds = _accepted_kinds(hints.get(key, Any))
        scalar = [k for k in kinds if k in (bool, int, float, str)]
        if not scalar or (value is None and type(None) in kinds):
            out[key] = value
            continue
        kind = float if float in scalar else scalar[0]
        spec = ParamSpec(key, kind, None, -math.inf, math.inf)
        out[key] = normalise(spec, value, component)
    return out
