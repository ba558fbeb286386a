"""The result store never duplicates or half-writes a job; the artifact cache rebuilds a
corrupt entry instead of using it."""

from __future__ import annotations

import sqlite3
import time

import numpy as np
import pytest

from bench.core.errors import ConfigError
from bench.metrics import MetricResult
from bench.plugin.artifacts import ArtifactCache
from bench.store.results import ResultStore, cpu_description
from tests.conftest import stub_job

METRICS = {
    "accuracy": MetricResult(0.5, (0.4, 0.6), 4, np.array([0.0, 1.0, 1.0, 0.0])),
    "fit_s": MetricResult(1.0, (1.0, 1.0), 1),
}


def test_second_write_of_a_job_is_a_no_op(tmp_path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    assert store.write(stub_job(), METRICS, {"notion": "none"}, 1.0) is True
    assert store.write(stub_job(), METRICS, {"notion": "none"}, 2.0) is False
    other = ResultStore(tmp_path / "r.sqlite")  # a second connection sees one copy
    (loaded,) = other.load([stub_job().hash])
    assert set(loaded["metrics"]) == {"accuracy", "fit_s"}
    np.testing.assert_array_equal(loaded["metrics"]["accuracy"].samples, [0, 1, 1, 0])
    assert loaded["metrics"]["fit_s"].samples is None
    assert other.stored_hashes([stub_job().hash, stub_job(1).hash]) == {stub_job().hash}


def test_a_read_only_store_reads_every_job_and_writes_nothing(tmp_path) -> None:
    """ResultStore.read_only lists and loads what a writer stored, cannot write, leaves the
    file's bytes as they were, and refuses a path with no store."""
    path = tmp_path / "r.sqlite"
    writer = ResultStore(path)
    for seed in (0, 1):
        writer.write(stub_job(seed), METRICS, {"notion": "none"}, 1.0)
    writer.close()
    before = path.read_bytes()
    reader = ResultStore.read_only(path)
    assert sorted(reader.all_hashes()) == sorted([stub_job(0).hash, stub_job(1).hash])
    (loaded, _) = reader.load(reader.all_hashes())
    assert loaded["metrics"]["accuracy"].value == 0.5
    with pytest.raises(sqlite3.OperationalError):
        reader.write(stub_job(2), METRICS, {"notion": "none"}, 1.0)
    reader.close()
    assert path.read_bytes() == before
    with pytest.raises(ConfigError, match="no result store"):
        ResultStore.read_only(tmp_path / "absent.sqlite")


def test_a_failing_write_leaves_nothing(tmp_path) -> None:
    store = ResultStore(tmp_path / "r.sqlite")
    bad = {**METRICS, "broken": MetricResult(float("nan"), (0, 0), "not-an-int")}  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.write(stub_job(), bad, {"notion": "none"}, 1.0)
    assert store.stored_hashes([stub_job().hash]) == set()
    assert store.write(stub_job(), METRICS, {"notion": "none"}, 1.0) is True


def test_cache_builds_once_and_reuses(tmp_path) -> None:
    cache = ArtifactCache(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"w": np.arange(3)}

    cache.get_or_build({"k": 1}, build)
    again = cache.get_or_build({"k": 1}, build)
    assert len(calls) == 1
    np.testing.assert_array_equal(again["w"], [0, 1, 2])


def test_corrupt_cache_entry_is_rebuilt(tmp_path) -> None:
    cache = ArtifactCache(tmp_path)
    cache.get_or_build({"k": 2}, lambda: {"v": 1})
    blob = tmp_path / cache.key({"k": 2}) / "artifact.pt"
    blob.write_bytes(blob.read_bytes()[:-5] + b"xxxxx")
    assert cache.get_or_build({"k": 2}, lambda: {"v": 2}) == {"v": 2}
    assert not [
        p for p in (tmp_path / cache.key({"k": 2})).iterdir() if p.name.startswith(".artifact")
    ]


def test_reused_artifact_reports_its_recorded_build_time(tmp_path) -> None:
    first = ArtifactCache(tmp_path)
    first.get_or_build({"k": 3}, lambda: time.sleep(0.2) or {"v": 1})
    assert first.build_seconds >= 0.2
    second = ArtifactCache(tmp_path)
    assert second.get_or_build({"k": 3}, lambda: {"v": 9}) == {"v": 1}
    # The fit cost of a job does not depend on whether the cache was warm.
    assert second.build_seconds == pytest.approx(first.build_seconds, abs=1e-5)
    assert second.seconds_inside < first.build_seconds


def test_an_artifact_does_not_depend_on_the_global_rng_state_before_it(tmp_path) -> None:
    """A build that draws from torch's global RNG (a module's default init does) gives the
    same artifact whatever the process drew before, and leaves the caller's stream alone."""
    import torch

    def build() -> torch.Tensor:
        return torch.nn.Linear(4, 3).weight.detach().clone()

    built = []
    for i, before in enumerate((0, 7)):
        torch.manual_seed(123)
        torch.rand(before)  # another job order: the global stream is elsewhere
        built.append(ArtifactCache(tmp_path / f"c{i}").get_or_build({"a": "net"}, build))
        after = torch.rand(1)
        torch.manual_seed(123)
        torch.rand(before)
        assert torch.equal(after, torch.rand(1))  # the caller's stream is untouched
    assert torch.equal(built[0], built[1])


def test_an_artifact_is_rebuilt_when_the_code_below_its_builder_changes(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached artifact made by project code is handed out only to the same code: a new
    version of the builder's modules (any helper they import) gets a new entry, built with
    the seed of the unchanged recipe, so the same code rebuilds the same artifact."""
    import torch

    from bench.plugin import artifacts as cache_module

    version = {"now": "old"}
    monkeypatch.setattr(cache_module, "_builder_modules", lambda build, caller: ("bench.x",))
    monkeypatch.setattr(cache_module, "code_digest", lambda *m, **k: version["now"])
    builds: list[torch.Tensor] = []

    def build() -> torch.Tensor:
        builds.append(torch.rand(3))  # from the global RNG, which the recipe's key seeds
        return builds[-1]

    cache = ArtifactCache(tmp_path)
    first = cache.get_or_build({"k": 1}, build)
    assert torch.equal(cache.get_or_build({"k": 1}, build), first) and len(builds) == 1
    version["now"] = "new"
    assert torch.equal(cache.get_or_build({"k": 1}, build), first) and len(builds) == 2


def test_the_builder_modules_are_the_project_code_that_makes_the_artifact(tmp_path) -> None:
    import functools
    import sys

    from bench.core.hashing import derive_seed
    from bench.plugin.artifacts import _builder_modules

    here = sys._getframe()  # a test module: not project code, so not part of the key
    assert _builder_modules(lambda: 0, here) == ()
    assert _builder_modules(functools.partial(derive_seed, 1, "x"), here) == ("bench.core.hashing",)
    key = ArtifactCache(tmp_path).key({"k": 1})
    assert ArtifactCache.entry_key(key, ()) == key
    assert ArtifactCache.entry_key(key, ("bench.core.hashing",)) != key


def test_the_cpu_model_and_vector_extensions_are_read_from_cpuinfo() -> None:
    """The model name and the float-relevant flags of the first processor, in a fixed order;
    other flags and later processors are left out."""
    cpuinfo = (
        "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\n"
        "flags\t\t: fpu avx512f sse4_2 avx2 amx_tile avx fma ht\n\n"
        "processor\t: 1\nmodel name\t: Other\nflags\t\t: avx\n"
    )
    assert cpu_description(cpuinfo) == {
        "cpu_model": "Intel(R) Xeon(R) Processor",
        "cpu_features": "sse4_2 avx avx2 fma avx512f amx_tile",
    }
    assert cpu_description("") == {}
