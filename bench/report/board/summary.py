"""The end-of-run summary `bench run` prints: per task, each setting's utility with its CI
and its strongest attack (named), with only the parameters that differ from the defaults,
and the flags a reader must see first (at chance, constant predictor, unreliable)."""

from __future__ import annotations

from typing import Any

from bench.core.hashing import canonical_json
from bench.plugin.notions import privacy_levels
from bench.report.board.frontier import attack_score_of
from bench.report.board.labels import WORST_CASE, score_name_in, utility_metric_of


def _short_params(params: dict[str, Any], defaults: dict[str, Any]) -> str:
    """The parameters that differ from the defaults, and the privacy level always."""
    always = {level.param for level in privacy_levels()}
    changed = {
        k: v for k, v in sorted(params.items()) if k in always or defaults.get(k, object()) != v
    }
    return ", ".join(f"{k}={v}" for k, v in changed.items())


def _entry(metric: dict[str, Any] | None) -> str:
    return "-" if metric is None else f"{metric['value']:.4g}"


def _with_ci(metric: dict[str, Any] | None) -> str:
    """A value with its 95% CI, e.g. "0.702 [0.68, 0.723]"."""
    if metric is None:
        return "-"
    lo, hi = metric["ci"]
    return f"{metric['value']:.3g} [{lo:.3g}, {hi:.3g}]"


def _flags(row: dict[str, Any] | None) -> str:
    """The utility row's flags a reader must see before trusting the number."""
    if row is None:
        return ""
    flags = [
        words
        for key, words in (
            ("at_chance", "AT CHANCE"),
            ("constant_predictor", "CONSTANT"),
            ("unreliable", "UNRELIABLE"),
        )
        if row.get(key)
    ]
    return f"  [{', '.join(flags)}]" if flags else ""


def _claim_checks(metrics: dict[str, Any]) -> str:
    """The audit's eps lower bound and the bound validity of a utility row, where it has
    them: what the strongest attack is read next to (label-only settings carry both)."""
    parts = [
        f"{label} {_entry(metrics[name])}"
        for name, label in (("eps_audit_lb", "audit eps >="), ("bound_validity", "validity"))
        if name in metrics
    ]
    return ("  " + ", ".join(parts)) if parts else ""


def summary_lines(
    rows: list[dict[str, Any]], defaults: dict[str, dict[str, Any]], utility: dict[str, str]
) -> list[str]:
    """One block per task: a line per (mechanism, params) with its utility and the worst
    case's headline attack metric and the attack that reached it. `defaults` maps a
    mechanism to its default parameters, `utility` a task to its utility metric."""
    lines: list[str] = []
    for task in sorted({r["task"] for r in rows}):
        task_rows = [r for r in rows if r["task"] == task]
        metric = utility.get(task) or utility_metric_of(task_rows) or "utility"
        score = attack_score_of(task_rows) or "mse"
        lines.append(f"{task}: {metric}; strongest attack by {score}")
        settings: dict[str, dict[str, Any]] = {}
        for row in task_rows:
            key = canonical_json([row["mechanism"], row["params"]])
            entry = settings.setdefault(
                key, {"row": row, "utility": None, "utility_row": None, "worst": None}
            )
            if row["attack"] is None:
                entry["utility"] = row["metrics"].get(metric)
                entry["utility_row"] = row
                entry["claim"] = _claim_checks(row["metrics"])
            elif row["attack"] == WORST_CASE:
                entry["worst"] = row
        for entry in settings.values():
            row = entry["row"]
            params = _short_params(row["params"], defaults.get(row["mechanism"], {}))
            name = f"{row['mechanism']}({params})" if params else row["mechanism"]
            worst = entry["worst"]
            attack = "-"
            held = score_name_in(worst["metrics"], score) if worst is not None else None
            if worst is not None and held is not None:
                source = (worst.get("sources") or {}).get(held, "?")
                attack = f"{_entry(worst['metrics'][held])} ({source})"
            utility_text = _with_ci(entry["utility"])
            flags = _flags(entry["utility_row"])
            lines.append(
                f"  {name:44s} {metric} {utility_text:>22s}  attack {attack}"
                + entry.get("claim", "")
                + flags
            )
    return lines
