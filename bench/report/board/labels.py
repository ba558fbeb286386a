"""Labels shared by the Markdown and HTML views: a guarantee in short form, attack column
labels, a task's utility metric, rows grouped by task."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from bench.core.errors import BenchError
from bench.core.hashing import canonical_json
from bench.metrics import METRICS
from bench.metrics.membership import SPECS as _MIA_SPECS  # registers the membership metrics
from bench.metrics.membership import dp_membership_bound
from bench.plugin.notions import UNPROTECTED, notion_spec, privacy_levels

_PARAM_SYMBOLS = {"eps": "ε", "delta": "δ", "radius": "r", "R": "R"}


def notion_words(notion: str | None) -> str:
    """A privacy notion as a reader names it, e.g. "iDP" for "idp" (its NotionSpec); the
    bare name for a notion no installed family registers (a plug-in's old board)."""
    try:
        return notion_spec(notion).words
    except BenchError:
        return str(notion)


_PARAM_ORDER = ("eps", "delta", "radius", "R")


# A guarantee key by which a mechanism declares that a setting's claim does not hold (a
# diagnostic setting, e.g. a published calibration that is known to under-noise), with the
# reason as its value. Such settings are shown, audited and labelled, never ranked.
NOT_PRIVATE = "not_private"


def not_private(row: dict[str, Any] | None) -> str:
    """The reason a row's declared claim does not hold, or "" when it makes a valid one."""
    return str(((row or {}).get("guarantee") or {}).get(NOT_PRIVATE) or "")


def describe_guarantee(guarantee: dict[str, Any]) -> str:
    """A guarantee in words, e.g. "IP (ε=1, δ=1e-05, r=0.1) over l2/input"; a claim declared
    void reads "NOT PRIVATE (claimed: ...): reason"."""
    notion = guarantee.get("notion", UNPROTECTED)
    if notion in (None, UNPROTECTED):
        return UNPROTECTED
    void = guarantee.get(NOT_PRIVATE)
    if void:
        rest = {k: v for k, v in guarantee.items() if k != NOT_PRIVATE}
        return f"NOT PRIVATE (claimed: {describe_guarantee(rest)}): {void}"
    # "bound": what an attack row's check rests on; "tuning": how the model was trained.
    skip = ("notion", "distance", "bound", "tuning")
    names = [k for k in guarantee if k not in skip and guarantee[k] is not None]
    names.sort(key=lambda k: (_PARAM_ORDER.index(k) if k in _PARAM_ORDER else len(_PARAM_ORDER), k))
    symbols = {**_PARAM_SYMBOLS, **{lv.param: lv.symbol for lv in privacy_levels()}}
    params = [f"{symbols.get(k, k)}={_fmt_short(guarantee[k])}" for k in names]
    text = notion_words(notion)
    if params:
        text += f" ({', '.join(params)})"
    if guarantee.get("distance"):
        text += f" over {guarantee['distance']}"
    return text


def membership_claim(guarantee: dict[str, Any]) -> str:
    """What a setting's membership-attack results are held against, in a few words: the
    ceiling of a DP claim over training records, else that they test no claim (an iDP claim
    bounds the answers for one training set against it minus one record, no game over a
    population; label DP protects labels; "none" claims nothing;
    bench.metrics.membership.dp_membership_bound)."""
    notion = guarantee.get("notion", UNPROTECTED)
    try:
        spec = notion_spec(notion)
    except BenchError:
        return "measured, no claim"
    if dp_membership_bound(guarantee) is not None:
        return f"held against the {spec.words} ceiling"
    if spec.membership_ceiling:  # DP over something other than records: training labels
        return f"measured, no ceiling: label {spec.words}"
    if spec.neighbours == "training set":  # a claim about one training set, no population
        return f"measured, not a test of the {spec.words} claim"
    return "measured, no claim"


def _fmt_short(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def params_text(params: dict[str, Any]) -> str:
    """Parameters as sorted "k=v" pairs, floats to four significant digits."""
    return ", ".join(f"{k}={_fmt_short(v)}" for k, v in sorted(params.items()))


def attack_labels(rows: list[dict[str, Any]]) -> dict[tuple[str, str], str]:
    """Column label per (attack, params JSON): the bare name when a task runs the attack with
    one parameter set, else the name plus the parameters that differ, e.g. "map (lam=0.1)"."""
    by_name: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for r in rows:
        if is_attack(r):
            by_name[r["attack"]][canonical_json(r.get("attack_params") or {})] = (
                r.get("attack_params") or {}
            )
    labels = {}
    for name, variants in by_name.items():
        for key, params in variants.items():
            varying = {
                k: v
                for k, v in params.items()
                if any(other.get(k) != v for other in variants.values())
            }
            labels[(name, key)] = f"{name} ({params_text(varying)})" if varying else name
    return labels


def attack_label_of(row: dict[str, Any], labels: dict[tuple[str, str], str]) -> str:
    """An attack row's label among `labels` (`attack_labels` of its task's rows)."""
    return labels[(row["attack"], canonical_json(row.get("attack_params") or {}))]


def utility_metric_of(rows: list[dict[str, Any]]) -> str | None:
    """The task's utility metric as seen in its utility rows: accuracy, else auc, else the
    first other metric of kind "utility" (release_rate is shown separately)."""
    names = {n for r in rows if r["attack"] is None for n in r["metrics"]}
    for name in ("accuracy", "auc"):
        if name in names:
            return name
    others = sorted(
        n for n in names if n in METRICS and METRICS[n].kind == "utility" and n != "release_rate"
    )
    return others[0] if others else None


def is_attack(row: dict[str, Any]) -> bool:
    """A row of one real attack (not the utility row, not the worst-case summary)."""
    return row["attack"] not in (None, WORST_CASE)


def rows_by_task(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows grouped by task, each group in leaderboard order (`row_sort_key`)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=row_sort_key):
        out.setdefault(row["task"], []).append(row)
    return out


def safe_name(task: str) -> str:
    """A task name usable as a file name (path separators replaced)."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in task)


def row_sort_key(row: dict[str, Any]) -> tuple[str, str, str, int, str, str]:
    """Deterministic row order: task, mechanism, params, then utility row before attacks."""
    attack = row.get("attack")
    return (
        row["task"],
        row["mechanism"],
        canonical_json(row.get("params") or {}),
        0 if attack is None else 2 if attack == WORST_CASE else 1,
        attack or "",
        canonical_json(row.get("attack_params") or {}),
    )


WORST_CASE = "worst case"


ATTACK_METRICS = ("mse", "psnr", "ssim")
# Membership-inference attack rows (label-only access) carry these instead.
MIA_METRICS = tuple(s.name for s in _MIA_SPECS if s.kind == "privacy")


def attack_metrics_of(rows: list[dict[str, Any]]) -> tuple[str, ...]:
    """The per-attack columns of a task: membership metrics where its attacks infer
    membership (those it holds), else the reconstruction metrics."""
    held = {n for r in rows if is_attack(r) for n in r["metrics"]}
    if "mia_auc" in held:
        return tuple(m for m in MIA_METRICS if m in held)
    return ATTACK_METRICS


COST_METRICS = ("fit_s", "release_ms")


def _config_key(row: dict[str, Any]) -> tuple[str, str]:
    return row["mechanism"], canonical_json(row["params"])


def by_config(rows: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Rows of one task grouped by (mechanism, params), in row order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(_config_key(row), []).append(row)
    return out


def worst_case_entry(
    config_rows: list[dict[str, Any]], metric: str = "mse"
) -> dict[str, Any] | None:
    """The worst-case row's entry for `metric` (the strongest attack's), or None."""
    worst = next((r for r in config_rows if r["attack"] == WORST_CASE), None)
    return worst["metrics"].get(metric) if worst else None


def privacy_label(params: dict[str, Any]) -> str:
    """The privacy parameter of a setting in short form ("ε=2", "1/dFIL=10": the levels
    notions declare, bench.plugin.notions), else ""."""
    for level in privacy_levels():
        if level.param in params:
            return f"{level.symbol}={_fmt_short(params[level.param])}"
    return ""


def mechanism_colours(rows: list[dict[str, Any]]) -> dict[str, str]:
    """One matplotlib colour per mechanism of a task's rows, the same in every plot of the
    task (so a reader matches the scatter with the frontier)."""
    return {m: f"C{i % 10}" for i, m in enumerate(sorted({r["mechanism"] for r in rows}))}


def chance_of(row: dict[str, Any] | None) -> float | None:
    """The utility of the best constant predictor on the labels this utility row was scored
    on (the `chance` metric), or None for rows stored before it was recorded."""
    entry = (row or {}).get("metrics", {}).get("chance")
    return None if entry is None else float(entry["value"])


def at_chance(row: dict[str, Any] | None, utility: str | None) -> bool:
    """Whether a utility row is at or below chance: its utility's 95% CI reaches the best
    constant predictor's score, so the setting serves nothing a constant could not."""
    chance = chance_of(row)
    entry = (row or {}).get("metrics", {}).get(utility or "")
    return chance is not None and entry is not None and float(entry["ci"][0]) <= chance


def task_chance(rows: list[dict[str, Any]]) -> float | None:
    """A task's chance level: the most common `chance` over its utility rows (rows of
    mechanisms that abstain are scored on fewer labels and may differ)."""
    values = [c for r in rows if r["attack"] is None and (c := chance_of(r)) is not None]
    if not values:
        return None
    return max(set(values), key=lambda v: (values.count(v), v))


def task_prior_baseline(rows: list[dict[str, Any]], score: str | None) -> dict[str, Any] | None:
    """The attack score of the task's prior guess (the `prior_baseline_name(score)` entry of
    its worst-case rows): the most common value, as for `task_chance`, since settings of a
    mechanism that abstains score the guess on fewer samples."""
    name = prior_baseline_name(score or "")
    entries = [
        r["metrics"][name]
        for r in rows
        if score and r["attack"] == WORST_CASE and name in r["metrics"]
    ]
    values = [float(e["value"]) for e in entries]
    return max(
        entries, key=lambda e: (values.count(float(e["value"])), float(e["value"])), default=None
    )


def chance_reason(
    row: dict[str, Any], rows: list[dict[str, Any]], utility: str | None
) -> str | None:
    """Why an at-chance utility row is there, read off the task's unprotected reference row
    (guarantee notion "none") among `rows`: the data (the unprotected model is at chance
    too) or the protection (the unprotected model beats chance); None without a reference."""
    if not utility:
        return None
    if (row.get("guarantee") or {}).get("notion") == UNPROTECTED:
        return (
            "the unprotected model does not beat the best constant predictor on this task "
            "(the data limits it): no mechanism serving it can"
        )
    reference = next(
        (
            r
            for r in rows
            if r["attack"] is None
            and (r.get("guarantee") or {}).get("notion") == UNPROTECTED
            and utility in r["metrics"]
        ),
        None,
    )
    if reference is None:
        return None
    value, chance = float(reference["metrics"][utility]["value"]), chance_of(reference)
    against = f"{value:.3g} vs chance {chance:.3g}" if chance is not None else f"{value:.3g}"
    if at_chance(reference, utility):
        return (
            f"the unprotected model on this task is at chance too ({against}): the data limits it"
        )
    return f"the unprotected model scores {against}: the protection costs the difference"


def flag_rows(rows: list[dict[str, Any]], utility: str | None) -> None:
    """Mark each utility row at or below chance with `at_chance: true` (see `at_chance`) and
    its computed `at_chance_reason` (see `chance_reason`), and with `constant_predictor:
    true` where `constant_predictor` says so; give each attack row whose bound check says
    what it rests on a `bound_basis` ("theorem" or "estimate"), so the JSON, Markdown and
    HTML all say it."""
    for row in rows:
        if row["attack"] is None:
            if at_chance(row, utility):
                row["at_chance"] = True
                reason = chance_reason(row, rows, utility)
                if reason:
                    row["at_chance_reason"] = reason
            if constant_predictor(row, utility):
                row["constant_predictor"] = True
        basis = ((row.get("guarantee") or {}).get("bound") or {}).get("basis")
        if basis:
            row["bound_basis"] = basis


def constant_predictor(row: dict[str, Any], utility: str | None) -> bool:
    """Whether a utility row answered as an input-independent predictor on every seed, read
    from the task's declared utility metric: for accuracy, every answer was one class
    (modal_prediction_share 1.0); for AUC, the scores ranked nothing (AUC exactly 0.5 on every
    seed, what a constant score gives). On an AUC task the argmax class says nothing: a
    useful ranker of a rare positive class predicts the majority class everywhere."""
    metrics = row["metrics"]
    if utility == "auc":
        auc = metrics.get("auc")
        return auc is not None and auc["ci"][0] == auc["ci"][1] == 0.5
    modal = metrics.get("modal_prediction_share")
    return modal is not None and modal["ci"][0] >= 1.0


def alternative_scoring(params: dict[str, Any]) -> bool:
    """Whether a setting scores its attacks on transformed inputs (dFIL's `targets` other than
    "raw"): the same mechanism evaluated the way its bound is stated, shown beside the raw
    scoring but never ranked against settings scored on the raw test inputs."""
    return params.get("targets", "raw") != "raw"


def prior_baseline_name(score: str) -> str:
    """The stored prior-guess metric to read `score` against. For "<m>_all" (abstentions
    scored with the prior guess) it is "<m>_prior", scored on the released samples: the
    guess ignores the release, so its expected score is the same on any subset."""
    return f"{score.removesuffix('_all')}_prior"


def varying_params(settings: list[tuple[str, dict[str, Any]]]) -> dict[str, set[str]]:
    """Per mechanism, the parameters whose value differs between its settings in this list:
    what tells one of its rows from another (the rest is the same on all of them)."""
    by_mechanism: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for mechanism, params in settings:
        by_mechanism[mechanism].append(params)
    return {
        mechanism: {
            k
            for k in {k for p in mine for k in p}
            if len({canonical_json(p.get(k)) for p in mine}) > 1
        }
        for mechanism, mine in by_mechanism.items()
    }


def short_setting(mechanism: str, params: dict[str, Any], varying: set[str]) -> str:
    """`mechanism (k=v, ...)` with only the `varying` parameters, or the bare name."""
    shown = {k: v for k, v in params.items() if k in varying}
    return f"{mechanism} ({params_text(shown)})" if shown else mechanism


def score_name_in(metrics: dict[str, Any], score: str) -> str | None:
    """The metric a row holds for the task's attack `score`: the score itself, or for
    "<m>_all" (abstentions scored with the prior guess) on a mechanism that never abstains,
    "<m>", which then counts the same samples."""
    if score in metrics:
        return score
    base = score.removesuffix("_all")
    return base if base != score and base in metrics else None


def setting_order(mechanism: str, params: dict[str, Any]) -> tuple:
    """Mechanism, then parameters with numbers compared as numbers (eps 2 before eps 10)."""
    return (
        mechanism,
        tuple(
            (k, (0, float(v), "") if isinstance(v, int | float) else (1, 0.0, canonical_json(v)))
            for k, v in sorted(params.items())
        ),
    )
