"""The verdict rules of the reproduction tables (bench.report.reproduce.reproduction), computed
from a
paper's values and the bench rows that answer them, never typed in.

Three things decide a verdict: the cell's comparability class (only like-for-like cells,
`same` or `scaled`, get a level verdict; a `substitute` cell gets a direction verdict at
most), the row's flags (at chance, constant predictor, below the prior guess's floor, a
bound estimate failing, a refuted privacy claim) and the paper's own contrasts (trend
checks, each a set of cell pairs the paper orders).
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
# ... and substitute cells (another dataset, model or task: direction only).
DIRECTION_KEPT = "direction kept"
DIRECTION_REVERSED = "direction reversed"
DIRECTION_UNCLEAR = "direction unclear"
NO_DIRECTION = "no direction check"
LEVEL_VERDICTS = (REPRODUCED, BOTH_AT_CHANCE, INCONCLUSIVE, TREND, NOT_REPRODUCED, NOT_RUN)
DIRECTION_VERDICTS = (DIRECTION_KEPT, DIRECTION_REVERSED, DIRECTION_UNCLEAR, NO_DIRECTION, NOT_RUN)
VERDICTS = (*LEVEL_VERDICTS, *DIRECTION_VERDICTS[:-1])

# Trend-check verdicts.
TREND_KEPT = "trend reproduced"
TREND_REVERSED = "trend reversed"
TREND_NOT = "trend not reproduced"
TREND_VERDICTS = (TREND_KEPT, DIRECTION_KEPT, TREND_REVERSED, TREND_NOT, DIRECTION_UNCLEAR, NOT_RUN)

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

RULES = {
    REPRODUCED: (
        "a like-for-like cell (same or scaled setting) whose paper value lies inside the bench "
        "row's 95% CI (widened by the cell's stated relative tolerance, 0 unless the paper "
        "states a limit or an approximate value), on a row neither at chance, a constant "
        "predictor nor below the prior guess's floor, with a CI half-width below the distance "
        "from the paper's value to chance (or the prior floor) and to every other paper value "
        "in its trend checks."
    ),
    BOTH_AT_CHANCE: (
        "the paper's value and the bench row are both at chance (utility within 0.02 of the "
        "best constant predictor) or both no better than the attacker's prior guess: they "
        "agree on knowing nothing, which reproduces no effect."
    ),
    INCONCLUSIVE: (
        "the paper's value is inside the CI but the CI is too wide to tell it from chance or "
        "from its neighbours, or the row is at chance, constant or below the prior floor "
        "while the paper's value is not."
    ),
    TREND: (
        "outside the CI, on an unflagged row, and every trend check the cell is in is "
        "reproduced: each pair of cells the paper orders is ordered the same way by bench with "
        "disjoint CIs, and bench's mean difference over those pairs is within 1/2x to 2x of "
        "the paper's (the ratio is reported)."
    ),
    NOT_REPRODUCED: "answered like-for-like, and none of the above.",
    NOT_RUN: "no suite, no leaderboard, no matching row or no such metric.",
    DIRECTION_KEPT: (
        "a substitute cell (another dataset, model or task) gets no level verdict: direction "
        "kept when every trend check it is in has each paper-ordered pair ordered the same way "
        "by bench with disjoint CIs (no size factor)."
    ),
    DIRECTION_REVERSED: (
        "a substitute cell in a check where bench orders some pair the other way, CIs disjoint."
    ),
    DIRECTION_UNCLEAR: "a substitute cell in a check with some pair whose CIs overlap.",
    NO_DIRECTION: "a substitute cell in no trend check: no verdict at all.",
}


@dataclass(frozen=True)
class Trend:
    """A contrast the paper states: cells in tiers from the paper's highest value to its
    lowest; every (higher tier, lower tier) pair is one the paper orders."""

    id: str
    source: str
    claim: str
    tiers: tuple[tuple[str, ...], ...]

    def pairs(self) -> list[tuple[str, str]]:
        """(higher, lower) cell-id pairs the paper orders."""
        out: list[tuple[str, str]] = []
        for i, upper in enumerate(self.tiers):
            for lower in self.tiers[i + 1 :]:
                out += list(product(upper, lower))
        return out

    def cell_ids(self) -> list[str]:
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


def level_verdict(
    paper: float, answer: dict[str, Any] | None, rel_tolerance: float, neighbours: list[float]
) -> tuple[str, str]:
    """(verdict, why) for a like-for-like cell before trend checks: reproduced, both at
    chance, inconclusive, not reproduced or not run. `neighbours`: the other paper values
    of the cell's trend checks, which a reproducing CI must also tell apart."""
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
    return REPRODUCED, ""


# ------------------------------------------------------------------------ trend checks


def trend_result(
    trend: Trend,
    paper: dict[str, float],
    answers: dict[str, dict[str, Any] | None],
    direction_only: bool,
) -> dict[str, Any]:
    """A trend check's verdict, with its pairs kept / reversed / not separated, the paper's
    and bench's mean difference over its pairs and their ratio."""
    pairs = trend.pairs()
    missing = [c for c in trend.cell_ids() if answers.get(c) is None]
    out: dict[str, Any] = {
        "id": trend.id,
        "source": trend.source,
        "claim": trend.claim,
        "cells": trend.cell_ids(),
        "pairs": len(pairs),
        "direction_only": direction_only,
    }
    if missing:
        return {**out, "verdict": NOT_RUN, "why": f"{len(missing)} cell(s) not run"}
    kept = reversed_ = 0
    paper_diff = bench_diff = 0.0
    for high, low in pairs:
        a, b = answers[high], answers[low]
        assert a is not None and b is not None
        if a["ci"][0] > b["ci"][1]:
            kept += 1
        elif a["ci"][1] < b["ci"][0]:
            reversed_ += 1
        paper_diff += paper[high] - paper[low]
        bench_diff += float(a["value"]) - float(b["value"])
    printed = not math.isnan(paper_diff)
    ratio = bench_diff / paper_diff if printed and paper_diff else None
    out.update(
        kept=kept,
        reversed=reversed_,
        unseparated=len(pairs) - kept - reversed_,
        paper_effect=paper_diff / len(pairs) if printed else None,
        bench_effect=bench_diff / len(pairs),
        ratio=ratio,
    )
    if reversed_:
        verdict, why = TREND_REVERSED, f"{reversed_} of {len(pairs)} pairs reversed"
    elif kept < len(pairs):
        verdict = DIRECTION_UNCLEAR if direction_only else TREND_NOT
        why = f"{len(pairs) - kept} of {len(pairs)} pairs with overlapping CIs"
    elif direction_only:
        verdict, why = DIRECTION_KEPT, ""
    elif ratio is None or not 1 / EFFECT_FACTOR <= ratio <= EFFECT_FACTOR:
        verdict, why = TREND_NOT, f"effect ratio {ratio:.2g} outside [1/2, 2]"
    else:
        verdict, why = TREND_KEPT, ""
    return {**out, "verdict": verdict, "why": why}


def substitute_verdict(results: list[dict[str, Any]], answered: bool) -> str:
    """A substitute cell's verdict from the trend checks it is in."""
    if not answered:
        return NOT_RUN
    if not results:
        return NO_DIRECTION
    verdicts = {r["verdict"] for r in results}
    if TREND_REVERSED in verdicts:
        return DIRECTION_REVERSED
    if verdicts <= {DIRECTION_KEPT, TREND_KEPT}:
        return DIRECTION_KEPT
    return DIRECTION_UNCLEAR
