"""The verdict rules of the reproduction tables (bench.report.reproduce.reproduction), computed
from a paper's values and the bench rows that answer them, never typed in.

Three things decide a verdict: the cell's comparability class (only like-for-like cells,
`same` or `scaled`, get a level verdict; a `substitute` cell gets a direction verdict at
most), the row's flags (at chance, constant predictor, below the prior guess's floor, a
bound estimate failing, a refuted privacy claim) and the paper's own contrasts (trend
checks, each a set of cell pairs the paper orders). A flag is never hidden behind a
verdict: a row that says nothing (at chance, constant, below the floor) makes its cell and
every trend check it is in inconclusive, and a row whose claim is refuted or whose bound
estimate fails turns "reproduced" into "value matched (claim refuted)" and the like, so
that a matched number is never read as a reproduced result.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product
from typing import Any

from bench.metrics import METRICS

SAME, SCALED, SUBSTITUTE = "same", "scaled", "substitute"
CLASSES = (SAME, SCALED, SUBSTITUTE)
COMPARABLE = (SAME, SCALED)

# Cell verdicts: like-for-like cells ...
REPRODUCED = "reproduced"
BOTH_AT_CHANCE = "both at chance"
INCONCLUSIVE = "inconclusive"
TREND = "trend reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_RUN = "not run"
# ... whose row carries a flag that voids the match: what was matched, then what the flag
# means (the paper's value inside the CI of a release whose privacy claim bench refutes is
# not a reproduction of the paper's result) ...
VALUE_MATCHED_REFUTED = "value matched (claim refuted)"
VALUE_MATCHED_ESTIMATE = "value matched (estimate fails)"
TREND_MATCHED_REFUTED = "trend matched (claim refuted)"
TREND_MATCHED_ESTIMATE = "trend matched (estimate fails)"
# ... and substitute cells (another dataset, model or task: direction only).
DIRECTION_KEPT = "direction kept"
DIRECTION_SMALLER = "direction kept (smaller)"
DIRECTION_LARGER = "direction kept (larger)"
DIRECTION_KEPT_REFUTED = "direction kept (claim refuted)"
DIRECTION_KEPT_ESTIMATE = "direction kept (estimate fails)"
DIRECTION_REVERSED = "direction reversed"
DIRECTION_UNCLEAR = "direction unclear"
NO_DIRECTION = "no direction check"
LEVEL_VERDICTS = (
    REPRODUCED,
    VALUE_MATCHED_REFUTED,
    VALUE_MATCHED_ESTIMATE,
    BOTH_AT_CHANCE,
    INCONCLUSIVE,
    TREND,
    TREND_MATCHED_REFUTED,
    TREND_MATCHED_ESTIMATE,
    NOT_REPRODUCED,
    NOT_RUN,
)
DIRECTION_VERDICTS = (
    DIRECTION_KEPT,
    DIRECTION_SMALLER,
    DIRECTION_LARGER,
    DIRECTION_KEPT_REFUTED,
    DIRECTION_KEPT_ESTIMATE,
    DIRECTION_REVERSED,
    DIRECTION_UNCLEAR,
    NO_DIRECTION,
    NOT_RUN,
)
VERDICTS = (*LEVEL_VERDICTS, *DIRECTION_VERDICTS[:-1])
# Verdicts that stand for a kept order (a match); only the first of each family is unflagged.
KEPT_ORDER = (
    TREND,
    TREND_MATCHED_REFUTED,
    TREND_MATCHED_ESTIMATE,
    DIRECTION_KEPT,
    DIRECTION_SMALLER,
    DIRECTION_LARGER,
    DIRECTION_KEPT_REFUTED,
    DIRECTION_KEPT_ESTIMATE,
)

# Trend-check verdicts.
TREND_KEPT = "trend reproduced"
TREND_REVERSED = "trend reversed"
TREND_NOT = "trend not reproduced"
TREND_VERDICTS = (
    TREND_KEPT,
    TREND_MATCHED_REFUTED,
    TREND_MATCHED_ESTIMATE,
    DIRECTION_KEPT,
    DIRECTION_SMALLER,
    DIRECTION_LARGER,
    DIRECTION_KEPT_REFUTED,
    DIRECTION_KEPT_ESTIMATE,
    TREND_REVERSED,
    TREND_NOT,
    DIRECTION_UNCLEAR,
    INCONCLUSIVE,
    NOT_RUN,
)

EFFECT_FACTOR = 2.0  # bench's effect within [1/2, 2] x the paper's
PAPER_AT_CHANCE = 0.02  # a paper value within this (absolute) of chance or the prior floor

# Row flags, in the order the tables show them.
AT_CHANCE = "at chance"
CONSTANT = "constant predictor"
BELOW_FLOOR = "below prior floor"
ESTIMATE_FAILS = "estimate fails"
UNRELIABLE = "privacy claim refuted"
FLAGS = (AT_CHANCE, CONSTANT, BELOW_FLOOR, ESTIMATE_FAILS, UNRELIABLE)
UNINFORMATIVE = (AT_CHANCE, CONSTANT, BELOW_FLOOR)
# Flags that leave the number meaningful but void what it would show, with the verdicts a
# match on such a row gets (value, trend, direction), strongest first.
VOIDING = {
    UNRELIABLE: (VALUE_MATCHED_REFUTED, TREND_MATCHED_REFUTED, DIRECTION_KEPT_REFUTED),
    ESTIMATE_FAILS: (VALUE_MATCHED_ESTIMATE, TREND_MATCHED_ESTIMATE, DIRECTION_KEPT_ESTIMATE),
}
FLAG_MEANING = {
    UNRELIABLE: (
        "bench refutes the row's privacy claim (its audit or its own definition check), so "
        "the number is that of a release that does not meet its stated guarantee"
    ),
    ESTIMATE_FAILS: (
        "the row's bound rests on an estimate that an attack beats beyond the check's own "
        "error, so the number does not come with the bound it is reported under"
    ),
}

RULES = {
    REPRODUCED: (
        "a like-for-like cell (same or scaled setting) whose paper value lies inside the bench "
        "row's 95% CI (widened by the cell's stated relative tolerance, 0 unless the paper "
        "states a limit or an approximate value), on a row with no flag at all, with a CI "
        "half-width below the distance from the paper's value to chance (or the prior floor) "
        "and to every other paper value in its trend checks."
    ),
    VALUE_MATCHED_REFUTED: (
        "as reproduced, but bench refutes the row's privacy claim: the paper's number is "
        "matched by a release that does not meet the guarantee it is reported under."
    ),
    VALUE_MATCHED_ESTIMATE: (
        "as reproduced, but the row's bound rests on an estimate an attack beats: the number "
        "is matched without the bound it is reported under."
    ),
    BOTH_AT_CHANCE: (
        "the paper's value and the bench row are both at chance (utility within 0.02 of the "
        "best constant predictor) or both no better than the attacker's prior guess: they "
        "agree on knowing nothing, which reproduces no effect."
    ),
    INCONCLUSIVE: (
        "the paper's value is inside the CI but the CI is too wide to tell it from chance or "
        "from its neighbours, or the row is at chance, constant or below the prior floor "
        "while the paper's value is not. A trend check is inconclusive when a row it uses is "
        "at chance, constant or below the prior floor, or when its contrast holds by "
        "construction (stated with the check)."
    ),
    TREND: (
        "outside the CI, on an unflagged row, and every trend check the cell is in is "
        "reproduced: each pair of cells the paper orders is ordered the same way by bench with "
        "disjoint CIs, on rows none of which is flagged, and bench's mean difference over "
        "those pairs is within 1/2x to 2x of the paper's (the ratio is reported)."
    ),
    TREND_MATCHED_REFUTED: (
        "the order and size of a trend check are matched, but a row it uses has a privacy "
        "claim bench refutes."
    ),
    TREND_MATCHED_ESTIMATE: (
        "the order and size of a trend check are matched, but a row it uses has a bound "
        "estimate an attack beats."
    ),
    NOT_REPRODUCED: "answered like-for-like, and none of the above.",
    NOT_RUN: (
        "no suite, no leaderboard, no matching row or no such metric; a cell that never ran "
        "is not run in every count."
    ),
    DIRECTION_KEPT: (
        "a substitute cell (another dataset, model or task) gets no level verdict: direction "
        "kept when every trend check it is in has each paper-ordered pair ordered the same way "
        "by bench with disjoint CIs, on unflagged rows, and bench's effect within 1/2x to 2x "
        "of the paper's (where the paper prints no values, the size is not compared)."
    ),
    DIRECTION_SMALLER: (
        "every pair ordered as the paper orders it, but bench's effect more than 2x smaller "
        "than the paper's (the factor is given)."
    ),
    DIRECTION_LARGER: (
        "every pair ordered as the paper orders it, but bench's effect more than 2x larger "
        "than the paper's (the factor is given)."
    ),
    DIRECTION_KEPT_REFUTED: (
        "every pair ordered as the paper orders it, but a row the check uses has a privacy "
        "claim bench refutes."
    ),
    DIRECTION_KEPT_ESTIMATE: (
        "every pair ordered as the paper orders it, but a row the check uses has a bound "
        "estimate an attack beats."
    ),
    DIRECTION_REVERSED: (
        "a substitute cell in a check where bench orders some pair the other way, CIs disjoint."
    ),
    DIRECTION_UNCLEAR: (
        "a substitute cell in a check with some pair whose CIs overlap, or in a check that is "
        "inconclusive."
    ),
    NO_DIRECTION: "a substitute cell in no trend check: no verdict at all.",
}


@dataclass(frozen=True)
class Trend:
    """A contrast the paper states: cells in tiers from the paper's highest value to its
    lowest, every (higher tier, lower tier) pair one the paper orders; or, where the paper
    orders cells only pairwise (one method above another at each setting), the explicit
    (higher, lower) pairs. `by_construction`: why the contrast holds whatever the data (then
    no order bench finds is evidence of it), empty when it does not."""

    id: str
    source: str
    claim: str
    tiers: tuple[tuple[str, ...], ...] = ()
    explicit: tuple[tuple[str, str], ...] = ()
    by_construction: str = ""

    def pairs(self) -> list[tuple[str, str]]:
        """(higher, lower) cell-id pairs the paper orders."""
        if self.explicit:
            return list(self.explicit)
        out: list[tuple[str, str]] = []
        for i, upper in enumerate(self.tiers):
            for lower in self.tiers[i + 1 :]:
                out += list(product(upper, lower))
        return out

    def cell_ids(self) -> list[str]:
        """Every cell the check uses, in the order it names them."""
        if self.explicit:
            return list(dict.fromkeys(c for pair in self.explicit for c in pair))
        return [c for tier in self.tiers for c in tier]


# ------------------------------------------------------------------------ row flags


def reference_level(metric: str, row: dict[str, Any]) -> float | None:
    """What knowing nothing scores on `metric` for this row: the best constant predictor
    (accuracy: the row's `chance`; AUC: 0.5), or the prior guess's score for an attack metric
    (`<metric>_prior`); None where bench records none."""
    metrics = row["metrics"]
    if row["attack"] is None:
        if metric == "auc":
            return 0.5
        entry = metrics.get("chance")
        return None if entry is None or metric != "accuracy" else float(entry["value"])
    entry = metrics.get(f"{metric}_prior")
    return None if entry is None else float(entry["value"])


def attacker_wants_low(metric: str) -> bool:
    """For an attack metric: whether a lower value is a stronger attack (mse, l1, l2)."""
    return METRICS[metric].better == "higher" if metric in METRICS else False


def row_flags(metric: str, row: dict[str, Any]) -> list[str]:
    """The row's flags for the cell's metric (see FLAGS)."""
    flags: list[str] = []
    value = row["metrics"][metric]
    level = reference_level(metric, row)
    utility = metric in METRICS and METRICS[metric].kind == "utility"
    if row["attack"] is None and utility:  # chance speaks of the utility, not a cost column
        chance = row.get("at_chance") and metric == "accuracy"
        if chance or (level is not None and float(value["ci"][0]) <= level):
            flags.append(AT_CHANCE)
        if row.get("constant_predictor") and metric == "accuracy":  # AUC ranks the scores
            flags.append(CONSTANT)
    elif level is not None:
        low = attacker_wants_low(metric)
        if (float(value["ci"][1]) >= level) if low else (float(value["ci"][0]) <= level):
            flags.append(BELOW_FLOOR)
    if row["attack"] is not None and _estimate_fails(row):
        flags.append(ESTIMATE_FAILS)
    if row.get("unreliable"):
        flags.append(UNRELIABLE)
    return flags


def _estimate_fails(row: dict[str, Any]) -> bool:
    """An attack row whose bound check rests on an estimate and fails beyond its error."""
    from bench.report.board.overview import bound_broken, bound_of

    basis = bound_of(row).get("basis")
    notion = (row.get("guarantee") or {}).get("notion")
    return basis == "estimate" and bound_broken(row["metrics"].get("bound_validity"), notion)


def paper_at_level(
    paper: float, metric: str, attack: bool, level: float | None, rel_tolerance: float = 0.0
) -> bool:
    """Whether the paper's own value is at chance (utility within PAPER_AT_CHANCE of it or
    below) or no better for the attacker than the prior guess (within the cell's stated
    tolerance: "converges to tau^2" is a claim of reaching the prior's score)."""
    if level is None:
        return False
    if not attack:
        return paper <= level + PAPER_AT_CHANCE
    slack = rel_tolerance * abs(paper)
    return paper + slack >= level if attacker_wants_low(metric) else paper - slack <= level


# ------------------------------------------------------------------------ level verdicts


def half_width(answer: dict[str, Any]) -> float:
    lo, hi = answer["ci"]
    return (float(hi) - float(lo)) / 2


def inside(paper: float, answer: dict[str, Any], rel_tolerance: float) -> bool:
    lo, hi = answer["ci"]
    slack = rel_tolerance * abs(paper)
    return lo - slack <= paper <= hi + slack


def voiding_flag(flags: list[str] | set[str]) -> str | None:
    """The strongest flag among `flags` that voids a match (a refuted claim before a failing
    estimate), or None."""
    return next((f for f in VOIDING if f in flags), None)


def flag_meaning(flag: str) -> str:
    """What a voiding flag means for a matched number, as a clause."""
    return FLAG_MEANING[flag]


def level_verdict(
    paper: float, answer: dict[str, Any] | None, rel_tolerance: float, neighbours: list[float]
) -> tuple[str, str]:
    """(verdict, why) for a like-for-like cell before trend checks: reproduced (or value
    matched, when the row's claim is refuted or its estimate fails), both at chance,
    inconclusive, not reproduced or not run. `neighbours`: the other paper values of the
    cell's trend checks, which a reproducing CI must also tell apart."""
    if answer is None:
        return NOT_RUN, ""
    flags = set(answer["flags"]) & set(UNINFORMATIVE)
    level = answer.get("level")
    paper_uninformative = paper_at_level(
        paper, answer["metric"], answer["attack"], level, rel_tolerance
    )
    if flags and paper_uninformative:
        return BOTH_AT_CHANCE, "paper and row both at chance or the prior floor"
    if not inside(paper, answer, rel_tolerance):
        return NOT_REPRODUCED, "paper value outside the CI"
    if flags:
        return INCONCLUSIVE, f"row {', '.join(sorted(flags))}; the paper's value is not"
    width = half_width(answer)
    if level is not None and width >= abs(paper - level):
        return INCONCLUSIVE, (
            f"CI half-width {width:.3g} not below the paper's distance to chance / prior "
            f"floor {abs(paper - level):.3g}"
        )
    close = [abs(paper - v) for v in neighbours if v != paper]
    if close and width >= min(close):
        return INCONCLUSIVE, (
            f"CI half-width {width:.3g} not below the distance {min(close):.3g} to the next "
            "paper value of its trend checks"
        )
    void = voiding_flag(answer["flags"])
    if void is not None:
        return VOIDING[void][0], f"the paper's value is inside the CI, but {flag_meaning(void)}"
    return REPRODUCED, ""


# ------------------------------------------------------------------------ trend checks


def size_words(ratio: float) -> str:
    """bench's effect against the paper's as a factor, e.g. "20x smaller" for a ratio of
    0.05, "4.8x larger" for 4.83."""
    if ratio >= 1:
        return f"{ratio:.2g}x larger"
    return f"{1 / ratio:.2g}x smaller"


def _pair_counts(
    pairs: list[tuple[str, str]], paper: dict[str, float], answers: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Pairs kept / reversed / not separated by the CIs, and the mean differences over the
    pairs (the paper's None where it prints no values) and their ratio."""
    kept = reversed_ = 0
    paper_diff = bench_diff = 0.0
    for high, low in pairs:
        a, b = answers[high], answers[low]
        if a["ci"][0] > b["ci"][1]:
            kept += 1
        elif a["ci"][1] < b["ci"][0]:
            reversed_ += 1
        paper_diff += paper[high] - paper[low]
        bench_diff += float(a["value"]) - float(b["value"])
    printed = not math.isnan(paper_diff)
    return {
        "kept": kept,
        "reversed": reversed_,
        "unseparated": len(pairs) - kept - reversed_,
        "paper_effect": paper_diff / len(pairs) if printed else None,
        "bench_effect": bench_diff / len(pairs),
        "ratio": bench_diff / paper_diff if printed and paper_diff else None,
    }


def _flag_cells(trend: Trend, answers: dict[str, dict[str, Any]]) -> dict[str, list[str]]:
    """Flag -> the cells of the check whose row carries it, in FLAGS order."""
    out: dict[str, list[str]] = {}
    for flag in FLAGS:
        cells = [c for c in trend.cell_ids() if flag in answers[c]["flags"]]
        if cells:
            out[flag] = cells
    return out


def _order_verdict(counts: dict[str, Any], pairs: int, direction_only: bool) -> tuple[str, str]:
    """The verdict of a check's order and size alone, before its rows' flags."""
    reversed_, kept, ratio = counts["reversed"], counts["kept"], counts["ratio"]
    if reversed_:
        return TREND_REVERSED, f"{reversed_} of {pairs} pairs reversed"
    if kept < pairs:
        verdict = DIRECTION_UNCLEAR if direction_only else TREND_NOT
        return verdict, f"{pairs - kept} of {pairs} pairs with overlapping CIs"
    if ratio is None:
        if direction_only:
            return DIRECTION_KEPT, "the paper prints no values: the size is not compared"
        return TREND_NOT, "no effect to compare the size with"
    within = 1 / EFFECT_FACTOR <= ratio <= EFFECT_FACTOR
    if direction_only:
        if within:
            return DIRECTION_KEPT, ""
        verdict = DIRECTION_LARGER if ratio > EFFECT_FACTOR else DIRECTION_SMALLER
        return verdict, f"bench's effect {size_words(ratio)} than the paper's"
    if not within:
        return TREND_NOT, f"effect ratio {ratio:.2g} outside [1/2, 2]"
    return TREND_KEPT, ""


def trend_result(
    trend: Trend,
    paper: dict[str, float],
    answers: dict[str, dict[str, Any] | None],
    direction_only: bool,
) -> dict[str, Any]:
    """A trend check's verdict, with its pairs kept / reversed / not separated, the paper's
    and bench's mean difference over its pairs and their ratio, and every flag of the rows
    it uses (`flags`: flag -> cells). A check whose rows say nothing (at chance, constant,
    below the prior floor) or whose contrast holds by construction is inconclusive; a kept
    order on a row whose claim is refuted or whose estimate fails is a qualified match."""
    pairs = trend.pairs()
    missing = [c for c in trend.cell_ids() if answers.get(c) is None]
    out: dict[str, Any] = {
        "id": trend.id,
        "source": trend.source,
        "claim": trend.claim,
        "cells": trend.cell_ids(),
        "pairs": len(pairs),
        "direction_only": direction_only,
        "by_construction": trend.by_construction,
    }
    if not pairs:
        return {**out, "flags": {}, "verdict": NOT_RUN, "why": "no pair of rows to compare"}
    if missing:
        return {**out, "flags": {}, "verdict": NOT_RUN, "why": f"{len(missing)} cell(s) not run"}
    answered = {c: a for c, a in answers.items() if a is not None}
    counts = _pair_counts(pairs, paper, answered)
    flags = _flag_cells(trend, answered)
    out.update(counts, flags=flags)
    verdict, why = _order_verdict(counts, len(pairs), direction_only)
    silent = [f for f in UNINFORMATIVE if f in flags]
    if trend.by_construction:
        return {
            **out,
            "verdict": INCONCLUSIVE,
            "why": f"holds by construction: {trend.by_construction}",
        }
    if silent:
        where = "; ".join(f"{', '.join(flags[f])} {f}" for f in silent)
        return {**out, "verdict": INCONCLUSIVE, "why": f"{where}; the order alone: {verdict}"}
    void = voiding_flag(list(flags))
    if void is not None and verdict in KEPT_ORDER:
        qualified = VOIDING[void][2] if direction_only else VOIDING[void][1]
        detail = f"{', '.join(flags[void])}: {flag_meaning(void)}"
        verdict, why = qualified, f"{why}; {detail}" if why else detail
    elif flags:  # a reversal or an overlap on flagged rows: the flags are said all the same
        where = "; ".join(f"{', '.join(cells)} {flag}" for flag, cells in flags.items())
        why = f"{why}; flagged rows: {where}" if why else f"flagged rows: {where}"
    return {**out, "verdict": verdict, "why": why}


# Substitute cells take the least favourable verdict of their checks, in this order.
_SUBSTITUTE_ORDER = (
    DIRECTION_REVERSED,
    DIRECTION_UNCLEAR,
    DIRECTION_KEPT_REFUTED,
    DIRECTION_KEPT_ESTIMATE,
    DIRECTION_SMALLER,
    DIRECTION_LARGER,
    DIRECTION_KEPT,
)
_AS_DIRECTION = {
    TREND_REVERSED: DIRECTION_REVERSED,
    TREND_NOT: DIRECTION_UNCLEAR,
    INCONCLUSIVE: DIRECTION_UNCLEAR,
    TREND_KEPT: DIRECTION_KEPT,
    TREND_MATCHED_REFUTED: DIRECTION_KEPT_REFUTED,
    TREND_MATCHED_ESTIMATE: DIRECTION_KEPT_ESTIMATE,
}


def substitute_verdict(results: list[dict[str, Any]], answered: bool) -> str:
    """A substitute cell's verdict from the trend checks it is in: the least favourable of
    theirs (reversed, then unclear or inconclusive, then a kept order on a flagged row, then
    a kept order of another size, then kept)."""
    if not answered:
        return NOT_RUN
    if not results:
        return NO_DIRECTION
    verdicts = {_AS_DIRECTION.get(r["verdict"], r["verdict"]) for r in results}
    return next(v for v in _SUBSTITUTE_ORDER if v in verdicts)


def cell_trend_verdict(results: list[dict[str, Any]]) -> str | None:
    """The verdict a like-for-like cell outside its CI takes from its trend checks when every
    one of them kept the paper's order and size: trend reproduced, or a qualified match when
    a check's row is flagged (refuted before estimate); None otherwise."""
    if not results or not all(
        r["verdict"] in (TREND_KEPT, TREND_MATCHED_REFUTED, TREND_MATCHED_ESTIMATE) for r in results
    ):
        return None
    verdicts = {r["verdict"] for r in results}
    for qualified in (TREND_MATCHED_REFUTED, TREND_MATCHED_ESTIMATE):
        if qualified in verdicts:
            return qualified
    return TREND
