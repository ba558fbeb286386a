"""docs/submitting.md shows what its commands print: its output blocks are written by
docs/scripts/submitting_outputs.py from a real run, and here their deterministic parts are
checked against the code (the checks bench runs, their count, the test count of the
example's contract tests, the audit's bound read the same in both places), not timings;
the slow lane reruns the script and compares everything but the timings."""

from __future__ import annotations

import ast
import re
from types import ModuleType

import pytest

from bench.plugin.checks import CHECKS
from tests.conftest import ROOT
from tests.docs import doc_script

DOC = (ROOT / "docs" / "submitting.md").read_text()


def _script() -> ModuleType:
    return doc_script("submitting_outputs")


SCRIPT = _script()
BLOCKS = {m["name"]: m["body"] for m in SCRIPT.BLOCK.finditer(DOC)}


def _output(name: str) -> str:
    """The text inside block `name`'s fence."""
    match = SCRIPT.FENCE.search(BLOCKS[name])
    assert match is not None, name
    return match["text"]


def test_every_output_block_is_there_and_in_the_form_the_script_writes() -> None:
    assert set(BLOCKS) == {"validate", "pytest"}
    assert BLOCKS["validate"] == SCRIPT.render_validate(_output("validate"))
    tests = re.search(r"# (\d+) tests", BLOCKS["pytest"])
    assert tests is not None
    settings = SCRIPT.settings_in(DOC)
    rendered = SCRIPT.render_pytest(f"{tests[1]} tests collected in 1.0s\n", len(CHECKS), settings)
    assert BLOCKS["pytest"] == rendered


def test_the_example_package_is_built_from_the_page(tmp_path) -> None:
    root = SCRIPT.build_package(DOC, tmp_path)
    ast.parse((root / "pooled_gauss.py").read_text())
    entry = next(root.glob("*.dist-info")) / "entry_points.txt"
    assert "[bench.mechanisms]\npooled-gauss = pooled_gauss:PooledGauss" in entry.read_text()
    assert (root / "tests" / "test_pooled_gauss.py").is_file()


def test_validate_lists_every_check_bench_runs_and_passes_them() -> None:
    lines = _output("validate").splitlines()
    assert lines[0].startswith("validate pooled-gauss(eps=2.0) on fmnist (")
    checks = [line.split()[1] for line in lines if line.startswith("  ")]
    assert checks == [check.__name__ for check in CHECKS]
    assert all(line.split()[0] == "PASS" for line in lines if line.startswith("  "))
    assert lines[-1] == (
        f"validate: PASS — {len(CHECKS)} passed, 0 failed, 0 expected failures, 0 unexpected passes"
    )


def test_the_audit_bound_reads_the_same_in_the_check_and_the_audit_line() -> None:
    text = _output("validate")
    in_check = re.search(r"check_privacy_audit\s+eps_lb ([\d.]+) <= claimed eps 2\n", text)
    in_audit = re.search(r"\naudit: eps_lb ([\d.]+) <= claimed eps 2 at 95% confidence;", text)
    assert in_check is not None and in_audit is not None
    assert in_check[1] == in_audit[1]
    assert float(in_check[1]) <= 2


def test_pytest_count_is_every_check_for_every_setting() -> None:
    settings = SCRIPT.settings_in(DOC)
    assert settings == 2
    assert (
        f"# {len(CHECKS) * settings} tests: {len(CHECKS)} checks x 2 settings" in (BLOCKS["pytest"])
    )


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_a_fresh_run_writes_the_same_blocks_but_for_timings(tmp_path) -> None:
    """The script, run again, writes the page's blocks; only times may differ."""
    page = tmp_path / "submitting.md"
    page.write_text(DOC)
    SCRIPT.regenerate(page)
    # Timings and rates measure the machine, not the mechanism.
    times = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?(?: (?:s|ms/sample)\b|/s\b)")
    fresh = {m["name"]: times.sub("T", m["body"]) for m in SCRIPT.BLOCK.finditer(page.read_text())}
    assert fresh == {name: times.sub("T", body) for name, body in BLOCKS.items()}
