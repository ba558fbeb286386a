"""docs/posthoc.md's attribution table is the one docs/scripts/posthoc_attribution_table.py
writes from the committed posthoc-attribution boards and the paper's cells: a re-run board
that moves a number makes this fail until the page is rewritten."""

from __future__ import annotations

from tests.docs import assert_block_is_current, doc_script


def test_the_pages_attribution_table_is_the_committed_boards() -> None:
    assert_block_is_current(
        "posthoc.md",
        doc_script("posthoc_attribution_table"),
        "python docs/scripts/posthoc_attribution_table.py --write",
    )


def test_a_step_that_does_not_apply_to_a_variant_carries_the_step_before() -> None:
    script = doc_script("posthoc_attribution_table")
    labels = [label for label, _, _ in script.STEPS]
    weights = next(i for i, label in enumerate(labels) if "ARL weights" in label)
    assert script.carried(weights, "encoder") and script.carried(weights, "c")
    assert not script.carried(weights, "arl") and not script.carried(weights, "arl-c-n")
    assert script.own_params(script.STEPS[weights][2], "arl")["alpha"] == 0.9
    assert "alpha" not in script.own_params(script.STEPS[weights][2], "encoder")


def test_a_row_beside_the_chain_shows_only_the_variants_its_board_holds() -> None:
    script = doc_script("posthoc_attribution_table")
    boards = [board for _, board, _ in script.SIDE_STEPS]
    index = boards.index("posthoc-attribution-beside")  # the ARL weight row, arl-c-n only
    own = script.SIDE_STEPS[index][2]
    params = {**script.DEFAULTS, **script.own_params(own, "arl-c-n"), "variant": "arl-c-n"}
    rows = {"posthoc-attribution-beside": [{"params": {**params, "eps": 5.0}, "metrics": {}}]}
    assert not script.absent(rows, index, script.SIDE_STEPS, "arl-c-n")
    assert script.absent(rows, index, script.SIDE_STEPS, "encoder")
    last = len(script.STEPS) - 1  # a chain step with no row still shows, as "not run"
    assert not script.absent({script.STEPS[last][1]: []}, last, script.STEPS, "encoder")
