"""A run's progress (bench.run.progress): the ETA is seeded from the committed boards before
any job ends and corrected by the jobs that do; piped output gets a line per finished job and
one whenever it would otherwise stay quiet; a terminal gets the bar."""

from __future__ import annotations

import io
import re
import time
from dataclasses import replace

import pytest

from bench.report.tools.estimate import Seed
from bench.run.progress import Eta, RunProgress, clock, seeded_times
from tests.conftest import stub_job


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _jobs(n: int, attack: str | None = None) -> list:
    return [replace(stub_job(seed=i), attack=attack) for i in range(n)]


def test_the_eta_is_the_seeded_work_over_the_workers_before_any_job_ends() -> None:
    jobs = _jobs(4)
    now = Clock()
    eta = Eta(jobs, {j.hash: Seed(30.0) for j in jobs}, workers=2, now=now)
    assert eta.remaining() == pytest.approx(60.0)
    eta.started(jobs[0])
    now.t = 10.0
    assert eta.remaining() == pytest.approx((20 + 30 * 3) / 2)


def test_finished_jobs_correct_the_seeds_of_their_stage() -> None:
    utility, attack = _jobs(6), _jobs(6, attack="inverter")
    now = Clock()
    seeds = {j.hash: Seed(10.0) for j in [*utility, *attack]}
    eta = Eta([*utility, *attack], seeds, workers=1, now=now)
    for job in utility[:4]:  # utility jobs take three times their seed
        eta.started(job)
        eta.finished(job, 30.0)
    ratio = eta.ratio("utility")
    assert 2.5 < ratio < 3.0  # drawn toward the run's ratio by the prior
    assert eta.ratio() < ratio and eta.ratio("inverter") < ratio  # the attacks: less evidence
    left = eta.remaining()
    assert left == pytest.approx(2 * 10 * ratio + 6 * 10 * eta.ratio("inverter"))


def test_a_job_that_runs_over_pushes_the_eta_up_while_it_runs() -> None:
    jobs = _jobs(2)
    now = Clock()
    eta = Eta(jobs, {j.hash: Seed(5.0) for j in jobs}, workers=1, now=now)
    eta.started(jobs[0])
    now.t = 4.0
    early = eta.remaining()
    now.t = 40.0
    late = eta.remaining()
    assert early == pytest.approx(1 + 5) and late == pytest.approx(10 + 5)


def test_an_artifact_jobs_share_is_expected_of_the_first_of_them_to_start() -> None:
    """Three settings share a 60 s artifact (one build per seed): whichever job starts first
    is expected to build it, the others only to add their own 2 s."""
    jobs = _jobs(3)
    now = Clock()
    seeds = {j.hash: Seed(2.0, 60.0, "loo@0") for j in jobs}
    eta = Eta(jobs, seeds, workers=1, now=now)
    assert eta.remaining() == pytest.approx(3 * 2 + 60)  # before any starts: built once
    eta.started(jobs[2])
    assert eta.remaining() == pytest.approx(62 + 2 + 2)
    now.t = 62.0
    eta.finished(jobs[2], 62.0)
    assert eta.ratio() == pytest.approx(1.0) and eta.remaining() == pytest.approx(4.0)


def test_jobs_no_board_times_are_unknown_until_the_first_one_ends() -> None:
    jobs = _jobs(3)
    eta = Eta(jobs, {}, workers=1, now=Clock())
    assert eta.remaining() is None
    eta.finished(jobs[0], 12.0)
    assert eta.remaining() == pytest.approx(24.0)
    eta.dropped(1)  # one stored by another runner
    assert eta.remaining() == pytest.approx(12.0)


def test_piped_output_gets_a_line_per_finished_job_and_one_when_quiet() -> None:
    jobs = _jobs(3)
    out = io.StringIO()
    seeds = {j.hash: Seed(1.0) for j in jobs}
    with RunProgress(jobs, workers=1, stream=out, terminal=False, interval_s=0.2, seeds=seeds) as p:
        p.started(jobs[0])
        p.finished(jobs[0], True, 1.5)
        p.started(jobs[1])
        time.sleep(0.5)  # nothing ends: the display says what runs
        p.finished(jobs[1], False)
        p.started(jobs[2])
        p.finished(jobs[2], True, 0.2)
    lines = out.getvalue().splitlines()
    assert lines[0] == "3 jobs to run, eta 0:03 (from committed boards)"
    assert re.fullmatch(
        r"\[1/3\] 0:00 elapsed, eta 0:0\d: done fmnist / identity / utility / seed 0 in 1\.5 s",
        lines[1],
    )
    assert any("running fmnist / identity / utility / seed 1" in line for line in lines[2:-2])
    assert "failed fmnist / identity / utility / seed 1" in lines[-2]
    assert lines[-1].startswith("[3/3] ") and "eta 0:00" in lines[-1]


def test_jobs_no_committed_board_has_timed_open_with_an_unknown_estimate() -> None:
    out = io.StringIO()
    with RunProgress(_jobs(2), workers=1, stream=out, terminal=False, seeds={}):
        pass
    first = out.getvalue().splitlines()[0]
    assert (
        first
        == "2 jobs to run, eta unknown until the first job finishes (no committed timing for them)"
    )


def test_a_terminal_gets_the_bar_and_a_disabled_display_shows_nothing() -> None:
    jobs = _jobs(2)
    out = io.StringIO()
    with RunProgress(jobs, stream=out, terminal=True, seeds={}) as p:
        p.started(jobs[0])
        p.finished(jobs[0], True, 3.0)
    assert "1/2" in out.getvalue() and "eta" in out.getvalue()
    quiet = io.StringIO()
    with RunProgress(jobs, enabled=False, stream=quiet, terminal=False) as p:
        p.finished(jobs[0], True, 3.0)
    assert quiet.getvalue() == ""


def test_seeds_come_from_the_committed_board_of_the_same_setting() -> None:
    """A smoke job's seed is its row's time on the committed smoke board."""
    from bench.run.publish import expand_suite

    _, jobs = expand_suite("smoke", check_device=False)
    seeds = seeded_times(jobs)
    assert set(seeds) == {j.hash for j in jobs}
    assert 30 < sum(s.total for s in seeds.values()) < 600
    # The VAE prior is trained once per seed and shared by every mechanism's vae-prior job.
    groups = {seeds[j.hash].group for j in jobs if j.attack == "vae-prior"}
    assert len(groups) == 2 and all(g and g.endswith(("@0", "@1")) for g in groups)


def test_clock() -> None:
    assert (clock(5), clock(65), clock(3725)) == ("0:05", "1:05", "1:02:05")
