"""The end-of-run summary shows each setting's utility with its CI and the flags a reader
must see before trusting it."""

from __future__ import annotations

from bench.report.board.summary import summary_lines


def _row(mech: str, acc: float, **flags) -> dict:
    return {"task": "adult", "mechanism": mech, "params": {"eps": 1.0}, "attack": None,
            "metrics": {"accuracy": {"value": acc, "ci": [acc - 0.01, acc + 0.02], "n": 9}},
            **flags}  # fmt: skip


def test_utility_has_its_ci_and_flags() -> None:
    rows = [_row("dp-sgd", 0.759, at_chance=True, constant_predictor=True), _row("lucid", 0.8)]
    lines = summary_lines(rows, {"dp-sgd": {}, "lucid": {}}, {"adult": "accuracy"})
    dp, lucid = (next(line for line in lines if m in line) for m in ("dp-sgd", "lucid"))
    assert "0.759 [0.749, 0.779]" in dp and dp.endswith("[AT CHANCE, CONSTANT]")
    assert "0.8 [0.79, 0.82]" in lucid and "AT CHANCE" not in lucid
