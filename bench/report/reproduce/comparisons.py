"""A paper's mechanism comparisons at equal settings (`[[comparison]]` in a reference table):
"method A above method B at equal (eps, r)", or "A above B in the high-privacy region and
below it in the low-privacy one" (where they cross), stated in the paper's text without
printed values for each setting.

A comparison names its suite (a parameter: the same check can point at another board that
runs both methods), the two sides (mechanism and the parameters that make it that method)
and the parameters on which the sides must agree (`match`). Its cells are not typed in: they
are the settings at which the suite's committed rows hold both sides, each a cell without a
paper value (direction only), and its check pairs them, so a board that adds a setting adds
a pair.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bench.core.errors import ConfigError
from bench.core.hashing import canonical_json
from bench.report.reproduce.verdicts import CLASSES, Trend

ABOVE, CROSS = "above", "cross"
KINDS = (ABOVE, CROSS)
# For a crossing: the direction in which a parameter makes the setting more private.
MORE_PRIVATE = ("up", "down")
_KEYS = {
    "id": str,
    "source": str,
    "claim": str,
    "suite": str,
    "task": str,
    "metric": str,
    "dataset": str,
    "model": str,
    "class": str,
    "difference": str,
    "match": list,
    "a": dict,
    "b": dict,
}
_OPTIONAL = {"kind": ABOVE, "privacy": {}}


@dataclass(frozen=True)
class Side:
    """One method of a comparison: a mechanism with the parameters that make it that method
    (e.g. gauss-input with model = "cnn", finetune = true), and how the tables name it."""

    mechanism: str
    params: dict[str, Any] = field(hash=False)
    label: str
    key: str  # "a" or "b", for the generated cells' ids


@dataclass(frozen=True)
class Comparison:
    """A comparison the paper states: `a` above `b` at every setting the sides share
    (kind "above"), or `a` above `b` at the most private end of each `privacy` axis and `b`
    above `a` at its least private end (kind "cross")."""

    id: str
    source: str
    claim: str
    suite: str
    task: str
    metric: str
    dataset: str
    model: str
    klass: str
    difference: str
    a: Side
    b: Side
    match: tuple[str, ...]
    kind: str = ABOVE
    privacy: tuple[tuple[str, str], ...] = ()


def parse_comparison(raw: Any, where: str) -> Comparison:
    """One `[[comparison]]` table, checked (one-line ConfigError otherwise)."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a table")
    unknown = set(raw) - set(_KEYS) - set(_OPTIONAL)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {sorted(unknown)}")
    missing = [k for k in _KEYS if k not in raw]
    if missing:
        raise ConfigError(f"{where}: missing keys {missing}")
    for key, kind in _KEYS.items():
        if not isinstance(raw[key], kind):
            raise ConfigError(f"{where}: {key} must be a {kind.__name__}")
    values = {**_OPTIONAL, **raw}
    if values["class"] not in CLASSES:
        raise ConfigError(f"{where}: class must be one of {list(CLASSES)}")
    if values["kind"] not in KINDS:
        raise ConfigError(f"{where}: kind must be one of {list(KINDS)}")
    privacy = values["privacy"]
    if values["kind"] == CROSS and (
        not privacy or not all(d in MORE_PRIVATE for d in privacy.values())
    ):
        raise ConfigError(
            f'{where}: a crossing needs privacy = {{ param = "up" | "down" }}: the '
            "direction in which each parameter makes a setting more private"
        )
    match = tuple(values["match"])
    if not match or not all(isinstance(k, str) for k in match) or not set(privacy) <= set(match):
        raise ConfigError(f"{where}: match must name the shared parameters (privacy's among them)")
    sides = [_parse_side(values[key], key, set(match), f"{where}: {key}") for key in ("a", "b")]
    return Comparison(
        id=values["id"],
        source=values["source"],
        claim=values["claim"],
        suite=values["suite"],
        task=values["task"],
        metric=values["metric"],
        dataset=values["dataset"],
        model=values["model"],
        klass=values["class"],
        difference=values["difference"],
        a=sides[0],
        b=sides[1],
        match=match,
        kind=values["kind"],
        privacy=tuple(sorted(privacy.items())),
    )


def _parse_side(raw: Any, key: str, match: set[str], where: str) -> Side:
    if not isinstance(raw, dict) or set(raw) != {"mechanism", "params", "label"}:
        raise ConfigError(f"{where}: needs exactly mechanism, params and label")
    if not isinstance(raw["params"], dict) or set(raw["params"]) & match:
        raise ConfigError(f"{where}: params must be a table naming no matched parameter")
    return Side(raw["mechanism"], raw["params"], raw["label"], key)


def same_param(a: Any, b: Any) -> bool:
    """Parameter equality with ints and floats alike (1 == 1.0); booleans only equal
    booleans (True is not 1 here); anything else by canonical JSON."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return float(a) == float(b)
    return canonical_json(a) == canonical_json(b)


def settings_of(
    cmp: Comparison, side: Side, rows: list[dict[str, Any]]
) -> dict[tuple[Any, ...], dict[str, Any]]:
    """The side's utility rows of the comparison's task, keyed by their matched parameters."""
    out = {}
    for row in rows:
        params = row["params"]
        if (
            row["attack"] is None
            and row["task"] == cmp.task
            and row["mechanism"] == side.mechanism
            and all(k in params and same_param(params[k], v) for k, v in side.params.items())
            and all(k in params for k in cmp.match)
            and cmp.metric in row["metrics"]
        ):
            out[tuple(params[k] for k in cmp.match)] = row
    return out


def shared_settings(cmp: Comparison, rows: list[dict[str, Any]] | None) -> list[tuple[Any, ...]]:
    """The settings (values of `match`) at which the rows hold both sides, sorted."""
    if rows is None:
        return []
    a, b = settings_of(cmp, cmp.a, rows), settings_of(cmp, cmp.b, rows)
    return sorted(set(a) & set(b), key=lambda s: tuple(float(v) for v in s))


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def cell_id(cmp: Comparison, side: Side, setting: tuple[Any, ...]) -> str:
    """E.g. "ip-output-above-input-sll-a-eps1-r0.1-delta1e-05"."""
    return f"{cmp.id}-{side.key}-" + "-".join(
        f"{k}{_text(v)}" for k, v in zip(cmp.match, setting, strict=True)
    )


def pairs_of(cmp: Comparison, settings: list[tuple[Any, ...]]) -> list[tuple[str, str]]:
    """The (higher, lower) cell pairs the comparison orders over the shared settings."""
    if cmp.kind == ABOVE:
        return [(cell_id(cmp, cmp.a, s), cell_id(cmp, cmp.b, s)) for s in settings]
    pairs: list[tuple[str, str]] = []
    for axis, direction in cmp.privacy:
        i = cmp.match.index(axis)
        groups: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
        for s in settings:
            groups.setdefault(s[:i] + s[i + 1 :], []).append(s)
        for members in groups.values():
            if len({float(s[i]) for s in members}) < 2:
                continue
            ordered = sorted(members, key=lambda s: float(s[i]))
            low, high = ordered[0], ordered[-1]
            private, public = (high, low) if direction == "up" else (low, high)
            pairs.append((cell_id(cmp, cmp.a, private), cell_id(cmp, cmp.b, private)))
            pairs.append((cell_id(cmp, cmp.b, public), cell_id(cmp, cmp.a, public)))
    return pairs


def expand(
    cmp: Comparison, rows: list[dict[str, Any]] | None
) -> tuple[list[dict[str, Any]], Trend]:
    """The comparison's cells (as Cell keyword arguments: one per side and shared setting
    that a pair uses, no paper value) and its check (the explicit pairs; none without rows,
    which the check reports as not run)."""
    settings = shared_settings(cmp, rows)
    pairs = pairs_of(cmp, settings)
    used = {c for pair in pairs for c in pair}
    cells = []
    for setting in settings:
        shown = ", ".join(f"{k} = {_text(v)}" for k, v in zip(cmp.match, setting, strict=True))
        for side in (cmp.a, cmp.b):
            cid = cell_id(cmp, side, setting)
            if cid not in used:
                continue
            cells.append(
                {
                    "id": cid,
                    "source": cmp.source,
                    "dataset": cmp.dataset,
                    "model": cmp.model,
                    "setting": f"{side.label}, {shown}",
                    "metric": cmp.metric,
                    "value": math.nan,
                    "suite": cmp.suite,
                    "task": cmp.task,
                    "mechanism": side.mechanism,
                    "params": {**side.params, **dict(zip(cmp.match, setting, strict=True))},
                    "klass": cmp.klass,
                    "difference": cmp.difference,
                }
            )
    return cells, Trend(cmp.id, cmp.source, cmp.claim, explicit=tuple(pairs))
