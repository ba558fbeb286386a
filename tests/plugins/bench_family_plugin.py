"""An out-of-tree mechanism family used by the tests, added through the public API alone
(bench.plugin, bench.plugin.hooks) and its entry point (the dist-info beside this file):
a mechanism, a privacy notion of its own, the audit of its claims and a plot of its own on
every board with its rows.

`test-coin` is randomised response (Warner, 1965) on each coordinate's side of the middle
of the data range. It claims eps per coordinate, a notion this family registers ("coin-rr",
its level `eps_coord`); its audit tests one coordinate's keep rate; its plot draws that
audit's bound against the claimed eps per coordinate."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, ClassVar

import torch

from bench.plugin import (
    FitContext,
    Guarantee,
    InputSpaceMechanism,
    Release,
    Splits,
    Task,
)
from bench.plugin.hooks import (
    AuditOptions,
    AuditResult,
    BoardPlot,
    Claim,
    NotionSpec,
    PrivacyLevel,
    audit_generator,
    eps_lower_bound,
    register_audit,
    register_board_plot,
    register_notion,
)

COIN_DRAWS = 20_000  # releases per side of the audit's pair (a distinctive audit_draws)
STATISTIC = "coordinate keep rate"
PLOT_SUFFIX = "coin_audit"
NOTION = register_notion(
    NotionSpec(
        "coin-rr",
        "coordinate RR",
        level=PrivacyLevel("eps_coord", "ε per coordinate"),
        neighbours="inputs",
    )
)


class CoinFlip(InputSpaceMechanism):
    """Each coordinate's side of the middle of the data range, kept with probability
    e^eps / (1 + e^eps) and flipped otherwise, released as that end of the range. Each
    coordinate's answer is eps-LDP (randomised response): the family's own claim, eps per
    coordinate (NOTION)."""

    name = "test-coin"
    modalities = frozenset({"vector", "tabular"})
    defaults: ClassVar[dict[str, Any]] = {"eps": 1.0}

    def fit(self, task: Task, splits: Splits, ctx: FitContext) -> None:
        super().fit(task, splits, ctx)
        self.low, self.high = (float(b) for b in task.data_range)
        self.dims = math.prod(task.input_shape)

    def keep_probability(self) -> float:
        eps = float(self.params["eps"])
        return math.exp(eps) / (1 + math.exp(eps))

    def release(self, x: torch.Tensor, generator: torch.Generator) -> Release:
        side = x > (self.low + self.high) / 2
        flip = torch.rand(x.shape, generator=generator) >= self.keep_probability()
        values = torch.where(side ^ flip, self.high, self.low).to(x.dtype)
        return Release.all_released(values)

    def noise(self) -> None:
        return None

    def guarantee(self) -> Guarantee:
        return Guarantee(NOTION.name, {"eps_coord": float(self.params["eps"])})


def audit_coin(
    mechanism: Any, task: Task, seed: int, claim: Claim, options: AuditOptions
) -> AuditResult:
    """Refute eps per coordinate: two inputs at the low end of the range, one with its first
    coordinate at the high end; the test "the first released coordinate is high" on
    COIN_DRAWS releases of each gives a Clopper-Pearson lower bound on eps, tested against
    the claim's level (eps per coordinate)."""
    eps, delta = claim.level, claim.delta
    alpha = 1.0 - options.confidence
    x0 = torch.full((COIN_DRAWS, *task.input_shape), mechanism.low)
    x1 = x0.clone()
    x1.view(COIN_DRAWS, -1)[:, 0] = mechanism.high
    middle = (mechanism.low + mechanism.high) / 2
    high0 = mechanism.release(x0, audit_generator(seed, "coin/0")).values.view(COIN_DRAWS, -1)
    high1 = mechanism.release(x1, audit_generator(seed, "coin/1")).values.view(COIN_DRAWS, -1)
    false_pos = int((high0[:, 0] > middle).sum())
    false_neg = int((high1[:, 0] <= middle).sum())
    eps_lb = float(eps_lower_bound(false_pos, COIN_DRAWS, false_neg, COIN_DRAWS, 0.0, alpha))
    return AuditResult(
        mechanism.name,
        claim.notion,
        eps,
        delta,
        claim.radius,
        audited=True,
        passed=eps is not None and eps_lb <= eps,
        eps_lb=eps_lb,
        eps_ideal=float(mechanism.params["eps"]),
        n_pairs=1,
        n_draws=COIN_DRAWS,
        statistic=STATISTIC,
        fpr=false_pos / COIN_DRAWS,
        fnr=false_neg / COIN_DRAWS,
    )


def draw_coin_audit(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    """plots/<task>_coin_audit.png: the audit's bound against eps per coordinate, for each
    task with test-coin rows that carry an audit."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    points: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        audit = row.get("metrics", {}).get("eps_audit_lb")
        if row["mechanism"] == CoinFlip.name and row.get("attack") is None and audit:
            points.setdefault(row["task"], []).append((row["params"]["eps"], audit["value"]))
    written = []
    for task, xy in sorted(points.items()):
        fig = Figure(figsize=(4, 3))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        xs, ys = zip(*sorted(xy), strict=True)
        ax.plot(xs, ys, "o-", label="audit lower bound")
        ax.plot(xs, xs, "k--", label="eps per coordinate")
        ax.set_xlabel("eps per coordinate")
        ax.legend()
        path = Path(out_dir) / "plots" / f"{task}_{PLOT_SUFFIX}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, format="png", metadata={"Software": None})
        written.append(path)
    return written


register_audit(CoinFlip, audit_coin)
register_board_plot(
    [CoinFlip.name],
    BoardPlot(PLOT_SUFFIX, "test-coin: audit bound against eps per coordinate", draw_coin_audit),
)
