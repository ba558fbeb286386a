"""At-chance rows say why, computed from the task's unprotected reference row: the data (the
unprotected model is at chance too) or the protection (it beats chance)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from bench.report.labels import flag_rows
from bench.report.write import write_leaderboard


def _utility(task: str, mech: str, notion: str, acc: float, chance: float) -> dict:
    return {"task": task, "mechanism": mech, "params": {"eps": 1.0}, "attack": None,
            "attack_params": {}, "seeds": 3, "guarantee": {"notion": notion},
            "metrics": {"accuracy": {"value": acc, "ci": [acc - 0.02, acc + 0.02], "n": 200},
                        "chance": {"value": chance, "ci": [chance, chance], "n": 3}}}  # fmt: skip


def test_reasons_name_the_data_or_the_protection() -> None:
    german = [
        _utility("german", "label-only", "none", 0.673, 0.745),
        _utility("german", "lucid", "idp", 0.53, 0.745),
    ]
    spam = [
        _utility("spam", "label-only", "none", 0.838, 0.584),
        _utility("spam", "naive-noise", "idp", 0.49, 0.584),
        _utility("spam", "lucid", "idp", 0.807, 0.584),
    ]
    for rows in (german, spam):
        flag_rows(rows, "accuracy")
    assert "does not beat the best constant predictor" in german[0]["at_chance_reason"]
    assert german[1]["at_chance_reason"].startswith("the unprotected model on this task is at")
    assert "0.673 vs chance 0.745" in german[1]["at_chance_reason"]
    assert "the protection costs" in spam[1]["at_chance_reason"]
    assert "at_chance" not in spam[0] and "at_chance_reason" not in spam[2]


def test_without_an_unprotected_row_no_reason_is_invented() -> None:
    rows = [_utility("faces", "posthoc-ptr", "reconstruction", 0.5, 0.525)]
    flag_rows(rows, "accuracy")
    assert rows[0]["at_chance"] and "at_chance_reason" not in rows[0]


def test_the_reason_is_in_the_json_the_markdown_and_the_page(tmp_path: Path) -> None:
    rows = [
        _utility("german", "label-only", "none", 0.673, 0.745),
        _utility("german", "lucid", "idp", 0.53, 0.745),
    ]
    write_leaderboard("chance-test", "1", rows, tmp_path, code_version="x")
    doc = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))
    reasons = [r.get("at_chance_reason", "") for r in doc["rows"]]
    assert all(reasons)
    md = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    for reason in reasons:
        assert reason in md and html.escape(reason, quote=False) in page
