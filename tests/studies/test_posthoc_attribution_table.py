"""The attribution study's README holds the attribution table that
studies/posthoc-attribution/probes/posthoc_attribution_table.py writes from the study's
committed boards and the paper's cells: a re-run board that moves a number makes this fail
until the README is rewritten."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.conftest import ROOT

STUDY = ROOT / "studies" / "posthoc-attribution"


def table_script(name: str = "posthoc_attribution_table") -> ModuleType:
    """A table script of the study's probes, imported as a module (the probes are not a
    package)."""
    path = STUDY / "probes" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
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


def test_the_readmes_mnist_table_is_the_committed_mnist_board() -> None:
    script = table_script("mnist_attribution_table")
    text = (STUDY / "README.md").read_text()
    start, end = text.find(script.BEGIN), text.find(script.END)
    assert 0 <= start < end, f"the study README has no {script.BEGIN} block"
    assert text[start : end + len(script.END)] == script.block(), (
        "the README's MNIST table differs from the committed board: run "
        "`python studies/posthoc-attribution/probes/mnist_attribution_table.py --write`"
    )


def test_every_mnist_step_has_a_row_for_each_variant_at_eps_5_and_10() -> None:
    """The MNIST chain answers the question it was run for: each of the four variants has a
    row at every step and eps (c's from the public code's recipe on being encoder's)."""
    script = table_script("mnist_attribution_table")
    rows = script.base.utility_rows(script.BOARD)
    for index, (label, _, own) in enumerate(script.STEPS):
        for variant in script.VARIANTS:
            if script.carried(index, variant, script.STEPS):
                continue
            for eps in script.EPS:
                assert script.find(rows, own, variant, eps) is not None, (label, variant, eps)


def test_c_reads_encoders_row_only_under_the_public_codes_recipe() -> None:
    script = table_script("mnist_attribution_table")
    assert script.trained_as("c", {"recipe": "reference-code"}) == "encoder"
    assert script.trained_as("c", {"sensitivity": "reference-code"}) == "c"
    assert script.trained_as("arl", {"recipe": "reference-code"}) == "arl"
