"""The attribution study's README holds the attribution table that
studies/posthoc-attribution/probes/posthoc_attribution_table.py writes from the study's
committed boards and the paper's cells: a re-run board that moves a number makes this fail
until the README is rewritten."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import ROOT

STUDY = ROOT / "studies" / "posthoc-attribution"


def table_script() -> ModuleType:
    """The study's table script, imported as a module (the probes are not a package)."""
    path = STUDY / "probes" / "posthoc_attribution_table.py"
    spec = importlib.util.spec_from_file_location("posthoc_attribution_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readmes_attribution_table_is_the_committed_boards() -> None:
    script = table_script()
    text = (STUDY / "README.md").read_text()
    start, end = text.find(script.BEGIN), text.find(script.END)
    assert 0 <= start < end, f"the study README has no {script.BEGIN} block"
    assert text[start : end + len(script.END)] == script.block(), (
        "the README's table differs from the committed boards: run "
        "`python studies/posthoc-attribution/probes/posthoc_attribution_table.py --write`"
    )


def test_a_step_that_does_not_apply_to_a_variant_carries_the_step_before() -> None:
    script = table_script()
    labels = [label for label, _, _ in script.STEPS]
    weights = next(i for i, label in enumerate(labels) if "ARL weights" in label)
    assert script.carried(weights, "encoder") and script.carried(weights, "c")
    assert not script.carried(weights, "arl") and not script.carried(weights, "arl-c-n")
    assert script.own_params(script.STEPS[weights][2], "arl")["alpha"] == 0.9
    assert "alpha" not in script.own_params(script.STEPS[weights][2], "encoder")


def test_a_row_beside_the_chain_shows_only_the_variants_its_board_holds() -> None:
    script = table_script()
    boards = [board for _, board, _ in script.SIDE_STEPS]
    index = boards.index("posthoc-attribution-beside")  # the ARL weight row, arl-c-n only
    own = script.SIDE_STEPS[index][2]
    params = {**script.DEFAULTS, **script.own_params(own, "arl-c-n"), "variant": "arl-c-n"}
    rows = {"posthoc-attribution-beside": [{"params": {**params, "eps": 5.0}, "metrics": {}}]}
    assert not script.absent(rows, index, script.SIDE_STEPS, "arl-c-n")
    assert script.absent(rows, index, script.SIDE_STEPS, "encoder")
    last = len(script.STEPS) - 1  # a chain step with no row still shows, as "not run"
    assert not script.absent({script.STEPS[last][1]: []}, last, script.STEPS, "encoder")
