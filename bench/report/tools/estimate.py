"""Job-time estimates from committed leaderboards: what `bench run --dry-run` says a run will
take on a store that has never run the suite, the expected time `bench list suites` shows,
and the ETA of a run's progress display before its own jobs have been timed.

The stage timings every row records stand in for the jobs' wall times (a utility job: its
fit plus its releases; an attack job: its attack time). An artifact that several settings
share (leave-one-out networks, a utility model) records its build time in each of their
rows, where a run builds it once: times of one task that exceed a shared part by little
count only what they add (`row_job_seconds`). The timings leave out what no row times
(evaluation, audits, start-up), so a run takes somewhat longer than its job time divided
by its workers; the progress display corrects its ETA with every finished job.

Torch- and numpy-free, so the commands that compute nothing can use it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.core.hashing import digest

Kind = tuple[str, str, str]  # (task, mechanism, attack or "utility"): bench.run.job.job_kind
WORST_CASE = "worst case"  # bench.report.board.labels.WORST_CASE: rows no job computes
SHARED_SLACK = 0.01  # a time within 1% (+1 s) of a larger shared part: that part, reused
SHARED_MIN_S = 10.0  # shorter times are not taken for a shared artifact
DEFAULT_WORKERS = 2  # the expected times `bench list suites` shows: 2 workers (--jobs 2)


def setting_key(
    task: str,
    mechanism: str,
    params: dict[str, Any],
    attack: str | None,
    attack_params: dict[str, Any],
    data_hash: str,
) -> str:
    """A job's setting (everything but its seed) on its data: equal keys, the same work.
    A board row and a job of its setting get the same key."""
    return digest([task, mechanism, params, attack, attack_params or {}, data_hash])


def row_setting_key(row: dict[str, Any]) -> str:
    """`setting_key` of a board row (its data hash from its provenance)."""
    provenance = row.get("provenance") or {}
    return setting_key(
        str(row.get("task")),
        str(row.get("mechanism")),
        row.get("params") or {},
        row.get("attack"),
        row.get("attack_params") or {},
        str(provenance.get("data_hash", "")),
    )


def row_kind(row: dict[str, Any]) -> Kind:
    return (str(row["task"]), str(row["mechanism"]), str(row.get("attack") or "utility"))


def _value(metrics: dict[str, Any], name: str) -> float | None:
    entry = metrics.get(name)
    try:
        return None if entry is None else float(entry["value"])
    except (TypeError, KeyError, ValueError):
        return None


def _recorded_seconds(row: dict[str, Any]) -> float | None:
    """One job of this row's kind, in seconds, as its stage timings record it."""
    metrics = row.get("metrics") or {}
    if row.get("attack") is not None:
        return _value(metrics, "attack_s")
    fit = _value(metrics, "fit_s")
    if fit is None:
        return None
    release, scored = _value(metrics, "release_ms"), metrics.get("release_rate")
    if release is not None and isinstance(scored, dict) and row.get("seeds"):
        per_seed = int(scored.get("n", 0)) / int(row["seeds"])  # queries released per job
        fit += release * per_seed / 1000.0
    return fit


@dataclass(frozen=True)
class RowTime:
    """A board row's time per job: what the job does itself (`own`) and the artifact it
    shares with other settings of its task (`shared`, under the id `group`; 0 and None when
    it shares none). A run spends the shared part once, in whichever job of the group runs
    first; `charged` gives it to the row whose time the part was read from."""

    row: dict[str, Any]
    own: float
    shared: float = 0.0
    group: str | None = None
    first: bool = False  # the row the shared part was read from

    @property
    def charged(self) -> float:
        return self.own + (self.shared if self.first else 0.0)


def row_times(doc: dict[str, Any]) -> list[RowTime]:
    """A `RowTime` for every row of a board that jobs compute, from its stage timings, in
    board order. A stage time records the build of every artifact the job uses, cached or
    not, so an artifact that several settings of a task share shows as a common part of
    their times: taken from the smallest up, a time within SHARED_SLACK above an earlier one
    (itself at least SHARED_MIN_S) is that shared part plus what the job adds to it."""
    timed = []
    for row in doc.get("rows", []) if isinstance(doc, dict) else []:
        if not isinstance(row, dict) or row.get("attack") == WORST_CASE or "task" not in row:
            continue
        seconds = _recorded_seconds(row)
        if seconds is not None:
            timed.append((row, seconds))
    times: dict[int, RowTime] = {}
    bases: dict[str, list[tuple[float, int]]] = defaultdict(list)  # per task: (part, row)
    for i, (row, seconds) in sorted(enumerate(timed), key=lambda item: item[1][1]):
        task = str(row["task"])
        base = next(
            (b for b in bases[task] if b[0] <= seconds <= b[0] * (1 + SHARED_SLACK) + 1.0), None
        )
        if base is None:
            if seconds >= SHARED_MIN_S:
                bases[task].append((seconds, i))
                times[i] = RowTime(row, 0.0, seconds, f"{task}:{i}", first=True)
            else:
                times[i] = RowTime(row, seconds)
        else:
            times[i] = RowTime(row, seconds - base[0], base[0], f"{task}:{base[1]}")
    return [times[i] for i in range(len(timed))]


def row_job_seconds(doc: dict[str, Any]) -> list[tuple[dict[str, Any], float]]:
    """(row, seconds per job of it) for every row of a board that jobs compute, a part
    several settings share counted once (`row_times`)."""
    return [(t.row, t.charged) for t in row_times(doc)]


def board_job_seconds(doc: dict[str, Any]) -> dict[Kind, float]:
    """Mean seconds per job of each kind over a leaderboard's rows (worst-case rows, which
    no job computes, are left out)."""
    samples: dict[Kind, list[float]] = defaultdict(list)
    for row, seconds in row_job_seconds(doc):
        samples[row_kind(row)].append(seconds)
    return {kind: sum(v) / len(v) for kind, v in samples.items()}


def board_total_seconds(doc: dict[str, Any]) -> float | None:
    """The job time of a whole board's run: each row's seconds per job times its seeds
    (None when no row is timed)."""
    timed = row_job_seconds(doc)
    if not timed:
        return None
    return sum(seconds * int(row.get("seeds") or 1) for row, seconds in timed)


def _read_board(board_dir: Path) -> dict[str, Any]:
    try:
        doc = json.loads((Path(board_dir) / "leaderboard.json").read_text())
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}


def committed_job_seconds(board_dir: Path) -> dict[Kind, float]:
    """`board_job_seconds` of the committed board in `board_dir` ({} when there is none or
    it cannot be read)."""
    return board_job_seconds(_read_board(board_dir))


@dataclass(frozen=True)
class PlannedJob:
    """What an estimate needs of a job: its hash, kind and setting key, and whether a
    plug-in computes it (no committed board can time a plug-in's job)."""

    hash: str
    task: str
    mechanism: str
    attack: str | None
    setting: str
    plugin: bool = False

    @property
    def kind(self) -> Kind:
        return (self.task, self.mechanism, self.attack or "utility")

    @classmethod
    def of(cls, job: Any, plugin: bool = False) -> PlannedJob:
        """From a bench.run.job.Job."""
        key = setting_key(
            job.task, job.mechanism, job.params, job.attack, job.attack_params, job.data_hash
        )
        return cls(job.hash, job.task, job.mechanism, job.attack, key, plugin)

    def to_list(self) -> list[Any]:
        return [self.hash, self.task, self.mechanism, self.attack, self.setting, self.plugin]

    @classmethod
    def from_list(cls, fields: list[Any]) -> PlannedJob:
        job_hash, task, mechanism, attack, setting, plugin = fields
        return cls(str(job_hash), str(task), str(mechanism), attack, str(setting), bool(plugin))


@dataclass(frozen=True)
class Seed:
    """A job's expected time from the boards: its own part, and a part shared with other
    jobs (`group`) that only the first of them to run spends."""

    own: float
    shared: float = 0.0
    group: str | None = None

    @property
    def total(self) -> float:
        return self.own + self.shared


class CommittedTimings:
    """Seconds per job from every committed board under a root: by setting on the same data
    (any suite's board), else the mean of the kind over the boards that have it. Boards are
    read on first use."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._by_setting: dict[str, Seed] | None = None
        self._charged: dict[str, float] = {}
        self._by_kind: dict[Kind, float] = {}

    def _load(self) -> dict[str, Seed]:
        if self._by_setting is None:
            by_setting: dict[str, list[RowTime]] = defaultdict(list)
            by_kind: dict[Kind, list[float]] = defaultdict(list)
            paths = sorted(self.root.glob("*/leaderboard.json")) if self.root.is_dir() else []
            for path in paths:
                for t in row_times(_read_board(path.parent)):
                    t = replace(t, group=f"{path.parent.name}/{t.group}" if t.group else None)
                    by_setting[row_setting_key(t.row)].append(t)
                    by_kind[row_kind(t.row)].append(t.charged)
            self._by_setting = {
                key: Seed(_mean(t.own for t in ts), _mean(t.shared for t in ts), ts[0].group)
                for key, ts in by_setting.items()
            }
            self._charged = {key: _mean(t.charged for t in ts) for key, ts in by_setting.items()}
            self._by_kind = {k: _mean(v) for k, v in by_kind.items()}
        return self._by_setting

    def seed(self, job: PlannedJob) -> tuple[Seed, str] | None:
        """(the job's seed, "same setting" or "same kind"), or None."""
        by_setting = self._load()
        if job.setting in by_setting:
            return by_setting[job.setting], "same setting"
        if job.kind in self._by_kind:
            return Seed(self._by_kind[job.kind]), "same kind"
        return None

    def seconds(self, job: PlannedJob) -> tuple[float, str] | None:
        """(seconds, "same setting" or "same kind") for a job in a run of the whole suite
        (a shared part counted once), or None."""
        found = self.seed(job)
        if found is None:
            return None
        if found[1] == "same setting":
            return self._charged[job.setting], found[1]
        return found[0].total, found[1]


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items)


def job_seeds(jobs: Iterable[PlannedJob], root: Path) -> dict[str, Seed]:
    """Each job's seed from the committed boards under `root` (`CommittedTimings.seed`), by
    hash; a plug-in's job and a job no board times are left out."""
    timings = CommittedTimings(root)
    out: dict[str, Seed] = {}
    for job in jobs:
        found = None if job.plugin else timings.seed(job)
        if found is not None:
            out[job.hash] = found[0]
    return out


def read_store(store: Path, hashes: list[str]) -> tuple[set[str], dict[Kind, float]]:
    """(the `hashes` the store holds, its mean job time per kind), read read-only: nothing
    is created when the store does not exist, and nothing is imported beyond sqlite3. A
    store that is not a usable bench store is a one-line ConfigError
    (bench.store.guard.check_store)."""
    import sqlite3
    from contextlib import closing
    from urllib.parse import quote

    from bench.store.guard import check_store
    from bench.store.rows import jobs_column

    if not check_store(Path(store)):
        return set(), {}
    uri = f"file:{quote(str(Path(store).absolute()))}?mode=ro"
    try:
        with closing(sqlite3.connect(uri, uri=True)) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'jobs'").fetchone():
                return set(), {}  # a store created but never written
            stored = set(jobs_column(conn, list(dict.fromkeys(hashes)), "job_hash"))
            # As ResultStore.mean_durations: any parameters, any code version.
            rows = conn.execute(
                "SELECT task, mechanism, COALESCE(attack, 'utility'), AVG(duration_s) FROM jobs "
                "GROUP BY task, mechanism, COALESCE(attack, 'utility')"
            ).fetchall()
    except sqlite3.Error as exc:
        from bench.core.errors import ConfigError
        from bench.core.preflight import sqlite_reason

        raise ConfigError(f"store {store}: cannot be read ({sqlite_reason(exc)})") from exc
    return stored, {(t, m, a): float(mean) for t, m, a, mean in rows if mean is not None}


def duration_text(seconds: float) -> str:
    """~12 s, ~3.4 min, ~2.1 h."""
    if seconds < 90:
        return f"~{seconds:,.0f} s"
    if seconds < 90 * 60:
        return f"~{seconds / 60:,.1f} min"
    return f"~{seconds / 3600:,.1f} h"


UNKNOWN_PLUGIN = "unknown until the first job"
UNTIMED = "no committed timing"
LINE_WIDTH = 100  # what every line `plan_lines` gives fits in


def plan_lines(
    suite: str,
    selected: list[PlannedJob],
    pending: list[PlannedJob],
    durations: dict[Kind, float],
    board_dir: Path,
    root: Path | None = None,
    workers: int = DEFAULT_WORKERS,
) -> list[str]:
    """What `bench run --dry-run` prints: the selected, stored and pending counts, one line
    per kind of pending job with its estimate and where it comes from (the store's own mean
    job times, else the suite's committed board in `board_dir`, else any committed board
    under `root`: the same setting on the same data, else the kind's mean; a plug-in's
    job is unknown until one has run), and the total, in job time and on `workers`. Every
    line fits in LINE_WIDTH columns."""
    from collections import Counter

    from_board = committed_job_seconds(board_dir)
    others = CommittedTimings(root) if root is not None else None
    unique = len({j.hash for j in selected})
    lines = [
        f"{suite}: {unique} jobs selected, {unique - len(pending)} stored, {len(pending)} would run"
    ]
    groups: dict[tuple[Kind, bool], list[PlannedJob]] = {}
    for job in pending:
        groups.setdefault((job.kind, job.plugin), []).append(job)
    width = min(max((len(" / ".join(k)) for k, _ in groups), default=0), 56)
    total, unknown, sources = 0.0, 0, Counter[str]()
    for (kind, _), jobs in sorted(groups.items()):
        seconds, source = _kind_seconds(kind, jobs, durations, from_board, others)
        label = " / ".join(kind)
        label = label if len(label) <= width else label[: width - 1] + "…"
        if seconds is None:
            unknown += len(jobs)
            text = source
        else:
            total += seconds
            sources[source] += 1
            text = f"{duration_text(seconds):>10s}  {source}"
        lines.append(f"  {label:<{width}s} {len(jobs):5d} jobs {text}")
    if pending and unknown == len(pending):
        lines.append("estimate: none yet (no job of these kinds is in the store or a board)")
        return lines
    if not pending:
        return lines
    on = f"{duration_text(total / max(1, workers))} with --jobs {workers}"
    hint = f"; {unknown} jobs not timed" if unknown else ""
    lines.append(f"estimate: {duration_text(total)} of job time, {on}{hint}")
    if sources["board"]:
        lines.append(f"  timed from the committed board of {Path(board_dir).name}")
    if sources["same setting"] or sources["same kind"]:
        lines.append("  timed from other suites' committed boards")
    if set(sources) - {"store"}:
        lines.append("  (boards time the fits, releases and attacks: a run also evaluates)")
    return lines


def _kind_seconds(
    kind: Kind,
    jobs: list[PlannedJob],
    durations: dict[Kind, float],
    from_board: dict[Kind, float],
    others: CommittedTimings | None,
) -> tuple[float | None, str]:
    """The job time of a kind's pending jobs and its source, or (None, why not)."""
    if kind in durations:
        return durations[kind] * len(jobs), "store"
    if all(job.plugin for job in jobs):
        return None, UNKNOWN_PLUGIN
    if kind in from_board:
        return from_board[kind] * len(jobs), "board"
    if others is not None:
        found = [others.seconds(job) for job in jobs]
        if all(f is not None for f in found):
            exact = all(f[1] == "same setting" for f in found if f is not None)
            seconds = sum(f[0] for f in found if f is not None)
            return seconds, "same setting" if exact else "same kind"
    return None, UNTIMED
