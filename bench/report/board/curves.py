"""A track's privacy-utility plot: one curve per mechanism variant through its privacy
levels, utility (on the one scoring rule) against the strongest attack's score over the
whole battery, coloured by mechanism family, with the chance line, the utility floor a
ranked setting must clear and the prior floor an attack must beat.

A curve is a (mechanism, variant) pair, the variant being the parameters that tell two of
the mechanism's settings apart without changing their claim: gauss-input as trained and
fine-tuned are two curves, each through its radii; a split point or an optimisation is a
variant, the privacy level (eps, a radius, 1/dFIL) is what a curve runs through. The
family is the package the mechanism's class lives in (an in-tree family's folder, a
plug-in's top-level package): one colour map per family, one shade per mechanism (on a task
whose mechanisms are all of one family, one distinct colour per mechanism), one line
style per variant. The unprotected reference is one marked point, not a curve.

`plot_data` computes everything the figure shows and `curves_png` only draws it, so the
figure is tested on its data (one line per curve key, every legend entry), not its pixels.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from bench.core.errors import BenchError
from bench.core.hashing import canonical_json
from bench.core.project import in_project
from bench.plugin.notions import Claim, known_notion, notion_spec
from bench.plugin.registry import MECHANISMS
from bench.report.board.labels import (
    WORST_CASE,
    alternative_scoring,
    not_private,
    params_text,
    privacy_label,
    score_name_in,
)

# One colour map per family, in family order; shades within a family per mechanism.
FAMILY_COLOURMAPS = ("Blues", "Oranges", "Greens", "Purples", "Reds", "YlOrBr", "Greys")
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v", "P", "X")
REFERENCE_MARKER = "*"
# Guarantee keys that say how a setting was checked or trained, not what it claims.
_NOT_CLAIM = ("bound", "tuning")


def mechanism_family(name: str) -> str:
    """The family of a registered mechanism: its class's package (the in-tree family's
    folder, e.g. "mechanisms.noise"; a plug-in's top-level package); the mechanism's own name
    for one no installed package registers (an old board's row)."""
    try:
        module = MECHANISMS.get(name).__module__
    except BenchError:
        return name
    if in_project(module):
        return module.rsplit(".", 1)[0] if "." in module else module
    return module.split(".", 1)[0]


def family_words(family: str) -> str:
    """A family as the legend names it: its last dotted component ("noise")."""
    return family.rsplit(".", 1)[-1]


def _claim_text(row: dict[str, Any]) -> str:
    """What a setting claims, as text two settings share exactly when their claims are the
    same: the typed claim's comparable key and level (a guarantee's bookkeeping, such as an
    estimate it carries, is no part of it), else the whole guarantee for a notion no
    installed family registers."""
    guarantee = {k: v for k, v in (row.get("guarantee") or {}).items() if k not in _NOT_CLAIM}
    if known_notion(guarantee.get("notion")):
        claim = Claim.from_row(guarantee)
        return canonical_json([list(claim.comparable_key()), claim.level, claim.eps])
    return canonical_json(guarantee)


def variant_params(settings: list[tuple[dict[str, Any], dict[str, Any]]]) -> set[str]:
    """Of one mechanism's settings (params, utility row), the parameters that vary without
    changing the claim: those on which two settings with the very same claim differ."""
    varying = {
        k
        for k in {k for params, _ in settings for k in params}
        if len({canonical_json(params.get(k)) for params, _ in settings}) > 1
    }
    by_claim: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for params, row in settings:
        by_claim[_claim_text(row)].append(params)
    return {
        k
        for k in varying
        if any(
            len({canonical_json(params.get(k)) for params in same}) > 1
            for same in by_claim.values()
        )
    }


@dataclass(frozen=True)
class CurvePoint:
    """One setting on a curve: the strongest attack's score and the utility with their CIs,
    and its privacy level's label."""

    attack: float
    attack_ci: tuple[float, float]
    utility: float
    utility_ci: tuple[float, float]
    level: str
    params: dict[str, Any] = field(hash=False)


@dataclass(frozen=True)
class Curve:
    """One (mechanism, variant) through its privacy levels, drawn in its family's colour."""

    mechanism: str
    variant: dict[str, Any] = field(hash=False)
    family: str = ""
    colour: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    linestyle: str = "-"
    marker: str = "o"
    reference: bool = False
    points: tuple[CurvePoint, ...] = ()

    @property
    def key(self) -> tuple[str, str]:
        return self.mechanism, canonical_json(self.variant)

    @property
    def label(self) -> str:
        shown = f" ({params_text(self.variant)})" if self.variant else ""
        return f"{self.mechanism}{shown}" + (" (no protection)" if self.reference else "")


@dataclass(frozen=True)
class ReferenceLine:
    """A horizontal (utility) or vertical (attack score) line the reader measures against."""

    label: str
    value: float
    axis: str  # "utility" or "attack"
    style: str = ":"


@dataclass(frozen=True)
class PlotData:
    """Everything the track plot shows: its curves, reference lines, axis labels, title."""

    title: str
    x_label: str
    y_label: str
    curves: tuple[Curve, ...]
    lines: tuple[ReferenceLine, ...]

    @property
    def legend(self) -> list[str]:
        """The legend's entries, in drawing order: the curves, then the reference lines."""
        return [c.label for c in self.curves] + [line.label for line in self.lines]


def _claims_nothing(row: dict[str, Any]) -> bool:
    notion = (row.get("guarantee") or {}).get("notion")
    return known_notion(notion) and not notion_spec(notion).claims_privacy


def _settings(
    rows: list[dict[str, Any]], utility: str, score: str
) -> dict[str, list[tuple[dict[str, Any], dict[str, Any], CurvePoint]]]:
    """Per mechanism, each plottable setting: (params, utility row, its point). A setting
    scored on other inputs or whose claim is declared void is not a point of any curve."""
    by_config: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in rows:
        kind = "utility" if row["attack"] is None else row["attack"]
        by_config[(row["mechanism"], canonical_json(row["params"]))][kind] = row
    out: dict[str, list[tuple[dict[str, Any], dict[str, Any], CurvePoint]]] = defaultdict(list)
    for (mechanism, _), config in sorted(by_config.items()):
        base, worst = config.get("utility"), config.get(WORST_CASE)
        if base is None or worst is None or alternative_scoring(base["params"]):
            continue
        if not_private(base):
            continue
        u_name = score_name_in(base["metrics"], utility)
        a_name = score_name_in(worst["metrics"], score)
        if u_name is None or a_name is None:
            continue
        u, a = base["metrics"][u_name], worst["metrics"][a_name]
        point = CurvePoint(
            attack=float(a["value"]),
            attack_ci=(float(a["ci"][0]), float(a["ci"][1])),
            utility=float(u["value"]),
            utility_ci=(float(u["ci"][0]), float(u["ci"][1])),
            level=privacy_label(base["params"]),
            params=base["params"],
        )
        out[mechanism].append((base["params"], base, point))
    return out


def _shades(family_index: int, count: int) -> list[tuple[float, float, float, float]]:
    """`count` distinct shades of the family's colour map, dark to light, none too pale."""
    from matplotlib import colormaps

    cmap = colormaps[FAMILY_COLOURMAPS[family_index % len(FAMILY_COLOURMAPS)]]
    if count == 1:
        return [cmap(0.75)]
    return [cmap(0.95 - 0.5 * i / (count - 1)) for i in range(count)]


def _distinct(count: int) -> list[tuple[float, float, float, float]]:
    """`count` distinct colours of a qualitative map: a task whose mechanisms are all of one
    family (the label-only track) tells them apart by colour, not by shades of one hue."""
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return [cmap(i % 10) for i in range(count)]


def track_curves(rows: list[dict[str, Any]], utility: str, score: str) -> list[Curve]:
    """The curves of one task's rows (see the module docstring), sorted by family, mechanism
    and variant; each curve's points in order of the attack's score."""
    settings = _settings(rows, utility, score)
    families = sorted({mechanism_family(m) for m in settings})
    curves: list[Curve] = []
    for f_index, family in enumerate(families):
        mechanisms = sorted(m for m in settings if mechanism_family(m) == family)
        one_family = len(families) == 1
        shades = (_distinct if one_family else partial(_shades, f_index))(len(mechanisms))
        for m_index, mechanism in enumerate(mechanisms):
            mine = settings[mechanism]
            variants = variant_params([(params, row) for params, row, _ in mine])
            grouped: dict[str, list[CurvePoint]] = defaultdict(list)
            for params, _, point in mine:
                grouped[canonical_json({k: params.get(k) for k in sorted(variants)})].append(point)
            reference = all(_claims_nothing(row) for _, row, _ in mine)
            for v_index, (variant, points) in enumerate(sorted(grouped.items())):
                shown = {k: v for k, v in sorted(json.loads(variant).items()) if v is not None}
                curves.append(
                    Curve(
                        mechanism=mechanism,
                        variant=shown,
                        family=family,
                        colour=shades[m_index],
                        linestyle=LINE_STYLES[v_index % len(LINE_STYLES)],
                        marker=REFERENCE_MARKER if reference else MARKERS[m_index % len(MARKERS)],
                        reference=reference,
                        points=tuple(sorted(points, key=lambda p: (p.attack, -p.utility))),
                    )
                )
    return curves


def plot_data(
    task: str,
    rows: list[dict[str, Any]],
    utility: str,
    score: str,
    *,
    utility_words: str,
    score_words: str,
    chance: float | None,
    floor: float | None,
    prior: float | None,
    lower_is_private: bool = True,
) -> PlotData:
    """What the track plot of `task` shows: its curves and the reference lines (chance, the
    utility floor where it lies above chance, the attack's prior floor)."""
    lines = []
    if chance is not None:
        lines.append(ReferenceLine(f"chance ({chance:.3g})", chance, "utility", ":"))
    if floor is not None and (chance is None or floor > chance):
        lines.append(
            ReferenceLine(f"utility floor for ranking ({floor:.3g})", floor, "utility", "--")
        )
    if prior is not None:
        lines.append(
            ReferenceLine(f"prior floor: the attacker's guess ({prior:.3g})", prior, "attack", "-.")
        )
    direction = "lower = more private" if lower_is_private else "higher = more private"
    return PlotData(
        title=f"{task}: privacy-utility, one curve per mechanism",
        x_label=f"strongest attack's {score_words} over the battery ({direction})",
        y_label=f"{utility_words} (95% CI)",
        curves=tuple(track_curves(rows, utility, score)),
        lines=tuple(lines),
    )


LEGEND_COLUMNS = 2


def _legend_rows(data: PlotData) -> int:
    return -(-len(data.legend) // LEGEND_COLUMNS)


def curves_png(data: PlotData) -> bytes:
    """The plot of `data`: a line with CI bars per curve, the reference point(s), dotted
    reference lines, a legend beside the axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6.4, 4.4 + 0.17 * _legend_rows(data)), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    handles = []
    for curve in data.curves:
        xs = [p.attack for p in curve.points]
        ys = [p.utility for p in curve.points]
        handle = ax.errorbar(
            xs,
            ys,
            xerr=[
                [p.attack - p.attack_ci[0] for p in curve.points],
                [p.attack_ci[1] - p.attack for p in curve.points],
            ],
            yerr=[
                [p.utility - p.utility_ci[0] for p in curve.points],
                [p.utility_ci[1] - p.utility for p in curve.points],
            ],
            color=curve.colour,
            ecolor=(*curve.colour[:3], 0.35),
            elinewidth=0.8,
            capsize=0,
            linestyle="none" if curve.reference else curve.linestyle,
            linewidth=1.4,
            marker=curve.marker,
            markersize=11 if curve.reference else 5,
            markeredgecolor="black" if curve.reference else curve.colour,
            label=curve.label,
        )
        handles.append(handle)
    for line in data.lines:
        draw = ax.axhline if line.axis == "utility" else ax.axvline
        handles.append(
            draw(line.value, color="0.35", linestyle=line.style, linewidth=1, label=line.label)
        )
    if data.curves:
        fig.legend(
            handles,
            data.legend,
            fontsize=7.5,
            loc="lower center",
            ncols=LEGEND_COLUMNS,
            frameon=False,
            bbox_to_anchor=(0.5, 0.0),
        )
    else:
        ax.text(0.5, 0.5, "no (utility, attack) pairs to plot", ha="center", va="center")
    ax.set_xlabel(data.x_label, fontsize=9)
    ax.set_ylabel(data.y_label, fontsize=9)
    ax.set_title(data.title, fontsize=10)
    ax.grid(True, color="0.92", linewidth=0.6)
    height = 4.4 + 0.17 * _legend_rows(data)
    fig.tight_layout(rect=(0.0, min(0.5, (0.17 * _legend_rows(data) + 0.1) / height), 1.0, 1.0))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()
