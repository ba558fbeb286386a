"""The Posthoc Fig. 3 plot: mean local Lipschitz constant by ARL weight, one bar per radius."""

from __future__ import annotations

from pathlib import Path

from bench.report.html import _task_plots
from bench.report.posthoc_plots import _panels, write_posthoc_plots
from bench.report.write import write_leaderboard


def _row(params: dict, lipschitz: float | None, attack: str | None = None) -> dict:
    metrics = {"accuracy": {"value": 0.8, "ci": [0.7, 0.9], "n": 40}}
    if lipschitz is not None:
        metrics["local_lipschitz"] = {
            "value": lipschitz, "ci": [0.9 * lipschitz, 1.1 * lipschitz], "n": 60,
        }  # fmt: skip
    return {"task": "faces", "mechanism": "posthoc-ptr", "params": params, "attack": attack,
            "attack_params": {}, "seeds": 3, "metrics": metrics,
            "guarantee": {"notion": "reconstruction"}}  # fmt: skip


def _sweep() -> list[dict]:
    rows = []
    for alpha in (0.0, 0.5, 0.99):
        for radius in (0.05, 0.1):
            params = {"alpha": alpha, "R": radius, "eps": 10.0, "variant": "arl"}
            rows.append(_row(params, 20.0 * (1 - alpha) + radius))
            rows.append(_row(params, None, attack="inverter"))  # attack rows: not plotted
    return rows


def test_a_sweep_over_alpha_is_one_panel_of_utility_rows() -> None:
    panels = _panels(_sweep())
    assert list(panels) == ["faces"]
    (rows,) = panels["faces"].values()
    assert len(rows) == 6 and all(r["attack"] is None for r in rows)


def test_a_single_alpha_gets_no_plot(tmp_path: Path) -> None:
    """Table 1's rows (one alpha, several eps) are no Fig. 3 sweep."""
    rows = [_row({"alpha": 0.99, "R": 0.1, "eps": e, "variant": "arl"}, 2.0) for e in (1, 10)]
    assert _panels(rows) == {}
    assert write_posthoc_plots(rows, tmp_path) == []


def test_the_leaderboard_page_shows_the_fig3_plot(tmp_path: Path) -> None:
    written = write_leaderboard("posthoc-test", "1", _sweep(), tmp_path, code_version="x")
    plot = tmp_path / "plots" / "faces_lipschitz_vs_alpha.png"
    assert plot in written and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shown = {p["path"]: p["caption"] for p in _task_plots(tmp_path, "faces")}
    assert "local Lipschitz" in shown["plots/faces_lipschitz_vs_alpha.png"]
    assert "local_lipschitz" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
