"""The summary a suite page opens on: per task, one line per mechanism setting with its
utility, the strongest attack's headline metric and that attack's name, the audit's lower
bound on eps, bound validity and flags; the per-attack table stays one click away."""

from __future__ import annotations

import math
from typing import Any

from bench.core.hashing import canonical_json
from bench.metrics.membership import MIA_CEILING, dp_membership_bound
from bench.plugin.notions import known_notion, notion_spec
from bench.report.board.audit_power import audit_verdict, inconclusive
from bench.report.board.frontier import attack_score_of
from bench.report.board.labels import (
    WORST_CASE,
    alternative_scoring,
    at_chance,
    attack_labels,
    describe_guarantee,
    membership_claim,
    not_private,
    params_text,
    row_sort_key,
    score_name_in,
    setting_order,
    task_chance,
    task_prior_baseline,
    utility_metric_of,
    varying_params,
)
from bench.report.board.ranking import (
    UTILITY_FLOOR_SHARE,
    band_rule,
    claim_view,
    claim_words,
    ranked_views,
    utility_floor,
)

SCORE_WORDS = {
    "ssim": "SSIM",
    "ssim_all": "SSIM (all queries)",
    "top1": "top-1",
    "top1_all": "top-1 (all)",
    "mse": "MSE",
    "mia_auc": "membership AUC",
}
# The suffix of a metric scored on every query, a refused one (⊥) answered by the prior
# guess (attacks) or the training split's majority class (utility): the one scoring rule.
ALL_QUERIES = "_all"


def one_rule_utility(rows: list[dict[str, Any]], utility: str | None) -> str | None:
    """The utility metric settings are shown and ranked by: `utility` scored on every query
    ("<utility>_all") where the task's utility rows carry it, else `utility` itself."""
    if utility is None:
        return None
    every = f"{utility}{ALL_QUERIES}"
    held = any(every in r["metrics"] for r in rows if r["attack"] is None)
    return every if held else utility


def utility_words(name: str) -> str:
    """A utility metric as a column header: "accuracy", "accuracy (all queries)"."""
    base = name.removesuffix(ALL_QUERIES)
    return f"{base} (all queries)" if base != name else name


def _mse_share(worst: dict[str, Any] | None, prior: dict[str, Any] | None) -> str:
    """The strongest attack's MSE as a share of the prior guess's, e.g. "MSE 0.83 × the
    prior guess's" (on every query where the row has it), "" without both."""
    if worst is None or prior is None or float(prior["value"]) <= 0:
        return ""
    held = score_name_in(worst["metrics"], f"mse{ALL_QUERIES}")
    if held is None:
        return ""
    share = float(worst["metrics"][held]["value"]) / float(prior["value"])
    return f"MSE {share:.2g} × the prior guess's"


def _audit_power(metrics: dict[str, Any], guarantee: dict[str, Any] | None = None) -> str:
    """The audit's power in words, e.g. "could show 1.75 · 200,000 draws": the bound it
    reaches on a mechanism exactly at its claim, and its size (empty for older rows);
    led by "inconclusive: power P% < 80% ..." when, for the claim in `guarantee`, it had
    too little power (bench.report.board.audit_power)."""
    ideal, draws = metrics.get("eps_audit_ideal"), metrics.get("audit_draws")
    if ideal is None or draws is None:
        return ""
    if int(draws["value"]) == 0:  # e.g. PTR: no pair within R whose phi the budget settles
        return "no testable pair: 0 draws, the bound 0 says nothing"
    text = f"could show {ideal['value']:.3g} · {int(draws['value']):,} draws"
    why = inconclusive({"metrics": metrics, "guarantee": guarantee}) if guarantee else None
    return f"{why} · {text}" if why else text


def _membership_cells(worst: dict[str, Any] | None, rows: Any) -> dict[str, Any]:
    """A label-only setting's strongest TPR at 1% FPR (and 0.1% where reported), with the
    attack that reached it, beside the ceiling its claim puts on that TPR when the claim is
    one the ceiling is held against (a DP claim over training records,
    bench.metrics.membership.dp_membership_bound), and what the attacks are held against."""
    metrics = (worst or {}).get("metrics", {})
    rows = list(rows)
    guarantee = next((r.get("guarantee") or {} for r in rows), {})
    ceiling = None
    if dp_membership_bound(guarantee) is not None:
        ceiling = next(
            (r["metrics"][MIA_CEILING] for r in rows if MIA_CEILING in r["metrics"]), None
        )
    sources = (worst or {}).get("sources") or {}
    return {
        "mia_tpr": _cell(metrics.get("mia_tpr_at_1pct_fpr")),
        "mia_tpr_by": sources.get("mia_tpr_at_1pct_fpr", ""),
        "mia_tpr_01": _cell(metrics.get("mia_tpr_at_0_1pct_fpr")),
        "mia_ceiling": _cell(ceiling),
        "mia_claim": membership_claim(guarantee) if "mia_auc" in metrics else "",
    }


def _training_set_claims(rows: list[dict[str, Any]]) -> bool:
    """Whether every claim of a task's settings is over training sets (what two neighbours
    differ in, NotionSpec.neighbours), beside the unprotected reference: such settings
    release answers of a model trained on private records, with no encoder to invert, so no
    reconstruction attack applies to them."""
    notions = {(r.get("guarantee") or {}).get("notion") for r in rows}
    specs = [notion_spec(n) for n in notions if known_notion(n)]
    claimed = [spec for spec in specs if spec.claims_privacy]
    return bool(claimed) and all(spec.neighbours == "training set" for spec in claimed)


def _cell(metric: dict[str, Any] | None) -> dict[str, str] | None:
    if metric is None:
        return None
    lo, hi = metric["ci"]
    return {
        "value": repr(float(metric["value"])),
        "text": f"{metric['value']:.3g}",
        "ci": f"[{lo:.3g}, {hi:.3g}]",
        "lo": repr(float(lo)),
        "hi": repr(float(hi)),
    }


# A statistical bound check, such as the dFIL checks (each sample one-sided at 95%,
# bench.certify.fisher.bounds), lets about its false-alarm rate (5% for dFIL)
# of samples fail by chance when the bound holds (the notion's `bound_false_alarm`). Such a
# bound is called broken only when more fail than that could explain (binomial tail below
# 1%); an exact certificate (iDP) is broken by a single violation.
BROKEN_P = 0.01


def _binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


def bound_broken(validity: dict[str, Any] | None, notion: str | None) -> bool:
    """Whether a bound_validity entry shows the bound failing beyond its test's own error:
    an exact bound by any failure, a per-sample estimate (its notion's `bound_false_alarm`)
    only by more failures than its false-alarm rate explains."""
    if validity is None or validity["value"] >= 1.0:
        return False
    false_alarm = notion_spec(notion).bound_false_alarm if known_notion(notion) else None
    if false_alarm is None:
        return True
    n = int(validity.get("n", 1))
    failed = round((1.0 - float(validity["value"])) * n)
    return _binomial_tail(failed, n, false_alarm) < BROKEN_P


def _weakest_validity_row(rows: Any) -> dict[str, Any] | None:
    """The row with the lowest bound_validity of a setting (utility row for iDP bounds, each
    attack's row for dFIL bounds): a bound is only as valid as where it held least."""
    found = [r for r in rows if "bound_validity" in r["metrics"]]
    return min(found, key=lambda r: r["metrics"]["bound_validity"]["value"]) if found else None


def bound_of(row: dict[str, Any] | None) -> dict[str, str]:
    """What an attack row's bound check rests on ({"bound", "basis", "why"}; empty if the
    mechanism did not say): "theorem" or "estimate"
    (bench.plugin.protocols.Mechanism.bound_basis)."""
    return ((row or {}).get("guarantee") or {}).get("bound") or {}


def task_overview(rows: list[dict[str, Any]], utility: str | None) -> dict[str, Any]:
    """One task's summary table: its utility metric, the attack score and a line per
    (mechanism, params) in leaderboard order."""
    utility = utility or utility_metric_of(rows)
    one_rule = one_rule_utility(rows, utility)
    score = attack_score_of(rows) or "mse"
    mse_prior = task_prior_baseline(rows, f"mse{ALL_QUERIES}") if score != "mse" else None
    # An attack run with several parameter sets (tv tuned and fixed) is one row per set,
    # each under its own label, so that none hides another.
    labels = attack_labels(rows)
    settings: dict[str, dict[str, Any]] = {}
    for row in sorted(rows, key=row_sort_key):
        key = canonical_json([row["mechanism"], row["params"]])
        entry = settings.setdefault(
            key, {"mechanism": row["mechanism"], "params": row["params"], "rows": {}}
        )
        if row["attack"] is None:
            name = "utility"
        elif row["attack"] == WORST_CASE:
            name = WORST_CASE
        else:
            name = labels[(row["attack"], canonical_json(row.get("attack_params") or {}))]
        entry["rows"][name] = row
    varies = varying_params([(e["mechanism"], e["params"]) for e in settings.values()])
    lines = []
    for entry in sorted(
        settings.values(), key=lambda e: setting_order(e["mechanism"], e["params"])
    ):
        util_row = entry["rows"].get("utility")
        worst = entry["rows"].get(WORST_CASE)
        varying = varies.get(entry["mechanism"], set())
        shown = {k: v for k, v in entry["params"].items() if k in varying}
        metrics = util_row["metrics"] if util_row else {}
        shown_in = score_name_in(metrics, one_rule) if one_rule else None
        held = score_name_in(worst["metrics"], score) if worst else None
        any_row = util_row or worst or next(iter(entry["rows"].values()))
        weakest = _weakest_validity_row(entry["rows"].values())
        weakest_bound = bound_of(weakest)
        broken = bound_broken(
            weakest["metrics"]["bound_validity"] if weakest else None,
            (any_row.get("guarantee") or {}).get("notion"),
        )
        lines.append(
            {
                "mechanism": entry["mechanism"],
                "setting": params_text(shown) if shown else "",
                "all_params": params_text(entry["params"]),
                "guarantee": describe_guarantee(any_row.get("guarantee") or {}),
                "claim": any_row.get("guarantee") or {},
                "claim_words": claim_words(any_row.get("guarantee")),
                "utility": _cell(metrics.get(shown_in)) if shown_in else None,
                "attack": _cell(worst["metrics"].get(held)) if worst and held else None,
                "attack_by": (worst.get("sources") or {}).get(held, "") if worst and held else "",
                "mse_share": _mse_share(worst, mse_prior),
                **_membership_cells(worst, entry["rows"].values()),
                "audit": _cell(metrics.get("eps_audit_lb")),
                "audit_power": _audit_power(metrics, util_row and util_row.get("guarantee")),
                "audit_verdict": audit_verdict(util_row),
                "validity": _cell(weakest["metrics"]["bound_validity"] if weakest else None),
                "validity_basis": weakest_bound.get("basis", ""),
                "validity_why": weakest_bound.get("why", ""),
                "per_attack": [
                    {
                        "attack": label,
                        "score": _cell(
                            row["metrics"].get(score_name_in(row["metrics"], score) or "")
                        ),
                        "mse": _cell(row["metrics"].get("mse")) if score != "mse" else None,
                        "validity": _cell(row["metrics"].get("bound_validity")),
                        "bound": bound_of(row),
                    }
                    for label, row in sorted(entry["rows"].items())
                    if label not in ("utility", WORST_CASE)
                ],
                "paper": any_row.get("paper") or "",
                "docs": any_row.get("docs") or "",
                "at_chance": at_chance(util_row, shown_in),
                "chance_reason": (util_row or {}).get("at_chance_reason", ""),
                "constant": bool(util_row and util_row.get("constant_predictor")),
                "alternative_scoring": alternative_scoring(entry["params"]),
                "unreliable": any(r.get("unreliable") for r in entry["rows"].values()),
                "unreliable_reason": next(
                    (r["unreliable_reason"] for r in entry["rows"].values() if r.get("unreliable")),
                    "",
                ),
                "not_private": not_private(any_row),
                # A bound that binds by theorem and fails is a broken claim; one resting on an
                # estimate (or on an assumption the attack need not meet) that fails says the
                # estimate does not carry over to this attack.
                "bound_broken": broken and weakest_bound.get("basis") != "estimate",
                "estimate_fails": broken and weakest_bound.get("basis") == "estimate",
            }
        )
    chance = _chance_line(rows, score)
    prior = (chance or {}).get("attack")
    has_attacks = any(r["attack"] == WORST_CASE for r in rows)
    reference = _reference(lines)
    chance_value = task_chance(rows)
    floor = utility_floor(chance_value, reference[0] if reference else None)
    ranked = ranked_views(
        lines,
        score,
        float(prior["value"]) if prior else None,
        has_attacks,
        SCORE_WORDS.get(score, score),
        floor,
    )
    return {
        "chance": chance,
        "ranked": ranked,
        "empirical": [band for band in ranked if band["kind"] == "attack"],
        "claims": claim_view(lines, floor) if ranked else [],
        "floor": floor,
        "chance_value": chance_value,
        "shown_utility": one_rule or "utility",
        "floor_rule": _floor_rule(chance_value, reference, floor),
        "band_rule": band_rule(
            score, float(prior["value"]) if prior else None, SCORE_WORDS.get(score, score)
        ),
        "prior": float(prior["value"]) if prior else None,
        "utility_words": utility_words(one_rule or "utility"),
        "utility": utility or "utility",
        "score": score,
        "score_words": SCORE_WORDS.get(score, score),
        "lower_is_stronger": score == "mse",
        "has_attacks": has_attacks,
        "training_set_claims": _training_set_claims(rows),
        "mia_records": _mia_records(rows),
        "has_audit": any(line["audit"] for line in lines),
        "has_validity": any(line["validity"] for line in lines),
        # Each distinct reason a bound rests on an estimate or holds by theorem, for the legend.
        "bases": sorted(
            {
                (a["bound"]["bound"], a["bound"]["basis"], a["bound"]["why"])
                for line in lines
                for a in line["per_attack"]
                if a["bound"]
            }
        ),
        "lines": lines,
    }


def _reference(lines: list[dict[str, Any]]) -> tuple[float, str] | None:
    """The unprotected reference's utility on the task (the best setting that claims
    nothing, NotionSpec.claims_privacy: the identity, plain labels) and its mechanism."""
    found = [
        (float(line["utility"]["value"]), line["mechanism"])
        for line in lines
        if line["utility"] is not None
        and known_notion(line["claim"].get("notion"))
        and not notion_spec(line["claim"].get("notion")).claims_privacy
    ]
    return max(found) if found else None


def _floor_rule(
    chance: float | None, reference: tuple[float, str] | None, floor: float | None
) -> str:
    """The utility floor in words, with its numbers, for the page."""
    if floor is None:
        return ""
    if reference is None or reference[0] <= chance:  # type: ignore[operator]
        return f"above chance ({floor:.3g}): the task has no unprotected reference above it"
    value, mechanism = reference
    return (
        f"above chance {chance:.3g} + {UTILITY_FLOOR_SHARE:g} × (the unprotected "
        f"{mechanism}'s {value:.3g} − chance) = {floor:.3g}"
    )


def _mia_records(rows: list[dict[str, Any]]) -> int | None:
    """Non-members per seed of the task's membership attacks (as many as members), or None."""
    counts = [r["metrics"]["mia_records"]["value"] for r in rows if "mia_records" in r["metrics"]]
    return int(min(counts)) if counts else None


def _chance_line(rows: list[dict[str, Any]], score: str) -> dict[str, Any] | None:
    """The row a reader measures every setting against: the best constant predictor's
    utility and the attack score of the data-independent prior guess (aux mean, modal id)."""
    utility, prior = task_chance(rows), task_prior_baseline(rows, score)
    if utility is None and prior is None:
        return None
    return {
        "utility": None if utility is None else f"{utility:.3g}",
        "attack": _cell(prior),
    }
