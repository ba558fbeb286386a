"""At-chance rows say why, computed from the task's unprotected reference row: the data (the
unprotected model is at chance too) or the protection (it beats chance)."""

from __future__ import annotations

import html
import json
from pathlib import Path

from bench.report.board.labels import flag_rows
from bench.report.board.write import write_leaderboard


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
    write_leaderboard("chance-test", "1", rows, tmp_path, code_version="0.1.0+a")
    doc = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))
    reasons = [r.get("at_chance_reason", "") for r in doc["rows"]]
    assert all(reasons)
    md = (tmp_path / "leaderboard.md").read_text(encoding="utf-8")
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    for reason in reasons:
        assert reason in md and html.escape(reason, quote=False) in page


def _scored(mech: str, auc: tuple[float, float, float], modal: float) -> dict:
    value, lo, hi = auc
    return {"task": "movielens", "mechanism": mech, "params": {}, "attack": None,
            "attack_params": {}, "seeds": 3, "guarantee": {"notion": "none"},
            "metrics": {"auc": {"value": value, "ci": [lo, hi], "n": 3},
                        "accuracy": {"value": 0.873, "ci": [0.873, 0.873], "n": 3},
                        "modal_prediction_share": {"value": modal, "ci": [modal, modal], "n": 3},
                        "chance": {"value": 0.5, "ci": [0.5, 0.5], "n": 3}}}  # fmt: skip


def test_constant_predictor_reads_the_tasks_utility_metric() -> None:
    # On an AUC task with a rare positive class a good ranker predicts the majority class
    # everywhere (argmax share 1.0); only a score that ranks nothing is constant.
    ranker = _scored("identity", (0.749, 0.74, 0.76), modal=1.0)
    flat = _scored("flat", (0.5, 0.5, 0.5), modal=1.0)
    flag_rows([ranker, flat], "auc")
    assert "constant_predictor" not in ranker and flat["constant_predictor"] is True
    # On an accuracy task the argmax share decides.
    one_class = _utility("german", "lucid", "idp", 0.745, 0.745)
    one_class["metrics"]["modal_prediction_share"] = {"value": 1.0, "ci": [1.0, 1.0], "n": 3}
    flag_rows([one_class], "accuracy")
    assert one_class["constant_predictor"] is True


def test_refresh_rewrites_a_committed_board_with_the_current_flags(tmp_path: Path) -> None:
    from bench.report.board.write import refresh_board

    board = tmp_path / "movielens"
    stale = _scored("identity", (0.749, 0.74, 0.76), modal=1.0)
    stale["constant_predictor"] = True  # what the argmax-share rule wrote on an AUC task
    stale.update(unreliable=True, unreliable_reason="a rule that no longer holds")
    doc = {"suite": "s", "suite_version": "1", "generated_at": "2026-01-01T00:00:00+00:00",
           "code_version": "0.1.0+c", "rows": [stale]}  # fmt: skip
    board.mkdir()
    (board / "leaderboard.json").write_text(json.dumps(doc))
    refresh_board(board)
    fresh = json.loads((board / "leaderboard.json").read_text())
    assert "constant_predictor" not in fresh["rows"][0]
    assert fresh["rows"][0]["unreliable"] is False and "unreliable_reason" not in fresh["rows"][0]
    assert fresh["rows"][0]["metrics"] == stale["metrics"]
    assert (fresh["generated_at"], fresh["code_version"]) == (doc["generated_at"], "0.1.0+c")
    assert (board / "index.html").is_file() and (board / "leaderboard.md").is_file()
    # Reconstructed sentences come from the store: such a board keeps its Markdown.
    (board / "leaderboard.md").write_text("Reconstructed sentences (seed 0):\n- 1: `a b`\n")
    written = refresh_board(board)
    assert (board / "leaderboard.md").read_text().endswith("- 1: `a b`\n")
    assert board / "leaderboard.md" not in written
