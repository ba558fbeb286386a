"""Typed component parameters. A component declares its parameters once, as a frozen
dataclass (`Params`): each field's type, default, range (`Annotated[float, Range(0, 1)]`)
and allowed strings (`Literal["a", "b"]`). Every value a suite gives is checked against that
declaration and normalised before it is hashed, so that `eps = 4` and `eps = 4.0` are one
job and `eps = "4.0"`, `eps = true`, a NaN, a negative step count or an unknown variant are
one-line errors before any job runs. Plug-ins may still declare a `defaults` dict (each
default's type is the parameter's) with optional `param_ranges`; it becomes a dataclass."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from bench.core.errors import ConfigError

# Numbers are >= 0 unless a component declares another range: no parameter of a privacy
# mechanism or an attack here is meaningfully negative (eps, delta, radii, step counts,
# learning rates, epochs, sizes), and a sign typo must not run.
DEFAULT_RANGE = (0.0, math.inf)
_SCALARS = (bool, int, float, str)


@dataclass(frozen=True)
class Range:
    """The inclusive bounds of a numeric parameter: `r: Annotated[float, Range(0, 1)] = 0.5`."""

    low: float
    high: float


@dataclass(frozen=True)
class ParamSpec:
    """One parameter's declaration: its type, default, range and allowed strings."""

    name: str
    kind: type  # bool, int, float or str; object for any other type (left unchecked)
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()  # a str parameter's allowed values (empty: any string)

    def describe(self) -> str:
        """`eps: float = 1.0 in [0, inf)`, for `bench list` and error messages."""
        text = f"{self.name}: {self.kind.__name__} = {self.default!r}"
        if self.low is not None and self.high is not None:
            text += f" in [{self.low:g}, {self.high:g}]"
        if self.choices:
            text += f" one of {', '.join(self.choices)}"
        return text.replace("inf]", "inf)")


def specs_of(
    defaults: dict[str, Any], ranges: dict[str, tuple[float, float]] | None = None
) -> dict[str, ParamSpec]:
    """The typed declaration of a `defaults` dict (which fixes each type) and optional
    `ranges` (inclusive; numbers default to [0, inf))."""
    ranges = ranges or {}
    specs = {}
    for name, default in defaults.items():
        kind = type(default) if type(default) in _SCALARS else object
        low, high = ranges.get(name, DEFAULT_RANGE) if kind in (int, float) else (None, None)
        specs[name] = ParamSpec(name, kind, default, low, high)
    return specs


def _spec_of_field(name: str, hint: Any, default: Any, where: str) -> ParamSpec:
    """One dataclass field's declaration; a default that does not fit its own type or
    choices is a programming error, raised when the component is imported."""
    low, high = DEFAULT_RANGE
    if typing.get_origin(hint) is Annotated:
        hint, *extras = typing.get_args(hint)
        for extra in extras:
            if isinstance(extra, Range):
                low, high = extra.low, extra.high
    choices: tuple[str, ...] = ()
    if typing.get_origin(hint) is Literal:
        choices = typing.get_args(hint)
        if not all(isinstance(c, str) for c in choices):
            raise TypeError(f"{where}.{name}: only Literal strings are supported")
        hint = str
    kind = hint if hint in _SCALARS else object
    if kind is not object and type(default) is not kind:
        raise TypeError(f"{where}.{name}: default {default!r} is not a {kind.__name__}")
    if choices and default not in choices:
        raise TypeError(f"{where}.{name}: default {default!r} is not one of {choices}")
    numeric = kind in (int, float)
    return ParamSpec(
        name, kind, default, low if numeric else None, high if numeric else None, choices
    )


def _default_of(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    raise TypeError(f"parameter {f.name} has no default")


@cache
def declared_specs(params_type: type) -> dict[str, ParamSpec]:
    """The declaration of a `Params` dataclass, field by field in its order."""
    hints = typing.get_type_hints(params_type, include_extras=True)
    where = params_type.__qualname__
    return {
        f.name: _spec_of_field(f.name, hints[f.name], _default_of(f), where)
        for f in dataclasses.fields(params_type)
    }


def params_dataclass(
    name: str,
    defaults: dict[str, Any],
    ranges: dict[str, tuple[float, float]] | None = None,
    bases: tuple[type, ...] = (),
) -> type:
    """A frozen `Params` dataclass equivalent to a `defaults` dict and its `ranges`, for
    components that declare their parameters the dict way."""
    fields = []
    for spec in specs_of(defaults, ranges).values():
        hint: Any = Any if spec.kind is object else spec.kind
        if spec.low is not None and spec.high is not None:
            hint = Annotated[hint, Range(spec.low, spec.high)]
        value = spec.default
        fields.append((spec.name, hint, dataclasses.field(default_factory=lambda v=value: v)))
    return dataclasses.make_dataclass(name, fields, bases=bases, frozen=True)


def as_dicts(
    specs: dict[str, ParamSpec],
) -> tuple[dict[str, Any], dict[str, tuple[float, float]]]:
    """`defaults` and `param_ranges` dicts of a declaration (ranges only where they are
    not the default [0, inf))."""
    defaults = {name: spec.default for name, spec in specs.items()}
    ranges = {
        name: (spec.low, spec.high)
        for name, spec in specs.items()
        if spec.low is not None and spec.high is not None and (spec.low, spec.high) != DEFAULT_RANGE
    }
    return defaults, ranges


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
        if spec.choices and value not in spec.choices:
            raise ConfigError(f"{where} must be one of {', '.join(spec.choices)}, got {value!r}")
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


def resolve_specs(
    component: str, specs: dict[str, ParamSpec], given: dict[str, Any]
) -> dict[str, Any]:
    """Defaults overridden by `given` (in declaration order), every given value normalised
    to its declared type; an unknown parameter is a one-line ConfigError naming the known
    ones."""
    unknown = sorted(set(given) - set(specs))
    if unknown:
        known = ", ".join(sorted(specs)) or "none"
        raise ConfigError(f"{component} has no parameter {unknown[0]!r}; its parameters: {known}")
    resolved = {name: spec.default for name, spec in specs.items()}
    resolved.update({k: normalise(specs[k], v, component) for k, v in given.items()})
    return resolved


def resolve(
    component: str,
    defaults: dict[str, Any],
    given: dict[str, Any],
    ranges: dict[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """`resolve_specs` for a declaration given as a `defaults` dict and its `ranges`."""
    return resolve_specs(component, specs_of(defaults, ranges), given)


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
