"""Regression comparison of two leaderboards (baseline vs candidate).

A metric regresses when it moved in the direction that is worse for the mechanism
(per `MetricSpec.better`) by more than its relative tolerance AND the candidate value
lies outside the baseline's confidence interval. The CI condition keeps seed noise
from being flagged: a drop that stays inside the baseline's CI is not a regression,
however large relative to the value. Improvements are the mirror image (reported only).
Baseline rows, or metrics of a row, that the candidate lacks fail the comparison.

Every non-timing metric whose value or CI differs at all is counted too; `exact=True`
(`bench compare --exact`) fails on any such difference, for changes that must not move a
single number (a refactor, a re-run of the same code). Metrics that components register
when imported (Posthoc's `delta_p`, `local_lipschitz`, ...) are known once the registries
load, which `compare` makes them do; a metric still unknown (a plug-in not installed here)
has no direction, so it cannot regress, but under `exact` its value and CI must be equal.
Settings where an accelerator job ran an op without a deterministic kernel
(`nondeterministic_ops` > 0 on a row of theirs, in either leaderboard; bench.core.device) cannot
promise that: their metrics count as different only beyond their tolerance. The flag itself
is not compared (a CPU board has none).

Timings are noisy in absolute terms: a cost metric regresses only when it also grew by more
than its floor (`COST_FLOORS`: 1 s of fit or attack time, 1 ms per release), so
sub-millisecond jitter never fails a comparison. Timings measured on different machines
(the boards' environment blocks differ) are not comparable at all: `compare` then leaves
every cost metric out and says so (`cost_skipped`), as `--no-cost` does on request.
Boards of two different suites are refused.

Privacy leads: a setting the candidate flags unreliable (its audit refutes its claim, a
membership attack beats the ceiling its DP claim sets, its certificate breaks, or it declares
its claim void: bench.report.board.rows.flag_unreliable, recomputed here with today's code)
and the baseline does not is a privacy regression, named in the report's first line, and fails
the comparison, as does a fall of a bound row's `bound_validity` (a broken bound). A utility
gain of a setting whose privacy got worse (a privacy regression, or any regression of one of
its attack rows) is a trade-off, listed apart, never an improvement.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.core.errors import BenchError, ConfigError
from bench.core.hashing import canonical_json
from bench.metrics import METRICS, NONDETERMINISTIC_OPS, metric_spec
from bench.report.board.keys import RowKey, row_key
from bench.report.board.provenance import ENVIRONMENT_KEYS, check_comparable

REL_FLOOR = 1e-12
# The smallest growth of a timing that counts as a regression, in the metric's own unit:
# below it, scheduler and cache jitter dominate (a 0.04 ms release against 0.1 ms is noise).
COST_FLOORS = {"_s": 1.0, "_ms": 1.0}
# Environment fields that decide whether two boards' timings come from the same machine:
# every field a row records about its machine.
MACHINE_FIELDS = ENVIRONMENT_KEYS
LABEL_WIDTH = 60  # row labels are elided past this many characters
# The share of samples on which a bound row's bound held: its regression is a broken bound,
# reported with the refuted claims.
BOUND_VALIDITY = "bound_validity"


@dataclass(frozen=True)
class MetricChange:
    """One metric of one row that moved beyond tolerance and outside the baseline CI."""

    key: RowKey
    metric: str
    baseline: float
    baseline_ci: tuple[float, float]
    candidate: float
    tolerance: float

    @property
    def rel_change(self) -> float:
        """(candidate - baseline) / max(|baseline|, 1e-12)."""
        return (self.candidate - self.baseline) / max(abs(self.baseline), REL_FLOOR)


@dataclass(frozen=True)
class Missing:
    """A baseline row (metric None) or one of its metrics that the candidate lacks."""

    key: RowKey
    metric: str | None = None


@dataclass(frozen=True)
class PrivacyRegression:
    """A setting the candidate flags unreliable and the baseline does not: `reason` is why
    (the refuted claim)."""

    key: RowKey
    reason: str


@dataclass
class CompareReport:
    """The outcome of `compare`; `ok` is False on any regression or missing entry."""

    regressions: list[MetricChange] = field(default_factory=list)
    improvements: list[MetricChange] = field(default_factory=list)
    missing: list[Missing] = field(default_factory=list)
    added: list[RowKey] = field(default_factory=list)
    unknown_metrics: list[str] = field(default_factory=list)
    matched: int = 0
    compared: int = 0  # non-timing metrics of matched rows
    differing: list[MetricChange] = field(default_factory=list)  # value or CI not equal
    exact: bool = False
    # Matched rows of settings with nondeterministic ops: held to tolerance, not equality.
    tolerant_rows: int = 0
    # Why timings were left out ("" when they were compared): --no-cost or another machine.
    cost_skipped: str = ""
    labels: dict[RowKey, str] = field(default_factory=dict)  # short row labels, for format
    # Settings newly flagged unreliable (a refuted claim): reported first, always a failure.
    privacy: list[PrivacyRegression] = field(default_factory=list)
    # Utility gains of settings whose privacy got worse: not improvements.
    trade_offs: list[MetricChange] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not self.privacy
            and not self.regressions
            and not self.missing
            and not (self.exact and self.differing)
        )

    def format(self) -> str:
        """A readable plain-text report: a summary line, then one table per category."""
        lines = [self._summary()]
        if self.cost_skipped:
            lines.append(f"timings not compared: {self.cost_skipped}")
        if self.privacy:
            lines += ["", "PRIVACY REGRESSIONS (claims refuted in the candidate):"]
            lines += [f"  {self.label(p.key)}: {p.reason}" for p in self.privacy]
        lines += _change_table("REGRESSIONS", self.regressions, self.label)
        lines += _change_table(
            "trade-offs (utility gained where privacy got worse)", self.trade_offs, self.label
        )
        lines += _change_table("improvements", self.improvements, self.label)
        if self.exact:
            lines += _change_table("DIFFERENT (exact)", self.differing, self.label)
        if self.missing:
            lines += ["", "MISSING in candidate:"]
            lines += [
                f"  {self.label(m.key)}" + (f" | {m.metric}" if m.metric else "")
                for m in self.missing
            ]
        if self.added:
            lines += ["", "added in candidate (info):"]
            lines += [f"  {self.label(k)}" for k in self.added]
        if self.unknown_metrics:
            lines += ["", "not compared (direction unknown): " + ", ".join(self.unknown_metrics)]
        return "\n".join(lines)

    def label(self, key: RowKey) -> str:
        """The row's short label (its distinguishing parameters only), else the full one."""
        return self.labels.get(key) or _elide(key.label())

    def _summary(self) -> str:
        verdict = "OK" if self.ok else "FAIL"
        lead = ""
        if self.privacy:
            first = self.privacy[0]
            more = f" (and {len(self.privacy) - 1} more)" if len(self.privacy) > 1 else ""
            lead = f"refuted claim: {self.label(first.key)}: {first.reason}{more}; "
        return (
            f"compare: {verdict} — {lead}{self.matched} rows matched, "
            f"{len(self.regressions)} regressions, {len(self.improvements)} improvements, "
            f"{len(self.missing)} missing, {len(self.added)} added; "
            f"{len(self.differing)} of {self.compared} non-timing metrics differ"
            + (
                f" ({self.tolerant_rows} rows with nondeterministic ops held to tolerance)"
                if self.tolerant_rows
                else ""
            )
        )


def _change_table(
    title: str, changes: list[MetricChange], label: Callable[[RowKey], str]
) -> list[str]:
    """Aligned text table of metric changes (empty list when there are none)."""
    if not changes:
        return []
    header = ("row", "metric", "baseline [ci]", "candidate", "change", "tol")
    body = [
        (
            label(c.key),
            c.metric,
            f"{c.baseline:.4g} [{c.baseline_ci[0]:.4g}, {c.baseline_ci[1]:.4g}]",
            f"{c.candidate:.4g}",
            f"{c.rel_change:+.1%}",
            f"{c.tolerance:.0%}",
        )
        for c in changes
    ]
    widths = [max(len(r[i]) for r in (header, *body)) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return ["", f"{title}:", fmt.format(*header), *(fmt.format(*r) for r in body)]


_ANY = object()  # NAME without =VALUE: left out whatever its value


def without_params(doc: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """`doc` with the parameters `names` left out of every row, so a board written before
    a parameter existed matches rows that carry it at its default. A name given as
    NAME=VALUE (VALUE read as JSON, else as text) is left out only where it holds VALUE, so
    rows that set it otherwise stay apart. Refused in one line when leaving them out makes
    two rows of `doc` one."""
    if not names:
        return doc
    only = dict(_split_default(n) for n in names)
    rows, seen = [], set()
    for row in doc.get("rows", []):
        params = {
            k: v
            for k, v in (row.get("params") or {}).items()
            if k not in only or (only[k] is not _ANY and v != only[k])
        }
        stripped = {**row, "params": params}
        key = row_key(stripped)
        if key in seen:
            raise ConfigError(
                f"--ignore-param {','.join(names)}: two rows become {key.label()}; those "
                "parameters tell rows apart on this board"
            )
        seen.add(key)
        rows.append(stripped)
    return {**doc, "rows": rows}


def _split_default(name: str) -> tuple[str, Any]:
    """'NAME' -> (NAME, any value); 'NAME=VALUE' -> (NAME, VALUE as JSON, else as text)."""
    if "=" not in name:
        return name, _ANY
    key, text = name.split("=", 1)
    try:
        return key, json.loads(text)
    except json.JSONDecodeError:
        return key, text


def _index(doc: dict[str, Any]) -> dict[RowKey, dict[str, Any]]:
    return {row_key(r): r for r in doc.get("rows", [])}


def _elide(text: str, width: int = LABEL_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _varying(settings: list[dict[str, Any]]) -> list[str]:
    """The parameter names whose values differ between `settings` (sorted)."""
    names = sorted({name for params in settings for name in params})
    return [n for n in names if len({canonical_json(p.get(n)) for p in settings}) > 1]


def _setting_label(name: str | None, params: dict[str, Any], varying: list[str]) -> str:
    if name is None:
        return "-"
    shown = ", ".join(f"{k}={params[k]}" for k in varying if k in params)
    return _elide(f"{name}({shown})" if shown else name, LABEL_WIDTH // 2)


def short_labels(*docs: dict[str, Any]) -> dict[RowKey, str]:
    """Each row as `task | mechanism(setting) | attack(setting)`, where a setting names only
    the parameters that tell the rows of its (task, mechanism) or (task, attack) apart."""
    rows = [r for doc in docs for r in doc.get("rows", [])]
    mechs: dict[tuple[str, str], list[dict[str, Any]]] = {}
    attacks: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        mechs.setdefault((r["task"], r["mechanism"]), []).append(r.get("params") or {})
        if r.get("attack"):
            attacks.setdefault((r["task"], r["attack"]), []).append(r.get("attack_params") or {})
    vary_m = {k: _varying(v) for k, v in mechs.items()}
    vary_a = {k: _varying(v) for k, v in attacks.items()}
    labels = {}
    for r in rows:
        task, mech, attack = r["task"], r["mechanism"], r.get("attack")
        mech_label = _setting_label(mech, r.get("params") or {}, vary_m[(task, mech)])
        attack_label = _setting_label(
            attack, r.get("attack_params") or {}, vary_a.get((task, attack or ""), [])
        )
        labels[row_key(r)] = f"{task} | {mech_label} | {attack_label}"
    return labels


def _machine(doc: dict[str, Any]) -> dict[str, str]:
    """The fields of MACHINE_FIELDS on which every row's environment block agrees."""
    envs = [r.get("environment") or {} for r in doc.get("rows", [])]
    machine = {}
    for name in MACHINE_FIELDS:
        values = {str(e[name]) for e in envs if name in e}
        if len(values) == 1:
            machine[name] = values.pop()
    return machine


def machines_differ(baseline: dict[str, Any], candidate: dict[str, Any]) -> str:
    """ "" when both boards' timings come from the same kind of machine, else one phrase
    naming the first environment field that differs."""
    base, cand = _machine(baseline), _machine(candidate)
    for name in MACHINE_FIELDS:
        if name in base and name in cand and base[name] != cand[name]:
            return f"measured on different machines ({name}: {base[name]} vs {cand[name]})"
    return ""


def check_same_suite(baseline: dict[str, Any], candidate: dict[str, Any]) -> None:
    """Refuse, in one line, to compare the boards of two different suites."""
    a, b = baseline.get("suite"), candidate.get("suite")
    if a and b and a != b:
        raise ConfigError(
            f"cannot compare suite {a!r} with suite {b!r}: compare two boards of one suite"
        )


def cost_floor(name: str) -> float:
    """The smallest growth of timing `name` that may count as a regression (its unit's
    COST_FLOORS entry; 0 for a timing with no known unit)."""
    for suffix, floor in COST_FLOORS.items():
        if name.endswith(suffix):
            return floor
    return 0.0


def _tolerance_for(
    name: str, tolerance: float, metric_tolerances: dict[str, float], cost_tolerance: float
) -> float:
    if name in metric_tolerances:
        return metric_tolerances[name]
    return cost_tolerance if _is_cost(name) else tolerance


def _classify(
    key: RowKey, name: str, base: dict[str, Any], cand: dict[str, Any], tol: float
) -> tuple[str | None, MetricChange]:
    """("regression" | "improvement" | None, the change) for one metric of one row."""
    b, c = float(base["value"]), float(cand["value"])
    lo, hi = (float(v) for v in base["ci"])
    change = MetricChange(key, name, b, (lo, hi), c, tol)
    beyond_tol = abs(c - b) > tol * max(abs(b), REL_FLOOR)
    outside_ci = c < lo or c > hi
    if not (beyond_tol and outside_ci):
        return None, change
    if _is_cost(name) and abs(c - b) <= cost_floor(name):
        return None, change
    higher_is_better = metric_spec(name).better == "higher"
    worse = c < b if higher_is_better else c > b
    return ("regression" if worse else "improvement"), change


def _setting(key: RowKey) -> tuple[str, str, str]:
    return key.task, key.mechanism, key.params


def nondeterministic_settings(*docs: dict[str, Any]) -> set[tuple[str, str, str]]:
    """(task, mechanism, params) of every setting with a row reporting nondeterministic ops
    (an accelerator job that ran an op without a deterministic kernel), in any of `docs`."""
    name = NONDETERMINISTIC_OPS.name
    return {
        _setting(row_key(row))
        for doc in docs
        for row in doc.get("rows", [])
        if float((row.get("metrics") or {}).get(name, {}).get("value", 0.0) or 0.0) > 0
    }


def _compare_row(
    report: CompareReport,
    key: RowKey,
    base: dict[str, Any],
    cand: dict[str, Any],
    tolerances: tuple[float, dict[str, float], float],
    tolerant: bool = False,
) -> None:
    """Add one matched row's regressions, improvements and missing metrics to `report`; a
    `tolerant` row (nondeterministic ops) differs only beyond its tolerance."""
    unknown = set(report.unknown_metrics)
    for name in sorted(base["metrics"]):
        if name == NONDETERMINISTIC_OPS.name:  # steers the tolerance; not a result itself
            continue
        if report.cost_skipped and _is_cost(name):
            continue
        if name not in cand["metrics"]:
            report.missing.append(Missing(key, name))
            continue
        b, c = base["metrics"][name], cand["metrics"][name]
        if name not in METRICS:
            unknown.add(name)
            if report.exact:  # no direction, but the same code must give the same number
                report.compared += 1
                if (b["value"], list(b["ci"])) != (c["value"], list(c["ci"])):
                    report.differing.append(_unknown_change(key, name, b, c))
            continue
        tol = _tolerance_for(name, *tolerances)
        verdict, change = _classify(key, name, b, c, tol)
        if not _is_cost(name):
            report.compared += 1
            moved = (b["value"], list(b["ci"])) != (c["value"], list(c["ci"]))
            beyond = abs(change.candidate - change.baseline) > tol * max(
                abs(change.baseline), REL_FLOOR
            )
            if moved and (beyond or not tolerant):
                report.differing.append(change)
        if verdict == "regression":
            report.regressions.append(change)
        elif verdict == "improvement":
            report.improvements.append(change)
    report.unknown_metrics = sorted(unknown)


def _unknown_change(
    key: RowKey, name: str, base: dict[str, Any], cand: dict[str, Any]
) -> MetricChange:
    lo, hi = (float(v) for v in base["ci"])
    return MetricChange(key, name, float(base["value"]), (lo, hi), float(cand["value"]), 0.0)


def _load_component_metrics() -> None:
    """Import the registered tasks, mechanisms and attacks, so the metrics they register
    have their specs; a plug-in that fails to import leaves its metrics unknown."""
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS

    for registry in (TASKS, MECHANISMS, ATTACKS):
        try:
            registry.names()
        except BenchError:
            continue


def compare(
    baseline: dict[str, Any],
    candidate: dict[str, Any],
    *,
    tolerance: float = 0.05,
    metric_tolerances: dict[str, float] | None = None,
    cost_tolerance: float = 0.5,
    exact: bool = False,
    cost: bool = True,
) -> CompareReport:
    """Match rows by (task, mechanism, params, attack, attack_params) and flag regressions.

    Relative tolerances: `tolerance` for utility / privacy / bound metrics,
    `cost_tolerance` for timings (above their COST_FLOORS), `metric_tolerances` overrides
    per metric name; with `exact`, any difference of a non-timing metric also fails.
    Timings are left out when `cost` is False or the boards come from different machines.
    Boards of different suites, and rows measured on another task version or data, are
    refused (ConfigError, IncomparableError).
    """

    check_same_suite(baseline, candidate)
    check_comparable(baseline, candidate)
    _load_component_metrics()
    tolerances = (tolerance, dict(metric_tolerances or {}), cost_tolerance)
    base_rows, cand_rows = _index(baseline), _index(candidate)
    loose = nondeterministic_settings(baseline, candidate)
    skipped = "--no-cost" if not cost else machines_differ(baseline, candidate)
    report = CompareReport(
        exact=exact, cost_skipped=skipped, labels=short_labels(baseline, candidate)
    )
    for key in sorted(base_rows, key=_sort_key):
        if key not in cand_rows:
            report.missing.append(Missing(key))
            continue
        report.matched += 1
        tolerant = _setting(key) in loose
        report.tolerant_rows += tolerant
        _compare_row(report, key, base_rows[key], cand_rows[key], tolerances, tolerant)
    report.added = sorted((k for k in cand_rows if k not in base_rows), key=_sort_key)
    broken = [c for c in report.regressions if c.metric == BOUND_VALIDITY]
    report.regressions = [c for c in report.regressions if c.metric != BOUND_VALIDITY]
    report.privacy = newly_refuted(baseline, candidate) + [
        PrivacyRegression(c.key, f"bound broken: {c.metric} {c.baseline:.4g} -> {c.candidate:.4g}")
        for c in broken
    ]
    _separate_trade_offs(report)
    return report


def _refuted_settings(doc: dict[str, Any]) -> dict[tuple[str, str, str], tuple[RowKey, str]]:
    """(task, mechanism, params) -> (the setting's row key, the reason) for every setting of
    `doc` that today's code flags unreliable; the flags are recomputed on a copy, so a board
    written by older code is judged by today's rules. The key is the setting's utility row
    where it has one."""
    from bench.report.board.rows import flag_unreliable

    rows = json.loads(json.dumps(doc.get("rows", [])))
    for row in rows:  # a hand-made board may leave out what written boards always carry
        row.setdefault("params", {})
        row.setdefault("guarantee", {})
        row.setdefault("metrics", {})
    flag_unreliable(rows)
    found: dict[tuple[str, str, str], tuple[RowKey, str]] = {}
    for row in sorted(rows, key=lambda r: r.get("attack") is not None):
        key = row_key(row)
        if row.get("unreliable") and _setting(key) not in found:
            found[_setting(key)] = (key, str(row.get("unreliable_reason") or "flagged"))
    return found


def newly_refuted(baseline: dict[str, Any], candidate: dict[str, Any]) -> list[PrivacyRegression]:
    """The candidate's settings flagged unreliable that the baseline does not flag (a setting
    new in the candidate counts when flagged), in row order."""
    before = _refuted_settings(baseline)
    after = _refuted_settings(candidate)
    return [
        PrivacyRegression(key, reason)
        for setting, (key, reason) in sorted(after.items(), key=lambda kv: _sort_key(kv[1][0]))
        if setting not in before
    ]


def _is_cost(metric: str) -> bool:
    """Whether `metric` is a timing (a registered cost metric)."""
    return metric in METRICS and METRICS[metric].kind == "cost"


def _separate_trade_offs(report: CompareReport) -> None:
    """Move the utility-row improvements of settings whose privacy got worse (a privacy
    regression, or a regression on one of their attack rows) to `trade_offs`."""
    weaker = {_setting(p.key) for p in report.privacy}
    weaker |= {
        _setting(c.key)
        for c in report.regressions
        if c.key.attack is not None and not _is_cost(c.metric)  # a slower attack is no gain
    }
    report.trade_offs = [
        c for c in report.improvements if c.key.attack is None and _setting(c.key) in weaker
    ]
    report.improvements = [c for c in report.improvements if c not in report.trade_offs]


def _sort_key(key: RowKey) -> tuple[str, str, str, int, str, str]:
    return (
        key.task,
        key.mechanism,
        key.params,
        key.attack is not None,
        key.attack or "",
        key.attack_params,
    )


def _parse_value(spec: str, text: str) -> float:
    """A tolerance value: a finite float >= 0, else a one-line ConfigError."""
    try:
        value = float(text)
    except ValueError:
        raise ConfigError(
            f"bad tolerance {spec!r}: {text!r} is not a number (use e.g. 0.1 or mse=0.2)"
        ) from None
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"bad tolerance {spec!r}: must be a finite number >= 0")
    return value


def parse_tolerances(specs: list[str]) -> tuple[float | None, dict[str, float]]:
    """Parse CLI tolerance strings: "0.1" sets the default, "mse=0.2" one metric's.

    Returns (default or None, {metric: tolerance}). Unknown metric names and malformed
    or repeated specs raise a one-line ConfigError.
    """
    default: float | None = None
    per_metric: dict[str, float] = {}
    for spec in specs:
        text = spec.strip()
        if "=" not in text:
            if default is not None:
                raise ConfigError(f"bad tolerance {spec!r}: the default tolerance is given twice")
            default = _parse_value(spec, text)
            continue
        name, _, value = (part.strip() for part in text.partition("="))
        if not name:
            raise ConfigError(f"bad tolerance {spec!r}: expected METRIC=VALUE, e.g. mse=0.2")
        if name not in METRICS:
            known = ", ".join(sorted(METRICS))
            raise ConfigError(f"bad tolerance {spec!r}: unknown metric {name!r}; known: {known}")
        if name in per_metric:
            raise ConfigError(f"bad tolerance {spec!r}: metric {name!r} is given twice")
        per_metric[name] = _parse_value(spec, value)
    return default, per_metric


__all__ = [
    "CompareReport",
    "MetricChange",
    "Missing",
    "RowKey",
    "compare",
    "machines_differ",
    "parse_tolerances",
    "row_key",
    "short_labels",
]
