"""Publishing a suite's board: its jobs listed (`expand_suite`), their stored results turned
into rows (aggregated over seeds, with provenance, environments, waived checks and paper
links) and the leaderboard files written; a board whose inputs are unchanged is left alone.

bench.api calls this module; nothing here runs a job.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

from bench import __version__
from bench.core.device import jobs_device
from bench.core.errors import UnknownNameError
from bench.core.hashing import digest, files_digest
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
from bench.run.job import Job
from bench.run.plan import expand
from bench.store.results import ResultStore
from bench.suite.read import Suite, SuiteSource, load_suite, make_task


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
    # A board whose page shows these inputs but whose JSON is damaged is written again.
    only_if_stale = only_if_stale and board_is_valid(Path(out_dir))
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
        kind=suite.kind,
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
        kind=suite.kind,
    )


def board_is_valid(out_dir: Path) -> bool:
    """Whether `out_dir`/leaderboard.json is a readable board of the leaderboard schema
    (bench.report.board.load, schema_check): one that is not is never left as current."""
    from bench.core.errors import BenchError
    from bench.report.board.load import load_leaderboard
    from bench.report.board.schema_check import check_schema

    path = out_dir / "leaderboard.json"
    try:
        check_schema(load_leaderboard(path), path)
    except BenchError:
        return False
    return True


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


def summary_lines(board_json: Path, suite: Suite) -> list[str]:
    """The end of a run: each setting's utility and strongest attack, from its board."""
    import json

    from bench.report.board.summary import summary_lines as board_summary

    rows = json.loads(board_json.read_text())["rows"]
    defaults = {
        m: dict(getattr(MECHANISMS.get(m), "defaults", {}) or {})
        for m in {r["mechanism"] for r in rows}
    }
    return board_summary(rows, defaults, task_utility_metrics(suite))


def page_of(board_json: Path) -> Path:
    """Where a reader looks: the suite's page, else its leaderboard directory."""
    page = board_json.parent / "index.html"
    return page.resolve() if page.exists() else board_json.parent.resolve()


def shipped_suites() -> tuple[dict[str, str], dict[str, str]]:
    """Description and version of every shipped suite, for the site index."""
    from bench.suite.read import available_suites

    suites = [load_suite(name) for name in available_suites()]
    return {s.name: s.description for s in suites}, {s.name: s.version for s in suites}


def refresh_site_index(board_dir: Path) -> Path | None:
    """Rewrite the site index beside a suite's directory when bench wrote one there, so the
    list of suites never goes stale after a suite is re-run."""
    from bench.report.board.site import is_site_index, write_site_index

    if not is_site_index(board_dir.parent / "index.html"):
        return None
    return write_site_index(board_dir.parent, *shipped_suites())


def keep_plan(
    key: str,
    suite: Suite,
    jobs: list[Job],
    db: ResultStore,
    store: Path,
    board_dir: Path,
    summary: list[str],
) -> None:
    """Record a finished run's plan (bench.run.warm) when the page on disk shows exactly its
    stored results and every component is the project's own (a plug-in's files are not in
    the plan's key)."""
    from bench.core.project import in_project
    from bench.plugin.registry import ATTACKS, TASKS
    from bench.report.board.html import inputs_stamp, report_stamp
    from bench.run.warm import Plan, board_digest, save_plan, times_digest

    classes = [TASKS.get(j.task) for j in jobs] + [MECHANISMS.get(j.mechanism) for j in jobs]
    classes += [ATTACKS.get(j.attack) for j in jobs if j.attack is not None]
    in_tree = all(in_project(c.__module__) for c in classes)
    # A suite's `device = "auto"` turns into a GPU once one appears: CPU suites only.
    if not in_tree or suite.device not in (None, "cpu") or any(j.device != "cpu" for j in jobs):
        return
    stamps = [inputs_stamp(board_inputs(suite, jobs, db)), report_stamp()]
    page = board_dir / "index.html"
    if not page.is_file() or not all(s in page.read_text() for s in stamps):
        return
    written = board_digest(board_dir)
    if written is None:
        return
    hashes = sorted({j.hash for j in jobs})
    plan = Plan(
        suite=suite.name,
        jobs=[(j.hash, j.task, j.mechanism, j.attack) for j in jobs],
        stored=times_digest(db.created_times(hashes)),
        stamps=stamps,
        summary=summary,
        board=written,
    )
    save_plan(store, key, plan)
