"""The overall privacy-utility frontier of a task: one point per mechanism setting, utility
against the strongest attack's similarity (ssim for images, top1 for discrete inputs),
both with their CIs, and the Pareto-optimal settings marked.

A setting is on the frontier when no other setting has at least its utility and at most its
attack score with one of the two strictly better: the settings a user should choose among.
Settings at chance (utility CI reaching the best constant predictor) are drawn but never on
the frontier: a useless setting is trivially private. Settings whose claim is declared void
(guarantee `not_private`, bench.report.board.labels) are left out altogether: they are not private.
Settings whose claim bench refutes (flagged `unreliable`: an audit above the claim, a beaten
membership ceiling, a broken certificate) are drawn but never on the frontier either: a
claim shown false is no choice to recommend.
Point values decide dominance; the CIs are drawn so a reader sees which gaps are noise.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from bench.core.hashing import canonical_json
from bench.report.board.label_layout import place_labels
from bench.report.board.labels import (
    WORST_CASE,
    alternative_scoring,
    at_chance,
    not_private,
    privacy_label,
    score_name_in,
    short_setting,
    task_chance,
    task_prior_baseline,
    varying_params,
)

# Attack metrics the frontier can use, preferred first; "_all" variants score ⊥ answers
# with the attacker's prior guess, so abstaining mechanisms are compared on every sample.
# Membership inference (label-only access): the strongest attack's ROC AUC.
ATTACK_SCORES = ("ssim_all", "ssim", "top1_all", "top1", "mia_auc")


@dataclass(frozen=True)
class FrontierPoint:
    """One mechanism setting: its utility and its strongest attack's score, with CIs."""

    mechanism: str
    params: dict[str, Any]
    utility: float
    utility_ci: tuple[float, float]
    attack: float
    attack_ci: tuple[float, float]
    attack_source: str
    pareto: bool = False
    above_chance: bool = True
    refuted: bool = False  # the setting is flagged unreliable (bench.report.board.rows)
    short: str = ""  # the mechanism with only the parameters that tell its settings apart

    @property
    def label(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        return f"{self.mechanism} ({shown})" if shown else self.mechanism


def attack_score_of(rows: list[dict[str, Any]]) -> str | None:
    """The attack metric the task's worst-case rows carry, by ATTACK_SCORES preference."""
    names = {n for r in rows if r["attack"] == WORST_CASE for n in r["metrics"]}
    return next((m for m in ATTACK_SCORES if m in names), None)


def _dominates(a: FrontierPoint, b: FrontierPoint) -> bool:
    return (
        a.utility >= b.utility
        and a.attack <= b.attack
        and (a.utility > b.utility or a.attack < b.attack)
    )


def frontier_points(
    rows: list[dict[str, Any]], utility: str | None, score: str | None = None
) -> tuple[str | None, list[FrontierPoint]]:
    """(attack metric used, one point per setting of a task's rows with Pareto flags)."""
    score = score or attack_score_of(rows)
    if utility is None or score is None:
        return score, []
    by_config: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in rows:
        key = (row["mechanism"], canonical_json(row["params"]))
        kind = "utility" if row["attack"] is None else row["attack"]
        by_config.setdefault(key, {})[kind] = row
    points = []
    for config in by_config.values():
        base, worst = config.get("utility"), config.get(WORST_CASE)
        if base is None or worst is None or alternative_scoring(base["params"]):
            continue
        if not_private(base):  # a diagnostic whose claim does not hold: never ranked
            continue
        held = score_name_in(worst["metrics"], score)
        u, a = base["metrics"].get(utility), worst["metrics"].get(held or "")
        if u is None or a is None:
            continue
        points.append(
            FrontierPoint(
                mechanism=base["mechanism"],
                params=base["params"],
                utility=u["value"],
                utility_ci=(u["ci"][0], u["ci"][1]),
                attack=a["value"],
                attack_ci=(a["ci"][0], a["ci"][1]),
                attack_source=worst.get("sources", {}).get(held or "", ""),
                above_chance=not at_chance(base, utility),
                refuted=bool(base.get("unreliable")),
            )
        )
    varies = varying_params([(p.mechanism, p.params) for p in points])
    points = [
        FrontierPoint(
            **{**vars(p), "short": short_setting(p.mechanism, p.params, varies[p.mechanism])}
        )
        for p in points
    ]
    eligible = [p for p in points if p.above_chance and not p.refuted]
    marked = [
        FrontierPoint(
            **{
                **vars(p),
                "pareto": p in eligible and not any(_dominates(q, p) for q in eligible),
            }
        )
        for p in points
    ]
    return score, sorted(marked, key=lambda p: (p.attack, -p.utility, p.label))


def chance_levels(
    rows: list[dict[str, Any]], score: str | None
) -> tuple[float | None, float | None]:
    """(the task's chance utility, the prior guess's `score`): the two reference lines."""
    prior = task_prior_baseline(rows, score)
    return task_chance(rows), None if prior is None else float(prior["value"])


def frontier_png(
    task: str,
    points: list[FrontierPoint],
    utility: str,
    score: str,
    colours: dict[str, str] | None = None,
    chance: tuple[float | None, float | None] = (None, None),
) -> bytes:
    """Utility against the strongest attack's score with both CIs; the Pareto frontier
    drawn as a step line through its settings; `chance` (constant predictor's utility, prior
    guess's score) as dotted reference lines. `colours`: mechanism -> colour."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.5, 4.5), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    mechanisms = sorted({p.mechanism for p in points})
    colours = colours or {m: f"C{i % 10}" for i, m in enumerate(mechanisms)}
    for p in points:
        ax.errorbar(
            p.attack,
            p.utility,
            xerr=[[p.attack - p.attack_ci[0]], [p.attack_ci[1] - p.attack]],
            yerr=[[p.utility - p.utility_ci[0]], [p.utility_ci[1] - p.utility]],
            fmt="o" if p.pareto else "x",
            color=colours[p.mechanism] if p.above_chance else "0.6",
            ecolor="0.6",
            elinewidth=1,
            capsize=2,
            markersize=6,
        )
    pareto = sorted((p for p in points if p.pareto), key=lambda p: p.attack)
    if pareto:
        ax.step(
            [p.attack for p in pareto],
            [p.utility for p in pareto],
            where="post",
            color="0.3",
            linewidth=1,
            linestyle="--",
            label="Pareto frontier",
        )
    chance_utility, prior_score = chance
    if chance_utility is not None:
        ax.axhline(chance_utility, color="0.5", linestyle=":", linewidth=1, label="chance")
    if prior_score is not None:
        ax.axvline(
            prior_score, color="0.7", linestyle="-.", linewidth=1, label="attack: prior guess"
        )
    for m in mechanisms:
        ax.plot([], [], "o", color=colours[m], label=m)
    if any(not p.above_chance for p in points):
        ax.plot([], [], "x", color="0.6", label="at chance (not on frontier)")
    if points:
        ax.legend(fontsize=7, loc="best")
    else:
        ax.text(0.5, 0.5, "no (utility, attack) pairs to plot", ha="center", va="center")
    ax.set_xlabel(f"strongest attack's {score} (lower = more private)")
    ax.set_ylabel(f"{utility} (95% CI)")
    ax.set_title(f"{task}: privacy-utility frontier (o on the frontier, x dominated)")
    fig.tight_layout()
    # Which privacy level each point is, once the layout is final (label_layout measures
    # pixels); the frontier's own points are labelled first.
    labelled = sorted((p for p in points if privacy_label(p.params)), key=lambda p: not p.pareto)
    place_labels(
        ax,
        [(privacy_label(p.params), p.attack, p.utility, colours[p.mechanism]) for p in labelled],
        fontsize=7,
    )
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
