"""The studies' suites are found by path and name mechanisms that take their parameters: a
row that sets one of the attribution switches names the study mechanism (posthoc-ptr has none
of them), and no study suite is left in bench's catalogue or a study board in leaderboards/."""

from __future__ import annotations

import pytest

from bench.plugin.registry import MECHANISMS
from bench.suite.read import load_suite
from studies.posthoc_attribution.mechanism import SWITCH_DEFAULTS, PosthocPTRReferenceCode
from tests.conftest import ROOT

SUITES = sorted((ROOT / "studies").glob("*/suites/*.toml"))
STUDY = "studies.posthoc_attribution.mechanism:PosthocPTRReferenceCode"


@pytest.mark.parametrize("path", SUITES, ids=lambda p: p.stem)
def test_every_study_suite_names_mechanisms_that_take_its_parameters(path) -> None:
    suite = load_suite(str(path))
    for entry in suite.mechanisms:
        cls = MECHANISMS.get(entry.name)
        for params in entry.param_sets():
            cls(**params)  # an unknown parameter is a ConfigError
            if set(params) & set(SWITCH_DEFAULTS):
                assert entry.name == STUDY and cls is PosthocPTRReferenceCode


def test_the_studies_live_in_studies_only() -> None:
    assert len(SUITES) == 9  # eight of the Posthoc attribution, one of the PTR solvers
    boards = {p.parent.name for p in (ROOT / "studies").glob("*/boards/*/leaderboard.json")}
    assert {p.stem for p in SUITES} == boards
    catalogue = {p.stem for p in (ROOT / "bench" / "suite" / "files").glob("*.toml")}
    committed = {p.name for p in (ROOT / "leaderboards").iterdir() if p.is_dir()}
    assert not boards & catalogue and not boards & committed
