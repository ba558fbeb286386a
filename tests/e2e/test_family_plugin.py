"""A mechanism family added from outside the tree (tests/plugins/bench_family_plugin.py,
installed through its entry point only) brings its own privacy notion, its own audit and its
own board plot, with no edit under bench/, and a suite run uses all three: the rows claim
that notion and carry that audit's bound, the board names the claim and has that plot."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT, run_cli

PLUGINS = ROOT / "tests" / "plugins"
SUITE = """
name = "family-plugin"
version = "1"
description = "A plug-in family's mechanism at two privacy levels."
seeds = 1

[[task]]
name = "gaussian"
n_train = 200
n_aux = 50
n_test = 100
train_epochs = 2

[[mechanism]]
name = "test-coin"
grid = { eps = [0.5, 2.0] }
"""


def test_a_plugin_family_brings_its_own_notion_audit_and_board_plot(tmp_path: Path) -> None:
    from tests.plugins.bench_family_plugin import COIN_DRAWS, NOTION, PLOT_SUFFIX

    suite = tmp_path / "family-plugin.toml"
    suite.write_text(SUITE)
    board = tmp_path / "board"
    store = tmp_path / "results.sqlite"
    args = ("run", "--suite", str(suite), "--store", str(store), "--out", str(board))
    run_cli(*args, "--no-progress", cwd=tmp_path, extra_path=(PLUGINS,), check=True)

    rows = json.loads((board / "leaderboard.json").read_text())["rows"]
    coin_rows = [r for r in rows if r["mechanism"] == "test-coin"]
    coin = {r["params"]["eps"]: r["metrics"] for r in coin_rows}
    assert sorted(coin) == [0.5, 2.0]
    for row in coin_rows:  # the family's own notion, at its own level parameter
        assert row["guarantee"]["notion"] == NOTION.name
        assert row["guarantee"][NOTION.level.param] == row["params"]["eps"]
    for eps, metrics in coin.items():
        # The family's audit ran (its draw count), not the input-pair one: it bounds one
        # coordinate's eps, just under the truth; the input-pair audit of the whole-input
        # claim (784 eps) would bound far more than one coordinate's loss.
        assert metrics["audit_draws"]["value"] == COIN_DRAWS
        assert 0.8 * eps < metrics["eps_audit_lb"]["value"] <= eps
    plot = board / "plots" / f"gaussian_{PLOT_SUFFIX}.png"
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (board / "index.html").read_text()
    assert f"plots/gaussian_{PLOT_SUFFIX}.png" in page
    assert "audit bound against eps per coordinate" in page
    assert f"{NOTION.words} ({NOTION.level.symbol}=0.5)" in page  # the claim, in its words
