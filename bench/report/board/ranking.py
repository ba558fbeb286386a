"""Ranked views of one task's settings: the most useful settings at a fixed privacy level.

A reader's first question of a leaderboard is "at this much privacy, which mechanism is the
most useful?" (RobustBench answers it with one ranked table per threat model). A privacy
level is either empirical, a band on the strongest attack's score over the whole battery,
or claimed, a level of a guarantee among comparable guarantees only.

Empirical bands are anchored at the task's prior floor, what the attacker's prior guess
scores without looking at the release, so no band lies below what knowing nothing gives:
- similarity scores (SSIM, top-1 recovery): the score at most f + t (1 - f) for the prior
  guess's score f and t in SIMILARITY_FRACTIONS, the first "at the prior guess", the others
  a quarter, half and three quarters of the way from it to an exact recovery (1); a board
  that recorded no prior guess falls back to the absolute SIMILARITY_BANDS;
- membership inference: the strongest attack's AUC at most MEMBERSHIP_BANDS, all above the
  0.5 of a guess (the TPR at 1% FPR is shown beside);
- MSE alone (no similarity score): the error at least a share of the prior guess's.

Claimed bands group only comparable claims (bench.plugin.notions.Claim.comparable_key: the
notion, its neighbouring relation, delta and radius), so IP at r = 0.01 is never ranked
beside IP at r = 0.1, nor label DP beside add-remove DP; inside a group, a level admits every
claim at least as strong (eps at most it, or a higher-is-stronger level at least it).

Inside a band the eligible settings are ranked by utility (on the one scoring rule the
overview uses); a setting whose utility CI overlaps the leader's is marked as tied with it.
A setting ranks only if its utility CI's lower end is above the utility floor, chance plus
UTILITY_FLOOR_SHARE of the way from chance to the unprotected reference's utility, so a
setting a few points above chance never wins a band. A setting at chance, answering with
one class, scored on other inputs, flagged unreliable, whose bound broke, or whose claim is
declared not to hold is never ranked either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from bench.metrics.membership import MIA_SCORE
from bench.plugin.notions import EPS, Claim, known_notion, notion_spec
from bench.report.board.labels import notion_words

# Similarity scores (SSIM, top-1): fractions of the way from the prior guess to exact.
SIMILARITY_FRACTIONS = (0.05, 0.25, 0.5, 0.75)
# Without a recorded prior guess: the strongest attack's score at most this.
SIMILARITY_BANDS = (0.2, 0.4, 0.6)
# Membership inference: the strongest attack's AUC at most this (a guess scores 0.5).
MEMBERSHIP_BANDS = (0.55, 0.6, 0.7)
MEMBERSHIP_FLOOR = 0.5
# MSE: the strongest attack's error at least this share of the prior guess's error.
MSE_SHARE_BANDS = (1.0, 0.75, 0.5)
# A setting ranks only above chance + this share of (the reference's utility - chance).
UTILITY_FLOOR_SHARE = 0.1
MAX_CLAIM_LEVELS = 4  # claimed-privacy bands per group (evenly picked from the levels)
RANKED_PER_BAND = 2  # settings shown per band: the leader and the runner-up


@dataclass(frozen=True)
class Band(ABC):
    """A privacy level: its label, and which settings (overview lines) fall inside it.
    `anchor` says where the level sits ("at the prior guess", "a quarter of the way to
    exact", a claim group's words)."""

    label: str
    kind: str  # "attack" or "claim"
    anchor: str = ""
    short: str = ""  # the level alone, where `anchor` names the rest (a claim group)

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
    """A claim comparable with `key` (Claim.comparable_key) at least as strong as `level`."""

    key: tuple[Any, ...] = ()
    level: float = 0.0
    higher_is_stronger: bool = False

    def admits(self, line: dict[str, Any]) -> bool:
        claim = claim_of(line)
        if claim is None or claim.comparable_key() != self.key or claim.level is None:
            return False
        if self.higher_is_stronger:
            return claim.level >= self.level
        return claim.level <= self.level


def claim_of(line: dict[str, Any]) -> Claim | None:
    """The typed claim of a setting, None when it claims nothing a level orders (the
    unprotected reference, a notion no installed family registers, no level stated)."""
    guarantee = line.get("claim") or {}
    if not known_notion(guarantee.get("notion")):
        return None
    claim = Claim.from_row(guarantee)
    if not claim.spec.claims_privacy or claim.level is None:
        return None
    return claim


def utility_of(line: dict[str, Any]) -> dict[str, Any] | None:
    """The utility cell a setting is ranked by."""
    return line.get("utility")


def utility_floor(chance: float | None, reference: float | None) -> float | None:
    """The utility a ranked setting's CI must lie above: chance plus UTILITY_FLOOR_SHARE of
    the span up to the unprotected reference's utility (chance itself without a reference
    above it); None when the task records no chance level."""
    if chance is None:
        return None
    if reference is None or reference <= chance:
        return chance
    return chance + UTILITY_FLOOR_SHARE * (reference - chance)


def why_not_ranked(line: dict[str, Any], floor: float | None = None) -> str:
    """Why a setting may not be ranked at all ("" when it may; see the module docstring)."""
    utility = utility_of(line)
    reasons = (
        (utility is None, "no utility"),
        (line["at_chance"], "at chance"),
        (line["constant"], "constant predictor"),
        (line["alternative_scoring"], "scored on other inputs"),
        (line["unreliable"], "unreliable"),
        (line["bound_broken"], "bound broken"),
        (bool(line.get("not_private")), "claim declared not to hold"),
    )
    found = next((why for hit, why in reasons if hit), "")
    if found or floor is None or utility is None:
        return found
    if float(utility["lo"]) <= floor:
        return f"below the utility floor ({float(utility['lo']):.3g} ≤ {floor:.3g})"
    return ""


def ranked(line: dict[str, Any], floor: float | None = None) -> bool:
    """Whether a setting may be ranked at all (see the module docstring)."""
    return not why_not_ranked(line, floor)


def _similarity_bands(prior: float | None, words: str) -> list[Band]:
    """Bands on a similarity score anchored at the prior guess's score `prior`."""
    if prior is None:
        return [AttackBand(f"attack {words} ≤ {t:g}", "attack", limit=t) for t in SIMILARITY_BANDS]
    if prior >= 1.0:  # the guess is already exact: nothing is left to band
        return []
    bands: list[Band] = []
    for fraction in SIMILARITY_FRACTIONS:
        limit = prior + fraction * (1.0 - prior)
        anchor = (
            "at the prior guess"
            if fraction == SIMILARITY_FRACTIONS[0]
            else f"{fraction:.0%} of the way to exact"
        )
        label = f"attack {words} ≤ {limit:.3g}"
        bands.append(AttackBand(label, "attack", anchor, f"≤ {limit:.3g}", limit=limit))
    return bands


def _membership_bands(prior: float | None, words: str) -> list[Band]:
    """Bands on a membership attack's AUC, every one above the guess's AUC."""
    floor = max(MEMBERSHIP_FLOOR, prior if prior is not None else MEMBERSHIP_FLOOR)
    return [
        AttackBand(f"{words} ≤ {t:g}", "attack", f"{t - floor:.2g} above a guess", f"≤ {t:g}", t)
        for t in MEMBERSHIP_BANDS
        if t > floor
    ]


def attack_bands(score: str, prior: float | None, words: str = "") -> list[Band]:
    """The empirical bands of a task whose strongest attack scores `score` (named `words`),
    `prior` being the prior guess's score (see the module docstring)."""
    words = words or score
    if score == "mse":
        if prior is None or prior <= 0:
            return []
        return [
            AttackBand(
                f"attack MSE ≥ {share:g} × prior guess",
                "attack",
                limit=share * prior,
                at_least=True,
            )
            for share in MSE_SHARE_BANDS
        ]
    if score == MIA_SCORE:
        return _membership_bands(prior, words)
    return _similarity_bands(prior, words)


def band_rule(score: str, prior: float | None, words: str = "") -> str:
    """How a task's empirical bands are defined, in words with their numbers, for the page."""
    words = words or score
    if score == "mse":
        shares = ", ".join(f"{share:g}" for share in MSE_SHARE_BANDS)
        return (
            "Bands on the strongest attack's MSE over the whole battery: at least "
            f"{shares} × the prior guess's MSE (what the attacker's guess scores without "
            "looking at the release)."
        )
    if score == MIA_SCORE:
        limits = ", ".join(f"{t:g}" for t in MEMBERSHIP_BANDS)
        return (
            f"Bands on the strongest membership attack's AUC over the whole battery: at most "
            f"{limits}, each above the {MEMBERSHIP_FLOOR:g} of a guess; its TPR at 1% FPR "
            "is shown beside."
        )
    if prior is None:
        limits = ", ".join(f"{t:g}" for t in SIMILARITY_BANDS)
        return (
            f"Bands on the strongest attack's {words} over the whole battery: at most "
            f"{limits} (this board recorded no prior guess to anchor them at)."
        )
    shares = ", ".join(f"{t:.0%}" for t in SIMILARITY_FRACTIONS)
    return (
        f"Bands on the strongest attack's {words} over the whole battery, anchored at the "
        f"prior floor f = {prior:.3g} (what the attacker's prior guess scores without "
        f"looking at the release): a band admits a score of at most f + t × (1 − f), t = "
        f"{shares} of the way from the prior guess to an exact recovery (1); the first is "
        '"at the prior guess", and none lies below f.'
    )


def _spread(levels: list[float], count: int) -> list[float]:
    """At most `count` of the sorted `levels`, evenly picked, the first and last kept."""
    if len(levels) <= count:
        return levels
    step = (len(levels) - 1) / (count - 1)
    return [levels[round(i * step)] for i in range(count)]


def _fixed_words(claim: Claim) -> str:
    """What a comparable group of claims shares besides its notion: delta and radius."""
    parts = []
    if claim.delta:
        parts.append(f"δ={claim.delta:g}")
    if claim.radius is not None:
        parts.append(f"r={claim.radius:g}")
    return ", ".join(parts)


def group_words(claim: Claim) -> str:
    """A comparable group of claims in words, e.g. "IP (δ=1e-05, r=0.1) over l2/input"."""
    fixed = _fixed_words(claim)
    text = notion_words(claim.notion) + (f" ({fixed})" if fixed else "")
    return text + (f" over {claim.distance}" if claim.distance else "")


def claim_words(guarantee: dict[str, Any] | None) -> str:
    """A claim in a few words for a ranked table: its notion, level, delta and radius and
    what two neighbours differ in, e.g. "IP (ε=1, δ=1e-05, r=0.1) over l2/input", without
    the bookkeeping a full guarantee carries (bench.report.board.labels.describe_guarantee
    has it all); "none" for the unprotected reference."""
    guarantee = guarantee or {}
    if not known_notion(guarantee.get("notion")):
        return str(guarantee.get("notion") or "none")
    claim = Claim.from_row(guarantee)
    if not claim.spec.claims_privacy:
        return notion_words(claim.notion)
    declared = claim.spec.level
    parts = [f"{declared.symbol}={claim.level:g}"] if claim.level is not None else []
    fixed = _fixed_words(claim)
    text = notion_words(claim.notion) + (
        f" ({', '.join([*parts, fixed] if fixed else parts)})" if parts or fixed else ""
    )
    text += f" over {claim.distance}" if claim.distance else ""
    return f"NOT PRIVATE (claimed: {text})" if claim.not_private else text


def _group_order(claim: Claim) -> tuple[Any, ...]:
    return (
        notion_words(claim.notion),
        claim.distance or "",
        claim.delta,
        -1.0 if claim.radius is None else claim.radius,
    )


def _level_label(claim: Claim, level: float) -> str:
    """A claim band's label: "IP (δ=1e-05, r=0.1) ε ≤ 1 over l2/input", "1/dFIL ≥ 10"; a
    notion's own level parameter names it, eps is said with its notion."""
    declared = notion_spec(claim.notion).level
    relation = "≥" if declared.higher_is_stronger else "≤"
    fixed = _fixed_words(claim)
    level_text = f"{declared.symbol} {relation} {level:g}"
    if declared == EPS:
        prefix = notion_words(claim.notion) + (f" ({fixed})" if fixed else "")
        suffix = ""
    else:
        prefix, suffix = "", f"({fixed})" if fixed else ""
    over = f"over {claim.distance}" if claim.distance else ""
    return " ".join(part for part in (prefix, level_text, suffix, over) if part)


def claim_groups(lines: list[dict[str, Any]]) -> list[tuple[Claim, list[Band]]]:
    """Each comparable group of the settings' claims (one Claim standing for it) with its
    bands: its distinct levels, strongest first, at most MAX_CLAIM_LEVELS of them."""
    groups: dict[tuple[Any, ...], tuple[Claim, set[float]]] = {}
    for line in lines:
        claim = claim_of(line)
        if claim is None or claim.level is None:
            continue
        _, levels = groups.setdefault(claim.comparable_key(), (claim, set()))
        levels.add(claim.level)
    out = []
    for key, (claim, levels) in sorted(groups.items(), key=lambda g: _group_order(g[1][0])):
        higher = notion_spec(claim.notion).level.higher_is_stronger
        ordered = sorted(levels, reverse=higher)
        declared = notion_spec(claim.notion).level
        relation = "≥" if higher else "≤"
        bands: list[Band] = [
            ClaimBand(
                _level_label(claim, level),
                "claim",
                group_words(claim),
                f"{declared.symbol} {relation} {level:g}",
                key,
                level,
                higher,
            )
            for level in _spread(ordered, MAX_CLAIM_LEVELS)
        ]
        out.append((claim, bands))
    return out


def claim_bands(lines: list[dict[str, Any]]) -> list[Band]:
    """The claimed-privacy bands: per comparable group, its levels, strongest first."""
    return [band for _, bands in claim_groups(lines) for band in bands]


def _overlaps(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return float(a["lo"]) <= float(b["hi"]) and float(b["lo"]) <= float(a["hi"])


def _eligible(band: Band, lines: list[dict[str, Any]], floor: float | None) -> list[dict[str, Any]]:
    """The settings that may be ranked and fall inside `band`, most useful first."""
    inside = [line for line in lines if ranked(line, floor) and band.admits(line)]
    inside.sort(key=lambda line: -float(utility_of(line)["value"]))  # type: ignore[index]
    return inside


def rank_band(
    band: Band, lines: list[dict[str, Any]], floor: float | None = None
) -> dict[str, Any]:
    """The band's eligible settings ranked by utility: the first RANKED_PER_BAND of them, each
    with its rank and whether its utility CI overlaps the leader's (`tied`)."""
    inside = _eligible(band, lines, floor)
    top = inside[:RANKED_PER_BAND]
    entries = [
        {
            "rank": i + 1,
            "line": line,
            "tied": i > 0 and _overlaps(utility_of(line), utility_of(top[0])),  # type: ignore[arg-type]
        }
        for i, line in enumerate(top)
    ]
    return {
        "label": band.label,
        "kind": band.kind,
        "anchor": band.anchor,
        "short": band.short or band.label,
        "entries": entries,
        "eligible": len(inside),
    }


def standing(
    line: dict[str, Any], bands: list[Band], lines: list[dict[str, Any]], floor: float | None
) -> str:
    """Where one setting stands among a task's settings (`lines`): its rank by utility in the
    strictest of the nested `bands` that admits it, with the number ranked there and whether
    its utility CI overlaps the leader's; or why it is not ranked at all. What a submitter
    asks of a track first, whether or not the setting leads a band (the page shows only
    the first RANKED_PER_BAND of each)."""
    why = why_not_ranked(line, floor)
    if why:
        return f"not ranked: {why}"
    band = next((b for b in bands if b.admits(line)), None)
    if band is None:
        return "ranked in no band: its strongest attack is above every band's level"
    inside = _eligible(band, lines, floor)
    value = float(utility_of(line)["value"])  # type: ignore[index]
    rank = 1 + sum(float(utility_of(o)["value"]) > value for o in inside)  # type: ignore[index]
    tied = rank > 1 and _overlaps(utility_of(line), utility_of(inside[0]))  # type: ignore[arg-type]
    where = f"{band.label} ({band.anchor})" if band.anchor else band.label
    return f"rank {rank} of {len(inside)} at {where}" + (", tied with the leader" if tied else "")


def claim_view(lines: list[dict[str, Any]], floor: float | None = None) -> list[dict[str, Any]]:
    """The ranking by claimed guarantee: per comparable group, its words, its ranked level
    bands, and every setting of the group that is not ranked with the reason (a refuted or
    void claim among them), so a reader sees each claim's fate beside the ranked ones."""
    out = []
    for claim, bands in claim_groups(lines):
        key = claim.comparable_key()
        members = [line for line in lines if (c := claim_of(line)) and c.comparable_key() == key]
        out.append(
            {
                "group": group_words(claim),
                "bands": [rank_band(band, lines, floor) for band in bands],
                "unranked": [
                    {"line": line, "why": why}
                    for line in members
                    if (why := why_not_ranked(line, floor))
                ],
            }
        )
    return out


def ranked_views(
    lines: list[dict[str, Any]],
    score: str,
    prior: float | None,
    has_attacks: bool,
    score_words: str = "",
    floor: float | None = None,
) -> list[dict[str, Any]]:
    """Every band of the task with its ranked settings, empirical bands first, then the
    claimed ones group by group; none for a single setting. `floor`: `utility_floor`."""
    if len(lines) < 2:
        return []
    empirical = attack_bands(score, prior, score_words) if has_attacks else []
    bands = empirical + claim_bands(lines)
    return [rank_band(band, lines, floor) for band in bands]
