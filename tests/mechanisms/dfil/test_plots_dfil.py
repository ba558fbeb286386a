"""The dFIL plot: attack MSE against 1/dFIL with both bounds, one panel per sweep."""

from __future__ import annotations

from pathlib import Path

from mechanisms.dfil.plots import _bound_curve, _panels, _title, write_dfil_plots


def _row(mech: str, params: dict, attack: str | None, mse: float, bound: float) -> dict:
    metrics = {"mse": {"value": mse, "ci": [0.9 * mse, 1.1 * mse], "n": 8}}
    if attack is not None:
        metrics["bound_mse"] = {"value": bound, "ci": [bound, bound], "n": 1}
    return {"task": "gaussian", "mechanism": mech, "params": params, "attack": attack,
            "attack_params": {}, "seeds": 1, "metrics": metrics}  # fmt: skip


def _rows() -> list[dict]:
    rows = []
    for t in (0.01, 0.1, 1.0):
        for split in ("early", "late"):
            params = {"inv_dfil": t, "split": split}
            rows.append(_row("dfil", params, "optimization", t, t))
            rows.append(_row("dfil", params, "map", 1 / (1 / t + 400), 1 / (1 / t + 400)))
            rows.append(_row("dfil", params, None, 0.0, 0.0))  # utility row: not plotted
    rows.append(_row("gauss-input", {"eps": 1.0}, "map", 0.1, 0.1))  # no 1/dFIL sweep
    return rows


def test_rows_group_into_one_panel_per_sweep_with_both_bound_curves() -> None:
    panels = _panels(_rows())
    assert list(panels) == ["gaussian"]
    assert len(panels["gaussian"]) == 2  # split early and split late
    rows = next(iter(panels["gaussian"].values()))
    assert _bound_curve(rows, unbiased=True) == [(0.01, 0.01), (0.1, 0.1), (1.0, 1.0)]
    assert [round(b, 6) for _, b in _bound_curve(rows, unbiased=False)] == [
        round(1 / (1 / t + 400), 6) for t in (0.01, 0.1, 1.0)
    ]


def test_write_dfil_plots_writes_a_png_per_task(tmp_path: Path) -> None:
    paths = write_dfil_plots(_rows(), tmp_path)
    assert paths == [tmp_path / "plots" / "gaussian_dfil_bounds.png"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert write_dfil_plots([r for r in _rows() if r["mechanism"] != "dfil"], tmp_path) == []


def test_panel_titles_name_the_parameters_that_differ() -> None:
    keys = [("dfil", '{"split":"early","x":1}'), ("dfil", '{"split":"late","x":1}')]
    assert _title(keys[1], keys) == "dfil split=late"


def test_the_leaderboard_writes_the_dfil_plot_next_to_its_own(tmp_path: Path) -> None:
    from bench.report.board.write import write_leaderboard

    rows = [{**r, "guarantee": {"notion": "dfil"}} for r in _rows()]
    written = write_leaderboard("dfil-test", "1", rows, tmp_path, code_version="x")
    plot = tmp_path / "plots" / "gaussian_dfil_bounds.png"
    assert plot in written and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # A suite without a 1/dFIL sweep gets no such plot.
    other = [r for r in rows if r["mechanism"] != "dfil"]
    assert not any(
        p.name.endswith("_dfil_bounds.png")
        for p in write_leaderboard("x", "1", other, tmp_path / "other", code_version="x")
    )
