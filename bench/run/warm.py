"""The warm-rerun plan: a rerun of a suite that has nothing to do, answered without torch.

Listing a suite's jobs needs their hashes, and those need torch, the harness and every
component imported (for the code versions) and the data loaded (for its fingerprint): about
5 s before anything else happens. A finished `bench run` therefore records its job list as a
*plan*, under a key over everything that list is computed from:

- the suite file's bytes and the run's `--seeds` / `--device`;
- every file of the bench, mechanisms and attacks packages (code, suites, templates);
- the Python version, the machine, its CPU count, and the name and version of every
  installed distribution (third-party code, and the data some of them ship; a file edited
  in place inside an installed distribution is not seen, its version is);
- the `BENCH_*` environment (the data location, the CPU math) and `CUDA_VISIBLE_DEVICES`,
  but for `BENCH_CACHE`: where the plan is kept is no input of the job list it holds;
- the name, size and modification time of every file under the data directory and under
  every path a task option names.

The next run with the same key and every planned job stored (and stored at the same times,
so the page on disk shows this store's results), and its leaderboard.json byte for byte the
one the run wrote (a truncated or edited board goes the full way, which rewrites it), prints
what the full run would print and exits: nothing imported, nothing loaded. Plans live with
bench's other kept answers (bench.core.places.answers_dir: $BENCH_CACHE, else the
platform's user cache directory), one file per key and store contents
(`{key}-{times digest}.json`, the newest few per key), so runs on several stores of one
suite keep a plan each, and a copied store still hits. Any other case, any doubt (a plug-in
component, a GPU job, a data tree too large to list, an unreadable store), is the full run.
A plan is only ever a shortcut to "nothing to do"; a job still to run always goes the full
way.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sqlite3
import sys
from contextlib import closing
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.fsutil import atomic_write
from bench.core.places import answers_dir
from bench.core.project import PROJECT_PACKAGES
from bench.data.locations import data_dir
from bench.store.rows import jobs_column
from bench.suite.read import SuiteSource, read_suite, selects

FORMAT = 2  # bump when what a plan holds, or how its key is made, changes
MAX_DATA_FILES = 20_000  # a data tree larger than this is not listed: no plan
PLANS_PER_KEY = 8  # plans kept per key (one per store contents), the newest
ENV_PREFIXES = ("BENCH_",)
ENV_NAMES = ("CUDA_VISIBLE_DEVICES",)
ENV_IGNORED = ("BENCH_CACHE",)  # where plans and artifacts live: no input of a job list


@dataclass(frozen=True)
class Plan:
    """A finished run's job list and what its leaderboard showed."""

    suite: str
    jobs: list[tuple[str, str, str, str | None]]  # (hash, task, mechanism, attack)
    stored: str  # times_digest of the jobs' store times when the page was made
    stamps: list[str]  # meta tags the page carried (its inputs and its report code)
    summary: list[str]  # the lines the run printed after its count
    board: str = ""  # board_digest of the leaderboard.json the run wrote


def board_digest(board_dir: Path) -> str | None:
    """sha256 of `board_dir`/leaderboard.json, or None when it is not a regular file of a
    board's size (bench.report.board.load.read_board_bytes) or cannot be read."""
    from bench.report.board.load import read_board_bytes

    try:
        return hashlib.sha256(read_board_bytes(board_dir / "leaderboard.json")).hexdigest()
    except BenchError:
        return None


def times_digest(times: dict[str, str]) -> str:
    """A digest of when each job was stored: equal digests, the same stored results."""
    return hashlib.sha256(json.dumps(sorted(times.items())).encode()).hexdigest()[:20]


class _Key:
    """A running sha256 of the inputs a job list is computed from."""

    def __init__(self) -> None:
        self._h = hashlib.sha256()

    def add(self, *parts: object) -> None:
        for part in parts:
            self._h.update(repr(part).encode())
            self._h.update(b"\0")

    def add_bytes(self, data: bytes) -> None:
        self.add(len(data))
        self._h.update(data)

    def hexdigest(self) -> str:
        return self._h.hexdigest()[:32]


def _project_files() -> list[tuple[str, Path]]:
    """(package-relative name, path) of every file of the project's packages."""
    here = Path(__file__).resolve().parents[2]
    files = []
    for package in PROJECT_PACKAGES:
        root = here / package
        for path in root.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                files.append((path.relative_to(here).as_posix(), path))
    return sorted(files)


def _distributions() -> list[str]:
    """The installed distributions' metadata directory names (name and version), from the
    import path's directories: listing them is cheap where reading their metadata is not."""
    names: set[str] = set()
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as it:
                names.update(e.name for e in it if e.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
    return sorted(names)


def _option_paths(source: SuiteSource) -> list[Path]:
    """Existing paths that a task option of the suite names (relative to the working
    directory or to the suite file): the local data and model directories tasks read."""
    suite_path, raw = source.path.resolve(), source.raw
    found: set[Path] = set()

    def visit(value: Any) -> None:
        if isinstance(value, str) and value:
            for candidate in (Path(value), suite_path.parent / value):
                if candidate.exists():
                    found.add(candidate.resolve())
        elif isinstance(value, dict):
            for item in value.values():
                visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)

    for task in raw.get("task", []):
        visit(task)
    return sorted(found)


def _add_tree(key: _Key, root: Path, budget: list[int]) -> bool:
    """Add the name, size and modification time of every file under `root` (or of `root`
    itself; symlinked directories are not followed); False when the tree has more files
    than the budget left."""
    key.add("tree", str(root))
    if not root.exists():
        key.add("absent")
        return True
    if root.is_file():
        files = [root]
    else:
        files = []
        for folder, dirs, names in os.walk(root):
            dirs.sort()
            files += [Path(folder) / name for name in sorted(names)]
            if len(files) > budget[0]:
                return False
    budget[0] -= len(files)
    if budget[0] < 0:
        return False
    for path in files:
        stat = path.stat()
        key.add(str(path), stat.st_size, stat.st_mtime_ns)
    return True


def plan_key(suite: str | SuiteSource, seeds: int | None, device: str | None) -> str | None:
    """The key of a run's plan (module docstring), or None when its inputs cannot all be
    listed (then no plan is kept or used): a suite that is unknown or does not parse is
    left to the full run, which says what is wrong with it."""
    return inputs_key([suite], seeds, device)


def inputs_key(
    suites: list[str | SuiteSource], seeds: int | None, device: str | None
) -> str | None:
    """One key over the inputs of the job lists of several suites (for one suite, its plan
    key), or None as for `plan_key`; the project's files are read once, not once a suite."""
    try:
        return _inputs_key(suites, seeds, device)
    except (BenchError, OSError, ValueError):
        return None


def _inputs_key(
    suites: list[str | SuiteSource], seeds: int | None, device: str | None
) -> str | None:
    key = _Key()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    key.add(FORMAT, sys.version, platform.machine(), os.cpu_count(), cpus, seeds, device)
    sources = [s if isinstance(s, SuiteSource) else read_suite(s) for s in suites]
    for source in sources:
        key.add("suite")  # its bytes, not its place: a copied run still hits
        key.add_bytes(source.data)
    for name, file in _project_files():
        key.add(name)
        key.add_bytes(file.read_bytes())
    key.add("dists", *_distributions())
    env = sorted(
        (k, v)
        for k, v in os.environ.items()
        if (k.startswith(ENV_PREFIXES) or k in ENV_NAMES) and k not in ENV_IGNORED
    )
    key.add("env", *env)
    budget = [MAX_DATA_FILES]
    roots = [data_dir(), *(p for source in sources for p in _option_paths(source))]
    for root in roots:
        if not _add_tree(key, Path(root), budget):
            return None
    return key.hexdigest()


def _plans_dir() -> Path:
    return answers_dir() / "plans"


def _plan_path(key: str, stored: str) -> Path:
    return _plans_dir() / f"{key}-{stored}.json"


def _plans_of(key: str) -> list[Path]:
    """The plan files kept under `key`, newest first."""

    def mtime(path: Path) -> int:
        try:
            return path.stat().st_mtime_ns
        except OSError:
            return 0

    return sorted(_plans_dir().glob(f"{key}-*.json"), key=mtime, reverse=True)


def save_plan(store: Path, key: str, plan: Plan) -> None:
    """Record a finished run's plan (for `store`'s contents at `plan.stored`), keeping the
    PLANS_PER_KEY newest plans of its key."""
    path = _plan_path(key, plan.stored)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps({"format": FORMAT, **asdict(plan)}).encode())
    for old in _plans_of(key)[PLANS_PER_KEY:]:
        old.unlink(missing_ok=True)


def _read_plan(path: Path) -> Plan | None:
    try:
        raw = json.loads(path.read_text())
        if raw.pop("format") != FORMAT:
            return None
        raw["jobs"] = [tuple(job) for job in raw["jobs"]]
        return Plan(**raw)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _stored_times(store: Path, plan: Plan) -> dict[str, str] | None:
    """When each of the plan's jobs was stored in `store` (read-only), or None."""
    unique = sorted({job[0] for job in plan.jobs})
    try:
        with closing(sqlite3.connect(f"file:{store.resolve()}?mode=ro", uri=True)) as conn:
            return jobs_column(conn, unique, "created_at")
    except (sqlite3.Error, OSError):
        return None


def load_plan(store: Path, key: str) -> Plan | None:
    """The plan recorded under `key` for the contents `store` holds now (every planned job
    stored, at the times the plan saw), or None."""
    candidates = _plans_of(key)
    if not candidates or not store.is_file():
        return None
    listed = next((p for p in map(_read_plan, candidates) if p is not None), None)
    if listed is None:
        return None
    times = _stored_times(store, listed)  # every plan of a key lists the same jobs
    if times is None or len(times) < len({job[0] for job in listed.jobs}):
        return None
    return _read_plan(_plan_path(key, times_digest(times)))


def warm_rerun(
    key: str,
    *,
    task: str | None,
    mechanism: str | None,
    attack: str | None,
    store: Path,
    out: Path | None,
) -> list[str] | None:
    """What `bench run` prints when the plan under `key` says every job is stored and the
    leaderboard already shows them; None when the full run must decide (it then also gives
    any error)."""
    plan = load_plan(store, key)
    if plan is None:
        return None
    for value, field in ((task, 1), (mechanism, 2), (attack, 3)):
        if value is not None and not any(job[field] == value for job in plan.jobs):
            return None  # the full run names the unknown filter
    n = sum(selects(job[1:], task, mechanism, attack) for job in plan.jobs)
    board = out or Path("leaderboards") / plan.suite
    page = board / "index.html"
    try:
        text = page.read_text()
    except (OSError, UnicodeDecodeError):
        return None
    if board_digest(board) != plan.board or not all(s in text for s in plan.stamps):
        return None  # the full run checks the board, and rewrites one that is not current
    return [
        f"{plan.suite}: 0 jobs run, {n} already stored, {n} selected",
        *plan.summary,
        f"leaderboard: {page.resolve()}",
    ]
