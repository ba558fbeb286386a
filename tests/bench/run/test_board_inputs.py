"""A rerun with nothing new leaves the leaderboard alone without rebuilding a row: the page
carries a digest of its inputs (bench.api.board_inputs), and any change to those inputs
(another store, another suite version, another job) makes the page stale again."""

from __future__ import annotations

from pathlib import Path

import pytest

import bench.run.publish as api
from bench.metrics.stats import scalar, summarize
from bench.run.job import Job
from bench.store.results import ResultStore
from bench.suite.read import Suite, load_suite
from tests.conftest import stub_job

SUITE = """
name = "inputs"
version = "1"
seeds = 2

[[task]]
name = "fmnist"

[[mechanism]]
name = "identity"
"""


def _store(path: Path, jobs: list[Job]) -> ResultStore:
    store = ResultStore(path)
    for job in jobs:
        metrics = {"accuracy": summarize([0.5, 0.75, 1.0], seed=job.seed), "fit_s": scalar(1.0)}
        store.write(job, metrics, {"notion": "none"}, duration_s=1.0)
    return store


@pytest.fixture
def suite(tmp_path: Path) -> Suite:
    path = tmp_path / "inputs.toml"
    path.write_text(SUITE)
    return load_suite(str(path))


def test_a_stamped_page_is_left_alone_without_building_rows(tmp_path, suite, monkeypatch) -> None:
    jobs = [stub_job(0), stub_job(1)]
    store = _store(tmp_path / "a.sqlite", jobs)
    out = tmp_path / "lb"
    api.write_suite_leaderboard(suite, jobs, store, out)
    page = (out / "index.html").read_text()
    assert f'<meta name="bench-inputs" content="{api.board_inputs(suite, jobs, store)}">' in page
    written = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}

    def no_rows(*_args, **_kwargs):
        raise AssertionError("rows rebuilt for a page that already shows these inputs")

    monkeypatch.setattr(api, "build_rows", no_rows)
    assert api.write_suite_leaderboard(suite, jobs, store, out, only_if_stale=True) == [
        out / "leaderboard.json"
    ]
    assert written == {p: p.stat().st_mtime_ns for p in written}


def test_other_inputs_give_another_digest(tmp_path, suite) -> None:
    jobs = [stub_job(0), stub_job(1)]
    store = _store(tmp_path / "a.sqlite", jobs)
    base = api.board_inputs(suite, jobs, store)
    assert api.board_inputs(suite, jobs, store) == base  # deterministic
    # The same jobs stored elsewhere (another run, another machine) are other results.
    store.close()
    other = tmp_path / "b.sqlite"
    (tmp_path / "a.sqlite").rename(other)
    moved = ResultStore(other)
    with moved._conn:
        moved._conn.execute("UPDATE jobs SET created_at = '2001-01-01T00:00:00+00:00'")
    assert api.board_inputs(suite, jobs, moved) != base
    bumped = Suite(**{**vars(suite), "version": "2"})
    assert api.board_inputs(bumped, jobs, moved) != api.board_inputs(suite, jobs, moved)
    fewer = api.board_inputs(suite, jobs[:1], moved)
    assert fewer != api.board_inputs(suite, jobs, moved)


def test_a_page_without_the_stamp_is_checked_row_by_row(tmp_path, suite) -> None:
    jobs = [stub_job(0), stub_job(1)]
    store = _store(tmp_path / "a.sqlite", jobs)
    out = tmp_path / "lb"
    api.write_suite_leaderboard(suite, jobs, store, out)
    page = out / "index.html"
    page.write_text(page.read_text().replace('name="bench-inputs"', 'name="other"'))
    board = (out / "leaderboard.json").read_bytes()
    # Rows rebuilt, found equal to the JSON on disk, and the page kept as it is.
    api.write_suite_leaderboard(suite, jobs, store, out, only_if_stale=True)
    assert 'name="bench-inputs"' not in page.read_text()
    assert (out / "leaderboard.json").read_bytes() == board
    # A store with another result for a job is not these inputs: everything is rewritten.
    store._conn.execute("UPDATE results SET value = 0.25 WHERE metric = 'accuracy'")
    store._conn.execute("UPDATE jobs SET created_at = '2099-01-01T00:00:00+00:00'")
    store._conn.commit()
    api.write_suite_leaderboard(suite, jobs, store, out, only_if_stale=True)
    assert 'name="bench-inputs"' in page.read_text()
    assert (out / "leaderboard.json").read_bytes() != board
