"""The small public API, the one path `bench run` and the tests take: plan a suite (its
jobs, listed once), run the pending ones, publish its leaderboard.

from bench.api import plan, publish, run, run_suite
run_suite("smoke")            # same as `bench run --suite smoke`
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import __version__
from bench.core.device import jobs_device
from bench.core.errors import ConfigError, JobsFailedError, UnknownNameError
from bench.core.hashing import digest, files_digest
from bench.data.locations import cache_dir
from bench.plugin.checks import waivers
from bench.plugin.checks.waivers import attach_expected_failures, waivers_of
from bench.plugin.registry import MECHANISMS
from bench.report.board.html import report_digest
from bench.report.board.labels import setting_order, short_setting, varying_params
from bench.report.board.markdown import SentenceExample
from bench.report.board.provenance import attach_environment, attach_provenance
from bench.report.board.row import Row
from bench.report.board.rows import build_rows
from bench.report.board.write import (
    declared_utility_metrics,
    leaderboard_is_current,
    shows_inputs,
    write_leaderboard,
)
from bench.run.executors import Executor
from bench.run.plan import Job, expand
from bench.run.runner import FailedJob, RunSummary, run_jobs
from bench.store.guard import open_store
from bench.store.results import ResultStore
from bench.suite.read import Suite, SuiteSource, load_suite, make_task, selects


def expand_suite(
    name_or_path: str | SuiteSource,
    seeds: int | None = None,
    device: str | None = None,
    *,
    check_device: bool = True,
) -> tuple[Suite, list[Job]]:
    """Load and validate a suite, and list all its jobs, on `device` (else the suite's
    `device` key, else the CPU); with `check_device`, a device this machine lacks is a
    one-line DeviceError (bench.core.device.jobs_device)."""
    suite = load_suite(name_or_path)
    where = "--device" if device is not None else f"{suite.source}: 'device'"
    on = jobs_device(device or suite.device, check=check_device, where=where)
    return suite, expand(suite, seeds=seeds, device=on)


def code_version_of(jobs: list[Job]) -> str:
    """The code version a board of these jobs is stamped with: bench's version and a digest
    of the jobs' code hashes, so it changes exactly when some job's code does."""
    return f"{__version__}+{digest(sorted({j.code_hash for j in jobs}), length=10)}"


def leaderboard_rows(
    suite: Suite,
    jobs: list[Job],
    results: list[dict[str, Any]],
    machines: dict[str, dict[str, str]],
) -> list[Row]:
    """Every row of a suite's board from its jobs' stored results: aggregated over seeds with
    the worst cases and flags (report.rows), then each row's versions and machines, the
    contract checks its mechanism waives, and its paper and doc links."""
    rows = build_rows(results)
    rows = attach_provenance(rows, jobs, suite.version)
    rows = attach_environment(rows, jobs, machines)
    rows = attach_expected_failures(rows)
    return attach_papers(rows)


def write_suite_leaderboard(
    suite: Suite, jobs: list[Job], store: ResultStore, out_dir: Path, *, only_if_stale: bool = False
) -> list[Path]:
    """Leaderboard files of a fully stored suite. `generated_at` is the time of the newest
    result, so regenerating from the same results gives byte-identical files. With
    `only_if_stale`, a directory that already holds exactly these files is left alone (and
    [out_dir/leaderboard.json] returned): a page stamped with the same `board_inputs` is
    known current without building a row; otherwise the rows are rebuilt and compared."""
    inputs = board_inputs(suite, jobs, store)
    if only_if_stale and shows_inputs(out_dir, inputs):
        return [Path(out_dir) / "leaderboard.json"]
    hashes = list(dict.fromkeys(j.hash for j in jobs))
    results = store.load(hashes)
    code_version = code_version_of(jobs)
    generated_at = max(r["created_at"] for r in results)
    rows = leaderboard_rows(suite, jobs, results, store.machines(hashes))
    utility_metrics = task_utility_metrics(suite)
    if only_if_stale and leaderboard_is_current(
        suite.name,
        suite.version,
        rows,
        out_dir,
        code_version=code_version,
        generated_at=generated_at,
        utility_metrics=utility_metrics,
    ):
        return [Path(out_dir) / "leaderboard.json"]
    return write_leaderboard(
        suite.name,
        suite.version,
        rows,
        out_dir,
        code_version=code_version,
        generated_at=generated_at,
        utility_metrics=utility_metrics,
        examples=reconstruction_examples(jobs, store),
        sentences=sentence_examples(jobs, store),
        inputs_digest=inputs,
    )


def board_inputs(suite: Suite, jobs: list[Job], store: ResultStore) -> str:
    """A digest of everything a suite's leaderboard files are made from: the suite's name
    and version, each job's hash (its config, data and code) with the thread count and
    device its provenance records, when the store wrote it (a store's results under a hash
    never change; another store's differ in these times), the mechanisms' paper links and
    waived checks, and the code that turns results into files (bench.report, this module,
    bench.plugin.checks.waivers). Equal digests mean byte-identical files."""
    hashes = sorted({j.hash for j in jobs})
    mechanisms = sorted({j.mechanism for j in jobs})
    return digest(
        {
            "suite": [suite.name, suite.version, __version__],
            "jobs": sorted({(j.hash, j.threads, j.device) for j in jobs}),
            "stored": store.created_times(hashes),
            "links": {m: [_links_of(m), waivers_of(m)] for m in mechanisms},
            "code": [report_digest(), files_digest([Path(__file__), Path(waivers.__file__)])],
        }
    )


def _links_of(mechanism: str) -> tuple[str | None, str | None]:
    """The (paper URL, in-tree doc page) a mechanism's rows link to; (None, None) for a
    plug-in that is not installed where the page is written."""
    try:
        cls = MECHANISMS.get(mechanism)
    except UnknownNameError:
        return None, None
    family = sys.modules.get(cls.__module__.rsplit(".", 1)[0])
    return cls.paper or None, getattr(family, "DOC_PAGE", None) or None


def attach_papers(rows: list[Row]) -> list[Row]:
    """Each row gains `paper`, the URL of its mechanism's paper (the mechanism class's
    `paper`), so the page links every entry to its source as RobustBench's does, and `docs`,
    the doc page of its in-tree family (the family package's DOC_PAGE)."""
    for row in rows:
        paper, docs = _links_of(row["mechanism"])
        if paper:
            row["paper"] = paper
        if docs:
            row["docs"] = docs
    return rows


def task_utility_metrics(suite: Suite) -> dict[str, str]:
    """Each of the suite's tasks' declared utility metric (auc for movielens), so the
    leaderboard shows it rather than guessing from the stored metrics."""
    return declared_utility_metrics(t.name for t in suite.tasks)


def reconstruction_examples(
    jobs: list[Job], store: ResultStore
) -> dict[str, list[tuple[str, np.ndarray, np.ndarray]]]:
    """Per task, (row label, originals, reconstructions) of every attack job of seed 0."""
    first = [j for j in jobs if j.attack is not None and j.seed == 0]
    stored = store.examples([j.hash for j in first])
    varies = {
        task: varying_params([(j.mechanism, j.params) for j in first if j.task == task])
        for task in {j.task for j in first}
    }
    out: dict[str, list[tuple[str, np.ndarray, np.ndarray]]] = {}
    for job in sorted(first, key=lambda j: (j.task, *setting_order(j.mechanism, j.params))):
        if job.hash in stored:
            setting = short_setting(job.mechanism, job.params, varies[job.task][job.mechanism])
            label = f"{setting}\n{job.attack}"
            ex = stored[job.hash]
            if ex["x"].dtype.kind == "f":  # images; token ids go to sentence_examples
                out.setdefault(job.task, []).append((label, ex["x"], ex["x_hat"]))
    return out


def sentence_examples(jobs: list[Job], store: ResultStore) -> dict[str, list[SentenceExample]]:
    """Per text task, (row label, original sentences, reconstructed sentences) of every
    attack job of seed 0, decoded with the task's tokenizer."""
    first = [j for j in jobs if j.attack is not None and j.seed == 0]
    stored = store.examples([j.hash for j in first])
    out: dict[str, list[SentenceExample]] = {}
    for job in sorted(first, key=lambda j: (j.task, *setting_order(j.mechanism, j.params))):
        ex = stored.get(job.hash)
        if ex is None or ex["x"].dtype.kind == "f":
            continue
        task = make_task(job.task, job.task_options)
        decode = getattr(task, "sentences", None)
        if decode is None:
            continue
        params = ", ".join(f"{k}={v}" for k, v in sorted(job.params.items()))
        label = f"{job.mechanism}({params}) / {job.attack}"
        pair = (label, decode(torch.from_numpy(ex["x"])), decode(torch.from_numpy(ex["x_hat"])))
        out.setdefault(job.task, []).append(pair)
    return out


@dataclass(frozen=True)
class RunPlan:
    """A suite and its jobs: all of them (its leaderboard needs every one) and the ones a
    run with filters selects."""

    suite: Suite
    jobs: list[Job]
    selected: list[Job]


def plan(
    suite: str | SuiteSource,
    *,
    seeds: int | None = None,
    device: str | None = None,
    check_device: bool = True,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
) -> RunPlan:
    """The jobs of a suite (`expand_suite`) and those the filters keep (an attack filter
    keeps the utility jobs its rows need); a filter naming nothing in the suite is a
    one-line ConfigError."""
    loaded, jobs = expand_suite(suite, seeds=seeds, device=device, check_device=check_device)
    for kind, value in (("task", task), ("mechanism", mechanism), ("attack", attack)):
        if value is not None and not any(getattr(j, kind) == value for j in jobs):
            raise ConfigError(f"suite {loaded.name} has no {kind} '{value}'")
    selected = [
        j for j in jobs if selects((j.task, j.mechanism, j.attack), task, mechanism, attack)
    ]
    return RunPlan(loaded, jobs, selected)


def run(
    planned: RunPlan,
    store: ResultStore,
    cache_root: Path,
    *,
    executor: Executor | None = None,
    progress: bool = False,
    lease_timeout: float | None = None,
    on_failure: Callable[[FailedJob], None] | None = None,
    max_failures: int | None = None,
) -> RunSummary:
    """Run the plan's selected jobs that `store` lacks (bench.run.runner.run_jobs)."""
    return run_jobs(
        planned.selected,
        store,
        cache_root,
        executor=executor,
        progress=progress,
        lease_timeout=lease_timeout,
        on_failure=on_failure,
        max_failures=max_failures,
    )


def stored_count(planned: RunPlan, store: ResultStore) -> tuple[int, int]:
    """(jobs of the suite stored, jobs of the suite), each job counted once."""
    unique = list(dict.fromkeys(j.hash for j in planned.jobs))
    return len(store.stored_hashes(unique)), len(unique)


def publish(
    planned: RunPlan, store: ResultStore, out_dir: Path, *, only_if_stale: bool = False
) -> list[Path] | None:
    """Write the suite's leaderboard (`write_suite_leaderboard`) once every job of the suite
    is stored; None while some are not (a filtered run)."""
    stored, total = stored_count(planned, store)
    if stored < total:
        return None
    return write_suite_leaderboard(
        planned.suite, planned.jobs, store, out_dir, only_if_stale=only_if_stale
    )


def run_suite(
    name_or_path: str,
    *,
    store_path: Path = Path(".bench/results.sqlite"),
    out_dir: Path | None = None,
    executor: Executor | None = None,
    seeds: int | None = None,
    progress: bool = False,
    device: str | None = None,
) -> tuple[RunSummary, list[Path]]:
    """Plan, run and publish a suite on `device` (bench.core.device; default: the suite's, else
    the CPU). JobsFailedError when a job raised: the other jobs are stored, and running it
    again runs only the failed ones (their tracebacks: `ResultStore.failures`)."""
    planned = plan(name_or_path, seeds=seeds, device=device)
    store = open_store(store_path)
    try:
        summary = run(planned, store, cache_dir(store_path), executor=executor, progress=progress)
        if summary.failed:
            raise JobsFailedError(
                f"{len(summary.failed)} jobs of suite {planned.suite.name} failed, leaderboard "
                f"not written; first: {summary.failed[0].line()}; tracebacks: "
                f"bench failures --store {store_path}"
            )
        out = out_dir or Path("leaderboards") / planned.suite.name
        paths = publish(planned, store, out) or []
    finally:
        store.close()
    return summary, paths
