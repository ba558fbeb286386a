"""Per-job wall-clock limits: how long a job may run before its worker is killed and the job
is recorded as a `TimedOut` failure (bench.run.supervisor), so a plug-in whose fit never
returns cannot hold a run, and its lease, forever.

The limit of a job is, first found:

1. `bench run --job-timeout SECONDS`;
2. the suite's `job_timeout = SECONDS` key;
3. the default, generous on purpose: max(30 min, 10 x the mean time of the job's kind, task
   / mechanism / attack), the mean taken from the store's own timings of that kind, else
   from the committed board's stage timings (bench.report.tools.estimate). A kind never
   timed gets the 30 minutes.

A limit is a positive, finite number of seconds (bench.core.preflight.checked_timeout);
anything else is refused in one line before the run starts. The limit is not part of a
job's identity: it decides whether a job is stored, never what it stores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bench.core.preflight import MAX_TIMEOUT_S, checked_timeout
from bench.run.job import Job, job_kind

if TYPE_CHECKING:
    from bench.store.results import ResultStore
    from bench.suite.read import Suite

DEFAULT_FLOOR_S = 30 * 60.0  # no default limit is below 30 minutes
DEFAULT_FACTOR = 10.0  # ... nor below 10 times the kind's mean job time

Kind = tuple[str, str, str]


@dataclass(frozen=True)
class JobTimeouts:
    """The time limit of each job of a run: `fixed` (from --job-timeout or the suite) for
    every job, else the default from `means` (seconds per job of each kind)."""

    fixed: float | None = None
    means: dict[Kind, float] = field(default_factory=dict)

    def limit(self, job: Job) -> float:
        """Seconds `job` may run."""
        if self.fixed is not None:
            return self.fixed
        mean = self.means.get(job_kind(job))
        if mean is None or not math.isfinite(mean) or mean <= 0:
            return DEFAULT_FLOOR_S
        return min(MAX_TIMEOUT_S, max(DEFAULT_FLOOR_S, DEFAULT_FACTOR * mean))


def job_timeouts(
    option: float | None,
    suite_key: float | None,
    stored_means: dict[Kind, float],
    board_means: dict[Kind, float],
) -> JobTimeouts:
    """The limits of a run: --job-timeout (`option`), else the suite's key, else the
    default from the store's mean job times, then the committed board's."""
    if option is not None:
        return JobTimeouts(checked_timeout(option, "--job-timeout"))
    if suite_key is not None:
        return JobTimeouts(checked_timeout(suite_key, "the suite's job_timeout"))
    return JobTimeouts(None, {**board_means, **stored_means})


def run_timeouts(suite: Suite, store: ResultStore, job_timeout: float | None) -> JobTimeouts:
    """The limits of a run of `suite` on `store` (`job_timeouts`): the means from the
    store's timings and from the committed board of the suite's name."""
    if job_timeout is not None or suite.job_timeout is not None:
        return job_timeouts(job_timeout, suite.job_timeout, {}, {})
    from bench.report.tools.estimate import committed_job_seconds
    from bench.suite.catalog import committed_boards

    board = committed_job_seconds(committed_boards() / suite.name)
    return job_timeouts(None, None, store.mean_durations(), board)
