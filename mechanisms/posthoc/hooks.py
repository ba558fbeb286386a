"""What the Posthoc family adds to the harness: its notion, (eps, delta, R)-reconstruction
privacy, its mechanism's own audit (PTR's ⊥ decision and release noise,
mechanisms.posthoc.audit) and the paper's two sweep plots on a board."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plugin.hooks import (
    BoardPlot,
    NotionSpec,
    register_audit,
    register_board_plot,
    register_notion,
)
from mechanisms.posthoc.audit import audit_ptr, claims_embedding_distance
from mechanisms.posthoc.mechanism import PosthocPTR

# (eps, delta, R)-reconstruction privacy (Singh et al., "Posthoc privacy guarantees for
# collaborative inference with modified Propose-Test-Release", NeurIPS 2023): two inputs
# whose embeddings lie within R of each other (l_inf) get eps-indistinguishable releases,
# with probability 1 - delta. PTR's own audit tests it (registered below).
register_notion(
    NotionSpec("reconstruction", "reconstruction privacy", neighbours="inputs", radius=True)
)
register_audit(PosthocPTR, audit_ptr, claims_embedding_distance)


def _lipschitz_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    from mechanisms.posthoc.plots import write_lipschitz_plots  # matplotlib on a board only

    return write_lipschitz_plots(rows, out_dir)


def _ssim_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    from mechanisms.posthoc.plots import write_ssim_plots

    return write_ssim_plots(rows, out_dir)


register_board_plot(
    [PosthocPTR.name],
    BoardPlot(
        "lipschitz_vs_alpha",
        "mean certified local Lipschitz constant by ARL weight and radius",
        _lipschitz_plots,
    ),
)
register_board_plot(
    [PosthocPTR.name],
    BoardPlot("ssim_vs_radius", "attack SSIM against the radius R, a line per eps", _ssim_plots),
)
