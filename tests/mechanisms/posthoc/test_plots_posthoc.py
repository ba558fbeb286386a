"""The Posthoc sweep plots: Fig. 3 (mean local Lipschitz constant by ARL weight, a bar per
radius) and supplement Table 2 (attack SSIM against R, a line per eps)."""

from __future__ import annotations

from pathlib import Path

from bench.plugin.families import board_plots
from bench.report.board.html import _task_plots
from bench.report.board.write import refresh_reproductions, write_leaderboard
from mechanisms.posthoc.plots import _panels, _radius_panels, write_posthoc_plots


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
    written = write_leaderboard("posthoc-test", "1", _sweep(), tmp_path, code_version="0.1.0+a")
    plot = tmp_path / "plots" / "faces_lipschitz_vs_alpha.png"
    assert plot in written and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    family = {p.suffix: p for p in board_plots(["posthoc-ptr"])}
    shown = {p["path"]: p["caption"] for p in _task_plots(tmp_path, "faces", family)}
    assert "local Lipschitz" in shown["plots/faces_lipschitz_vs_alpha.png"]
    assert "local_lipschitz" in (tmp_path / "leaderboard.md").read_text(encoding="utf-8")


def _attack_row(variant: str, radius: float, eps: float, attack: str, ssim: float) -> dict:
    params = {"variant": variant, "R": radius, "eps": eps, "alpha": 0.99}
    metrics = {"ssim": {"value": ssim, "ci": [ssim - 0.01, ssim + 0.01], "n": 100},
               "ssim_prior": {"value": 0.18, "ci": [0.18, 0.18], "n": 100}}  # fmt: skip
    return {"task": "mnist", "mechanism": "posthoc-ptr", "params": params, "attack": attack,
            "attack_params": {}, "seeds": 3, "metrics": metrics,
            "guarantee": {"notion": "reconstruction"}}  # fmt: skip


def _table2() -> list[dict]:
    rows = [
        _attack_row("arl-c-n", radius, eps, attack, 0.3 - 0.1 * radius + 0.001 * eps)
        for radius in (0.1, 0.5, 1.0)
        for eps in (1.0, 10.0)
        for attack in ("inverter", "worst case")
    ]
    # Table 1's other variants sit at one radius: no SSIM-vs-R panel for them.
    rows += [_attack_row("encoder", 0.5, eps, "inverter", 0.2) for eps in (1.0, 10.0)]
    return rows


def test_supplement_table2_rows_give_one_panel_per_attack_of_the_swept_obfuscator() -> None:
    panels = _radius_panels(_table2())
    assert list(panels) == ["mnist"]
    keys = sorted(panels["mnist"])
    assert [label for label, _ in keys] == ["inverter", "worst case"]
    assert all('"variant":"arl-c-n"' in fixed for _, fixed in keys)
    assert all(len(rows) == 6 for rows in panels["mnist"].values())


def test_refreshing_a_committed_board_draws_the_paper_plots_from_its_json(
    tmp_path: Path,
) -> None:
    """`bench reproduce --write` redraws the sweep plots from leaderboard.json alone."""
    write_leaderboard("posthoc-test", "1", _table2() + _sweep(), tmp_path, code_version="0.1.0+a")
    for name in ("mnist_ssim_vs_radius.png", "faces_lipschitz_vs_alpha.png"):
        (tmp_path / "plots" / name).unlink()
    written = refresh_reproductions(tmp_path)
    for name in ("mnist_ssim_vs_radius.png", "faces_lipschitz_vs_alpha.png"):
        assert tmp_path / "plots" / name in written
        assert (tmp_path / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
