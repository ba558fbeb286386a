"""`bench run --dry-run` of a suite too large to list: its jobs counted, not built.

Listing a job hashes its config, so a suite near the job bound (a million jobs) takes
minutes to list and gigabytes to hold, and a dry run that lists them prints nothing
meanwhile. A suite whose bound (bench.suite.read.job_count_bound) is above LIST_LIMIT is
answered from counts instead: per kind of job (task / mechanism / attack or utility), the
number of its jobs, from the suite's grids and seeds with the rules that decide which jobs
exist (bench.run.plan.expand), and the estimate from the store's mean job times, else the
committed board's. Which of them are stored already needs their hashes: such a dry run says
it did not subtract them. Smaller suites are listed as before (bench.api.dry_run_lines).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace
from pathlib import Path

from bench.core.errors import ConfigError
from bench.plugin.registry import MECHANISMS
from bench.run.plan import attack_samples_of, attacks_of, check_seeds, check_sizes
from bench.suite.read import Entry, Suite, job_count_bound, make_task, selects

LIST_LIMIT = 20_000  # suites that may expand to more jobs are counted, not listed
Kind = tuple[str, str, str]


def _settings(entry: Entry) -> int:
    """How many parameter settings a suite entry's grid gives."""
    return math.prod(len(values) for values in entry.grid.values())


def job_counts(suite: Suite, seeds: int | None = None) -> Counter[Kind]:
    """The number of jobs of each kind a suite expands to, as bench.run.plan.expand would
    list them (an overlapping grid's repeated job counted each time), without building one."""
    check_seeds(suite, seeds)
    counts: Counter[Kind] = Counter()
    n_seeds = seeds or suite.seeds
    for t_entry in suite.tasks:
        task = make_task(t_entry.name, t_entry.params, suite.source)
        check_sizes(suite, t_entry, task)
        for m_entry in suite.mechanisms:
            if not m_entry.applies_to(t_entry.name):
                continue
            if task.modality not in MECHANISMS.get(m_entry.name).modalities:
                continue
            runs = _settings(m_entry) * n_seeds
            counts[(t_entry.name, m_entry.name, "utility")] += runs
            attacks = attacks_of(suite, t_entry.name, task.modality, m_entry)
            if attacks:
                attack_samples_of(suite, t_entry, task)
            for a_entry in attacks:
                counts[(t_entry.name, m_entry.name, a_entry.name)] += runs * _settings(a_entry)
    return counts


def selected_counts(
    counts: Counter[Kind],
    suite: str,
    task: str | None,
    mechanism: str | None,
    attack: str | None,
) -> Counter[Kind]:
    """The counts of the kinds `bench run`'s filters select (bench.suite.read.selects); a
    filter naming nothing in the suite is a one-line ConfigError, as when jobs are listed."""
    filters = (("task", task), ("mechanism", mechanism), ("attack", attack))
    for index, (field, value) in enumerate(filters):
        if value is not None and not any(kind[index] == value for kind in counts):
            raise ConfigError(f"suite {suite} has no {field} '{value}'")

    def job(kind: Kind) -> tuple[str, str, str | None]:
        return kind[0], kind[1], None if kind[2] == "utility" else kind[2]

    return Counter(
        {kind: n for kind, n in counts.items() if selects(job(kind), task, mechanism, attack)}
    )


def count_lines(
    suite: str, counts: Counter[Kind], durations: dict[Kind, float], board: Path
) -> list[str]:
    """What a counted dry run prints: the count, one line per kind with its estimate from
    `durations` (the store's mean job times), else from the committed board in `board`,
    and the total."""
    from bench.report.tools.estimate import committed_job_seconds

    durations = {**committed_job_seconds(board), **durations}
    total_jobs = sum(counts.values())
    lines = [
        f"{suite}: {total_jobs:,} jobs selected (counted from the suite's grids: more than "
        f"{LIST_LIMIT:,} are not listed; jobs already stored are not subtracted)"
    ]
    total, unknown = 0.0, 0
    for kind, n in sorted(counts.items()):
        mean = durations.get(kind)
        total += (mean or 0.0) * n
        unknown += n if mean is None else 0
        estimate = f"~{mean * n:,.0f} s" if mean is not None else "no timing stored"
        lines.append(f"  {' / '.join(kind):60s} {n:9,d} jobs  {estimate}")
    if total_jobs and unknown == total_jobs:
        lines.append("estimate: none yet (no job of these kinds is in the store or its board)")
        return lines
    hint = f"; {unknown:,} jobs have no stored timing" if unknown else ""
    lines.append(f"estimate: ~{total / 60:,.1f} min of job time (divide by --jobs){hint}")
    return lines


def too_many_to_list(suite: Suite, seeds: int | None) -> bool:
    """Whether the suite (with `seeds`) may expand to more than LIST_LIMIT jobs."""
    return job_count_bound(suite if seeds is None else replace(suite, seeds=seeds)) > LIST_LIMIT


def counted_lines(
    suite: Suite,
    store_path: Path,
    seeds: int | None,
    device: str | None,
    check_device: bool,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
) -> list[str]:
    """The counted dry run of `suite` (module docstring): the device checked as a run would,
    the kinds the filters select, timed from the store's mean job times when it exists."""
    from bench.core.device import jobs_device
    from bench.store.guard import open_store
    from bench.suite.catalog import committed_boards

    where = "--device" if device is not None else f"{suite.source}: 'device'"
    jobs_device(device or suite.device, check=check_device, where=where)
    counts = selected_counts(job_counts(suite, seeds), suite.name, task, mechanism, attack)
    durations: dict[Kind, float] = {}
    if store_path.exists():
        db = open_store(store_path)
        try:
            durations = db.mean_durations()
        finally:
            db.close()
    return count_lines(suite.name, counts, durations, committed_boards() / suite.name)
