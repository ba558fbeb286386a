"""Ranked views of one task's settings: the most useful settings at a fixed privacy level.

A reader's first question of a leaderboard is "at this much privacy, which mechanism is the
most useful?" (RobustBench answers it with one ranked table per threat model). A privacy
level is either empirical, a band on the strongest attack's score (SSIM or top-1 at most t;
an MSE at least a share of the attacker's prior guess), or claimed, a band on the guarantee
(eps at most a level, per privacy notion: eps of different notions are not comparable).
Inside a band the eligible settings are ranked by utility; a setting whose utility CI
overlaps the leader's is marked as tied with it. A setting at chance, answering with one
class, scored on other inputs, flagged unreliable, whose bound broke, or whose claim is
declared not to hold is never ranked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from bench.plugin.notions import EPS, UNPROTECTED, known_notion, notion_spec
from bench.report.board.labels import notion_words

# Similarity scores (SSIM, top-1): the strongest attack's score at most this.
SIMILARITY_BANDS = (0.2, 0.4, 0.6)
# MSE: the strongest attack's error at least this share of the prior guess's error.
MSE_SHARE_BANDS = (1.0, 0.75, 0.5)
MAX_CLAIM_LEVELS = 4  # claimed-privacy bands per notion (evenly picked from the levels)
RANKED_PER_BAND = 2  # settings shown per band: the leader and the runner-up


@dataclass(frozen=True)
class Band(ABC):
    """A privacy level: its label, and which settings (overview lines) fall inside it."""

    label: str
    kind: str  # "attack" or "claim"

    @abstractmethod
    def admits(self, line: dict[str, Any]) -> bool:
        """Whether the setting's strongest attack or claim lies inside this band."""


@dataclass(frozen=True)
class AttackBand(Band):
    """The strongest attack's score at most `limit` (or, for MSE, at least `limit`)."""

    limit: float = 0.0
    at_least: bool = False

    def admits(self, line: dict[str, Any]) -> bool:
        if line["attack"] is None:
            return False
        value = float(line["attack"]["value"])
        return value >= self.limit if self.at_least else value <= self.limit


@dataclass(frozen=True)
class ClaimBand(Band):
    """A guarantee of `notion` at least as strong as `level` of its privacy parameter."""

    notion: str = ""
    param: str = "eps"
    level: float = 0.0
    higher_is_stronger: bool = False

    def admits(self, line: dict[str, Any]) -> bool:
        claim = line.get("claim") or {}
        if claim.get("notion") != self.notion or claim.get(self.param) is None:
            return False
        value = float(claim[self.param])
        return value >= self.level if self.higher_is_stronger else value <= self.level


def ranked(line: dict[str, Any]) -> bool:
    """Whether a setting may be ranked at all (see the module docstring)."""
    return not (
        line["utility"] is None
        or line["at_chance"]
        or line["constant"]
        or line["alternative_scoring"]
        or line["unreliable"]
        or line["bound_broken"]
        or line.get("not_private")
    )


def attack_bands(score: str, prior: float | None, words: str = "") -> list[Band]:
    """The empirical bands of a task whose strongest attack scores `score` (named `words`)."""
    if score == "mse":
        if prior is None or prior <= 0:
            return []
        return [
            AttackBand(f"attack MSE ≥ {share:g} × prior guess", "attack", share * prior, True)
            for share in MSE_SHARE_BANDS
        ]
    words = words or score
    return [AttackBand(f"attack {words} ≤ {t:g}", "attack", t) for t in SIMILARITY_BANDS]


def _spread(levels: list[float], count: int) -> list[float]:
    """At most `count` of the sorted `levels`, evenly picked, the first and last kept."""
    if len(levels) <= count:
        return levels
    step = (len(levels) - 1) / (count - 1)
    return [levels[round(i * step)] for i in range(count)]


def claim_bands(lines: list[dict[str, Any]]) -> list[Band]:
    """The claimed-privacy bands: per notion, its distinct levels, strongest first."""
    levels: dict[str, set[float]] = {}
    for line in lines:
        claim = line.get("claim") or {}
        notion = claim.get("notion")
        if notion in (None, UNPROTECTED) or not known_notion(notion):
            continue
        param = notion_spec(notion).level.param  # the notion's declared level
        if claim.get(param) is None:
            continue
        levels.setdefault(notion, set()).add(float(claim[param]))
    bands: list[Band] = []
    for notion in sorted(levels):
        declared = notion_spec(notion).level
        higher = declared.higher_is_stronger
        ordered = sorted(levels[notion], reverse=higher)
        for level in _spread(ordered, MAX_CLAIM_LEVELS):
            relation = "≥" if higher else "≤"
            # A notion's own parameter names it (1/dFIL); eps is said with its notion.
            words = "" if declared != EPS else f"{notion_words(notion)} "
            label = f"{words}{declared.symbol} {relation} {level:g}"
            bands.append(ClaimBand(label, "claim", notion, declared.param, level, higher))
    return bands


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return float(a["lo"]) <= float(b["hi"]) and float(b["lo"]) <= float(a["hi"])


def rank_band(band: Band, lines: list[dict[str, Any]]) -> dict[str, Any]:
    """The band's eligible settings ranked by utility: the first RANKED_PER_BAND of them, each
    with its rank and whether its utility CI overlaps the leader's (`tied`)."""
    inside = [line for line in lines if ranked(line) and band.admits(line)]
    inside.sort(key=lambda line: -float(line["utility"]["value"]))
    top = inside[:RANKED_PER_BAND]
    entries = [
        {
            "rank": i + 1,
            "line": line,
            "tied": i > 0 and _overlaps(line["utility"], top[0]["utility"]),
        }
        for i, line in enumerate(top)
    ]
    return {"label": band.label, "kind": band.kind, "entries": entries, "eligible": len(inside)}


def ranked_views(
    lines: list[dict[str, Any]],
    score: str,
    prior: float | None,
    has_attacks: bool,
    score_words: str = "",
) -> list[dict[str, Any]]:
    """Every band of the task with its ranked settings; none for a single setting."""
    if len(lines) < 2:
        return []
    empirical = attack_bands(score, prior, score_words) if has_attacks else []
    bands = empirical + claim_bands(lines)
    return [rank_band(band, lines) for band in bands]
