"""What the dFIL family adds to the harness: its claims' privacy level (1/dFIL) and the
paper's attack MSE against 1/dFIL plot (with both Fisher bounds) on a board whose rows
sweep `inv_dfil`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plugin.hooks import (
    BoardPlot,
    NotionSpec,
    PrivacyLevel,
    register_board_plot,
    register_notion,
)


def _dfil_plots(rows: list[dict[str, Any]], out_dir: Path) -> list[Path]:
    from mechanisms.dfil.plots import write_dfil_plots  # matplotlib on a board only

    return write_dfil_plots(rows, out_dir)


register_board_plot(
    ["dfil", "dp-encoder"],
    BoardPlot(
        "dfil_bounds",
        "attack MSE against 1/dFIL with the Cramer-Rao and van Trees bounds",
        _dfil_plots,
    ),
)
# A dFIL claim (Bounding the invertibility of instance encoding with Fisher information, 2023)
# states its level as 1/dFIL, the per-dimension MSE lower bound, so a higher 1/dFIL is the
# stronger claim. It bounds an attacker's error on one input, not the distinguishability of
# two: no audit tests it; its bound rows do, each sample at 95% (bench.certify.fisher.bounds).
register_notion(
    NotionSpec(
        "dfil",
        "dFIL bound",
        level=PrivacyLevel("inv_dfil", "1/dFIL", higher_is_stronger=True),
        neighbours="inputs",
        unaudited="a Fisher-information bound on reconstruction error, not differential "
        "privacy: the board's bound rows test it on every attack",
        bound_false_alarm=0.05,
    )
)
