"""Leaderboard rows: job results aggregated over seeds into one row per (task, mechanism,
params, attack), floats rounded to 6 significant digits so reruns are byte-identical, the
per-setting worst-case rows, and settings whose audit refuted their claim flagged."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from bench.core.hashing import canonical_json
from bench.metrics import METRICS, MetricResult
from bench.metrics.membership import (
    MIA_CEILING,
    MIA_CEILING_BEATEN,
    MIA_SCORE,
    MIA_TPR,
    auc_ceiling,
    ceiling_beaten_everywhere,
    dp_membership_bound,
)
from bench.metrics.stats import aggregate_seeds
from bench.plugin.families import load_families
from bench.plugin.notions import known_notion, notion_spec
from bench.report.board.labels import (
    WORST_CASE,
    attack_label_of,
    attack_labels,
    not_private,
    row_sort_key,
)
from bench.report.board.row import Row

SIG_DIGITS = 6


def round_sig(x: float, digits: int = SIG_DIGITS) -> float:
    """`x` rounded to `digits` significant digits (stable text across reruns)."""
    return float(f"{float(x):.{digits}g}")


def _sorted_obj(obj: Any) -> Any:
    """A copy of nested dicts with keys sorted, so insertion order never leaks into files."""
    if isinstance(obj, dict):
        return {str(k): _sorted_obj(obj[k]) for k in sorted(obj, key=str)}
    if isinstance(obj, list | tuple):
        return [_sorted_obj(v) for v in obj]
    return obj


def _rounded_obj(obj: Any) -> Any:
    """A copy of nested data with every float rounded to SIG_DIGITS significant digits."""
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, float):
        return round_sig(obj)
    if isinstance(obj, dict):
        return {k: _rounded_obj(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_rounded_obj(v) for v in obj]
    return obj


def _guarantee_obj(guarantee: dict[str, Any]) -> dict[str, Any]:
    """The guarantee with "notion" first, the other keys sorted, floats rounded."""
    rest = _sorted_obj({k: v for k, v in guarantee.items() if k != "notion"})
    return _rounded_obj({"notion": guarantee.get("notion", "none"), **rest})


def _group_key(result: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """Rows group jobs that differ only by seed."""
    return (
        result["task"],
        result["mechanism"],
        canonical_json(result.get("params") or {}),
        result.get("attack") or "",
        canonical_json(result.get("attack_params") or {}),
    )


def _metric_entry(result: MetricResult) -> dict[str, Any]:
    return {
        "value": round_sig(result.value),
        "ci": [round_sig(result.ci[0]), round_sig(result.ci[1])],
        "n": int(result.n),
    }


def _aggregate_metrics(group: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each metric aggregated over the seeds that report it, keyed by sorted name."""
    per_metric: dict[str, list[MetricResult]] = defaultdict(list)
    for result in group:
        for name, value in result["metrics"].items():
            per_metric[name].append(value)
    return {name: _metric_entry(aggregate_seeds(per_metric[name])) for name in sorted(per_metric)}


def _build_row(group: list[dict[str, Any]]) -> Row:
    group = sorted(group, key=lambda r: r["seed"])
    seeds = [r["seed"] for r in group]
    first = group[0]
    if len(set(seeds)) != len(seeds):
        raise ValueError(
            f"duplicate seeds {seeds} for {first['task']}/{first['mechanism']} "
            f"attack={first.get('attack')}; each job must appear once"
        )
    guarantee = dict(first.get("guarantee") or {"notion": "none"})
    if "tuning" in guarantee:  # each seed tunes on its own: keep every seed's choice
        guarantee["tuning"] = [(r.get("guarantee") or {}).get("tuning") for r in group]
    return Row(
        task=first["task"],
        mechanism=first["mechanism"],
        params=_sorted_obj(first.get("params") or {}),
        guarantee=_guarantee_obj(guarantee),
        attack=first.get("attack"),
        attack_params=_sorted_obj(first.get("attack_params") or {}),
        seeds=len(seeds),
        metrics=_aggregate_metrics(group),
    )


def build_rows(results: Iterable[dict[str, Any]]) -> list[Row]:
    """One leaderboard row per (task, mechanism, params, attack, attack_params), each
    metric aggregated over seeds with `aggregate_seeds`, plus a `worst case` row per
    (task, mechanism, params); rows in a deterministic order."""
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for result in results:
        groups[_group_key(result)].append(result)
    rows = [_build_row(g) for g in groups.values()]
    rows = rows + worst_case_rows(rows)
    flag_unreliable(rows)
    return sorted(rows, key=row_sort_key)


def flag_unreliable(rows: list[Row]) -> None:
    """Mark every row of a setting whose claim bench refutes: its privacy audit (eps_audit_lb
    above the declared eps at 95% confidence), for a DP claim over training records a
    membership-inference attack above the ceiling that claim puts on the game
    (bench.metrics.membership.dp_membership_bound), for an iDP claim its own definition
    failing on a probed record (`_own_definition_broken`), or a mechanism that declares the
    claim void (guarantee `not_private`): `unreliable` true with the reason(s). An iDP or
    label-DP claim is never held to the membership ceiling: the attacks measure such a row
    without testing its claim (bench.report.board.labels.membership_claim says so on the
    page). All numbers here are re-executed by bench (`source`), none copied from papers."""
    load_families(row["mechanism"] for row in rows)  # the notions their families register
    refuted: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for row in rows:
        key = (row["task"], row["mechanism"], canonical_json(row["params"]))
        for reason in (_audit_refutes(row), _ceiling_beaten(row), _own_definition_broken(row)):
            if reason and reason not in refuted[key]:
                refuted[key].append(reason)
    for row in rows:
        row["source"] = "re-executed"
        found = refuted.get((row["task"], row["mechanism"], canonical_json(row["params"])), [])
        reasons = [r for r in (not_private(row), *found) if r]
        reason = "; ".join(reasons) if reasons else None
        row["unreliable"] = reason is not None
        if reason:
            row["unreliable_reason"] = reason


def _audit_refutes(row: dict[str, Any]) -> str | None:
    """The privacy audit's refutation: its eps lower bound above the declared eps."""
    audit = row["metrics"].get("eps_audit_lb")
    claimed = row["guarantee"].get("eps")
    if audit is not None and isinstance(claimed, int | float) and audit["value"] > claimed:
        return f"privacy audit: eps lower bound {audit['value']:.3g} > claimed {claimed:g}"
    return None


def _own_definition_broken(row: dict[str, Any]) -> str | None:
    """A claim over one training set with an exact certificate (an iDP claim: neighbours
    "training set", its notion registering no membership ceiling and no false-alarm rate)
    checked against its own definition: the certificate's probe (`bound_validity`, on the
    utility row) found a record of the domain the certificate covers that is answered
    without noise although a network trained on the training set minus one record labels it
    otherwise, so the answers for D and for D minus that record differ for sure. An exact
    certificate is broken by one such record."""
    validity = row["metrics"].get("bound_validity")
    notion = row["guarantee"].get("notion")
    if validity is None or not known_notion(notion):
        return None
    spec = notion_spec(notion)
    exact = spec.bound_false_alarm is None and not spec.membership_ceiling
    if spec.neighbours != "training set" or not exact:
        return None
    if float(validity["value"]) >= 1.0:
        return None
    share = 1.0 - float(validity["value"])
    return (
        f"{spec.words} definition check: {share:.3g} of {int(validity.get('n', 0)):,} "
        "probed records "
        "answered without noise where a network trained without one training record "
        "answers otherwise"
    )


def _ceiling_beaten(row: dict[str, Any]) -> str | None:
    """Why a membership attack row beats the ceiling its DP claim puts on the game: its
    AUC's 95% CI above the largest AUC the claim allows, or on TPR at 1% FPR (the exact test
    of bench.metrics.membership.ceiling_test rejected the claim on every seed); else None.
    Only DP claims over training records are held to it (dp_membership_bound)."""
    if row["attack"] in (None, WORST_CASE):
        return None
    claim = dp_membership_bound(row["guarantee"])
    if claim is None:
        return None
    auc = row["metrics"].get(MIA_SCORE)
    if auc is not None and float(auc["ci"][0]) > auc_ceiling(*claim):
        return (
            f"membership inference ({row['attack']}): AUC {auc['value']:.3g} "
            f"[{auc['ci'][0]:.3g}, {auc['ci'][1]:.3g}] above the DP claim's ceiling "
            f"{auc_ceiling(*claim):.3g} (e^eps / (1 + e^eps) + delta)"
        )
    beaten = row["metrics"].get(MIA_CEILING_BEATEN)
    if beaten is None or not ceiling_beaten_everywhere(float(beaten["value"])):
        return None
    tpr, limit = row["metrics"].get(MIA_TPR, {}), row["metrics"].get(MIA_CEILING, {})
    return (
        f"membership inference ({row['attack']}): TPR at 1% FPR {tpr.get('value', 0.0):.3g} "
        f"above the DP claim's ceiling {limit.get('value', 0.0):.3g} (e^eps * FPR + delta) "
        "in an exact test on every seed"
    )


def _strongest(entries: list[tuple[str, dict[str, Any]]], metric: str) -> tuple[str, dict]:
    """The (attack label, entry) most favourable to the attacker for `metric`."""
    if METRICS[metric].better == "higher":  # e.g. mse: the attacker wants it low
        return min(entries, key=lambda e: e[1]["value"])
    return max(entries, key=lambda e: e[1]["value"])


def worst_case_rows(rows: list[Row]) -> list[Row]:
    """Per (task, mechanism, params): each attack metric from the strongest attack for that
    metric (lowest mse, highest ssim / psnr / top1), with `sources` naming the attack."""
    by_config: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if row["attack"] is not None:
            key = (row["task"], row["mechanism"], canonical_json(row["params"]))
            by_config[key].append(row)
    out = []
    for attack_rows in by_config.values():
        labels = attack_labels(attack_rows)
        metrics, sources = {}, {}
        names = {n for r in attack_rows for n in r["metrics"]}
        for name in sorted(names):
            kind = METRICS[name].kind if name in METRICS else None
            # The prior guess's score ("<metric>_prior") rides along: the attack to beat.
            prior_baseline = kind == "reference" and name.endswith("_prior")
            if (kind != "privacy" and not prior_baseline) or name == "eps_audit_lb":
                continue
            entries = [
                (attack_label_of(r, labels), r["metrics"][name])
                for r in attack_rows
                if name in r["metrics"]
            ]
            source, metrics[name] = _strongest(entries, name)
            if not prior_baseline:
                sources[name] = source
        first = attack_rows[0]
        out.append(
            Row(
                task=first["task"],
                mechanism=first["mechanism"],
                params=first["params"],
                guarantee=first["guarantee"],
                attack=WORST_CASE,
                attack_params={},
                seeds=min(r["seeds"] for r in attack_rows),
                metrics=metrics,
                sources=sources,
            )
        )
    return out
