"""`bench profile` splits stored job time by stage, task and kind of job, from the store's
own timings, and refuses a store it cannot read with one line."""

from __future__ import annotations

import dataclasses

from bench.metrics import MetricResult
from bench.report.tools.profile import profile_lines
from bench.store.results import ResultStore
from tests.bench.store.test_store_cache import METRICS
from tests.conftest import cli_here, stub_job


def _attack_job(seed: int):
    return dataclasses.replace(stub_job(seed), attack="inverter")


def test_profile_splits_time_by_stage_and_names_the_slowest_job(tmp_path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    store.write(stub_job(0), METRICS, {"notion": "none"}, 3.0)  # fit_s 1.0 of 3.0 s
    attack_metrics = {"attack_s": MetricResult(8.0, (8.0, 8.0), 1)}
    store.write(_attack_job(0), attack_metrics, {"notion": "none"}, 9.0)
    timings = store.timings()
    assert sorted(t["duration_s"] for t in timings) == [3.0, 9.0]
    assert store.timings([stub_job(0).hash])[0]["fit_s"] == 1.0
    store.close()
    text = "\n".join(profile_lines(timings, workers=2))
    assert "2 jobs, 12.0 s of job time" in text
    stages = {
        line.split("  ")[1].strip(): line.split()[-3]
        for line in text.splitlines()
        if line.startswith("  ") and " jobs " in line
    }
    assert stages["attack: inverter"] == "8.0"
    assert stages["mechanism fit (utility jobs)"] == "1.0"
    assert stages["rest of utility jobs"] == "2.0"
    slowest = text.split("slowest jobs")[1].splitlines()[1]
    assert "9.0 s" in slowest and "inverter" in slowest


def test_profile_of_a_missing_store_is_a_one_line_error(tmp_path, monkeypatch, capsys) -> None:
    proc = cli_here(monkeypatch, capsys, "profile", "--store", str(tmp_path / "none.sqlite"))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("bench: error: no result store")
    assert len(proc.stderr.strip().splitlines()) == 1
