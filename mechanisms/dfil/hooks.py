"""What the dFIL family adds to the harness: its claims' privacy level (1/dFIL) and the
paper's attack MSE against 1/dFIL plot (with both Fisher bounds) on a board whose rows
sweep `inv_dfil`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.plugin.hooks import BoardPlot, PrivacyLevel, register_board_plot, register_privacy_level


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
# A dFIL claim states its level as 1/dFIL, and a higher 1/dFIL is the stronger claim.
register_privacy_level(PrivacyLevel("inv_dfil", "1/dFIL", "dfil", higher_is_stronger=True))
