"""docs/lucid.md's membership-inference tables are those docs/scripts/membership_tables.py
writes from the committed lucid-adult, lucid-tabular and default boards: a re-run board
that moves a number makes this fail until the page is rewritten."""

from __future__ import annotations

from types import ModuleType

from tests.docs import assert_block_is_current, doc_script


def _script() -> ModuleType:
    return doc_script("membership_tables")


def test_the_pages_membership_tables_are_the_committed_boards() -> None:
    assert_block_is_current(
        "lucid.md", _script(), "python docs/scripts/membership_tables.py --write"
    )


def test_the_prior_line_table_lists_only_rows_without_a_membership_signal() -> None:
    script = _script()
    rows = [
        {"task": "t", "mechanism": "naive-noise", "params": {"eps": 0.0}, "attack": None},
        {"task": "t", "mechanism": "naive-noise", "params": {"eps": 1.0}, "attack": None},
        {"task": "t", "mechanism": "label-only", "params": {}, "attack": None},
        {
            "task": "t",
            "mechanism": "dp-sgd",
            "params": {"eps": 1.0},
            "attack": None,
            "constant_predictor": True,
        },
    ]
    for row in list(rows):
        for attack in script.ATTACKS:
            metric = {"value": 0.5, "ci": [0.45, 0.55], "n": 10}
            rows.append({**row, "attack": attack, "metrics": {"mia_auc": metric}})
    lines = script.prior_line_table([("b", "t", rows)])
    assert len(lines) == 4  # header, rule, naive-noise eps 0, the constant predictor
    assert "naive-noise eps 0: every answer uniform" in lines[2]
    assert "dp-sgd eps 1: one class" in lines[3]
    assert lines[2].count("0.5 [0.45, 0.55]") == 3
