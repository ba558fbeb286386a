"""Suite files: a named, versioned grid of tasks x mechanisms (parameter sweeps) x attacks
x seeds, stored as TOML under bench/suite/files/ (or given by path). Unknown keys are errors.
An optional top-level `device` (cpu, cuda, cuda:N, mps, auto; bench.core.device) says where its
jobs run; `bench run --device` overrides it. An optional `kind` says what the suite is for:
"track" (a benchmark track), "paper" (a paper's reproduction; the default) or "study" (a
research suite, kept under a checkout's studies/ directory); `bench list` groups by it. An
optional `job_timeout` (seconds, a positive number) is how long any of its jobs may run
before it is stopped as a failure (bench.run.timeouts); `bench run --job-timeout`
overrides it.

Example:

    name = "smoke"
    version = "1"
    seeds = 2
    attack_samples = 64
    [[task]]
    name = "fmnist"
    n_train = 2000
    [[mechanism]]
    name = "gauss-input"
    grid = { eps = [1.0, 4.0] }
    params = { r = 0.1 }
    [[attack]]
    name = "optimization"
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from bench.core.errors import (
    ConfigError,
    DeviceError,
    SuiteFileError,
    UnknownNameError,
    did_you_mean,
)
from bench.core.preflight import MAX_SEEDS, check_suite_name, checked_timeout
from bench.plugin.params import normalise_options
from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS

_TOP_KEYS = {
    "name",
    "version",
    "description",
    "seeds",
    "attack_samples",
    "device",
    "kind",
    "job_timeout",
    "task",
    "mechanism",
    "attack",
}
_MECH_KEYS = {"name", "params", "grid", "tasks"}
# A suite's `kind`; "paper" when the file has none. A "slice" is a few settings of the tracks,
# their own jobs (the main job, `make run`); it ranks nothing the tracks do not.
KINDS = ("track", "slice", "paper", "study")
DEFAULT_KIND = "paper"
# Jobs one suite may expand to (counted before they are built, `job_count_bound`).
MAX_JOBS = 1_000_000
# The largest noise scale a release may draw with: 64 standard deviations of it still fit
# in float32 (releases are float32 tensors), so no draw of the noise is infinite.
MAX_NOISE_SCALE = 3.4028234663852886e38 / 64
_ATTACK_KEYS = {"name", "params", "tasks", "mechanisms"}


@dataclass(frozen=True)
class Entry:
    """One component of a suite: a name and its fixed parameters and sweeps."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    tasks: tuple[str, ...] | None = None
    # [[task]] only: how many test samples its attack jobs score (default: the suite's).
    attack_samples: int | None = None
    # [[attack]] only: the mechanisms it attacks (None: every mechanism it applies to), so
    # a suite can skip an attack whose answer is known (a learned inverter on the identity).
    mechanisms: tuple[str, ...] | None = None

    def param_sets(self) -> list[dict[str, Any]]:
        """Every combination of the grid, each merged over the fixed params."""
        keys = sorted(self.grid)
        combos = itertools.product(*(self.grid[k] for k in keys))
        return [{**self.params, **dict(zip(keys, c, strict=True))} for c in combos]

    def applies_to(self, task: str) -> bool:
        return self.tasks is None or task in self.tasks

    def attacks_mechanism(self, mechanism: str) -> bool:
        return self.mechanisms is None or mechanism in self.mechanisms


@dataclass(frozen=True)
class Suite:
    """A parsed and validated suite file."""

    name: str
    version: str
    description: str
    seeds: int
    attack_samples: int
    tasks: tuple[Entry, ...]
    mechanisms: tuple[Entry, ...]
    attacks: tuple[Entry, ...]
    source: str
    # Where the suite's jobs run unless `bench run --device` says otherwise (bench.core.device);
    # None: the CPU.
    device: str | None = None
    # What kind of board it makes (KINDS): a standard track, a slice of the tracks, a paper
    # reproduction or a study.
    kind: str = DEFAULT_KIND
    # Seconds any job may run (bench.run.timeouts) unless `bench run --job-timeout` says
    # otherwise; None: the default from the job's kind.
    job_timeout: float | None = None


def suite_dir() -> Path:
    """The shipped suite files (package data)."""
    return Path(str(resources.files("bench") / "suite" / "files"))


def available_suites() -> list[str]:
    """Names of the shipped suites (their files' stems)."""
    return sorted(p.stem for p in suite_dir().glob("*.toml"))


def study_suites() -> dict[str, Path]:
    """The research suites by name: every suite file (a .toml with a string `name` and a
    [[task]] table, directly or one folder down) under the checkout's studies/ directory;
    none without one. A file that does not parse is left out (`bench run --suite PATH`
    says why)."""
    from bench.core.places import studies_dir

    root = studies_dir()
    if root is None:
        return {}
    found: dict[str, Path] = {}
    for path in sorted([*root.glob("*.toml"), *root.glob("*/*.toml")]):
        name = _suite_name(path)
        if name is not None:
            found.setdefault(name, path)
    return dict(sorted(found.items()))


def _suite_name(path: Path) -> str | None:
    """The `name` of a TOML file that looks like a suite, else None."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    name = raw.get("name")
    return name if isinstance(name, str) and isinstance(raw.get("task"), list) else None


def suite_kind(raw: dict[str, Any], default: str = DEFAULT_KIND) -> str:
    """A parsed suite file's `kind` (checked by `parse_suite`), else `default`."""
    kind = raw.get("kind", default)
    return kind if kind in KINDS else default


def selects(
    job: tuple[str, str, str | None],
    task: str | None,
    mechanism: str | None,
    attack: str | None,
) -> bool:
    """Whether `bench run`'s filters keep a job given as (task, mechanism, attack or None):
    utility jobs stay with any attack filter, since the attack rows need them."""
    job_task, job_mechanism, job_attack = job
    return (
        (task is None or job_task == task)
        and (mechanism is None or job_mechanism == mechanism)
        and (attack is None or job_attack in (None, attack))
    )


def suite_file(name_or_path: str) -> Path:
    """The file of a suite given by registered name or by path to a .toml file. A path that
    does not exist is "not found" (not an unknown name); a near-miss name gets a
    suggestion."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or len(path.parts) > 1:
        if not path.exists():
            raise UnknownNameError(f"suite file not found: {name_or_path}")
        return path
    path = suite_dir() / f"{name_or_path}.toml"
    if not path.exists():
        studies = study_suites()
        if name_or_path in studies:
            return studies[name_or_path]
        names = sorted({*available_suites(), *studies})
        raise UnknownNameError(
            f"unknown suite '{name_or_path}'{did_you_mean(name_or_path, names)}; known "
            f"suites: {', '.join(names)} (or pass a .toml path)"
        )
    return path


@dataclass(frozen=True)
class SuiteSource:
    """A suite file read and parsed as TOML once: its path, its bytes (a run's plan key)
    and its document (the suite, the paths its task options name)."""

    path: Path
    data: bytes
    raw: dict[str, Any]


def read_suite(name_or_path: str) -> SuiteSource:
    """Read a suite by registered name or by path to a .toml file; one clear line for a
    file that cannot be read or is not TOML."""
    path = suite_file(name_or_path)
    try:
        data = path.read_bytes()
        raw = tomllib.loads(data.decode("utf-8"))
    except IsADirectoryError as exc:
        raise SuiteFileError(f"{path}: is a directory, not a suite file") from exc
    except UnicodeDecodeError as exc:
        raise SuiteFileError(f"{path}: not UTF-8 text (TOML files are UTF-8)") from exc
    except OSError as exc:
        raise SuiteFileError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SuiteFileError(f"{path}: not valid TOML: {exc}") from exc
    return SuiteSource(path, data, raw)


def load_suite(suite: str | SuiteSource) -> Suite:
    """Load a suite by registered name, by path to a .toml file, or from its read source."""
    source = suite if isinstance(suite, SuiteSource) else read_suite(suite)
    return parse_suite(source.raw, str(source.path))


def _fail(source: str, message: str) -> SuiteFileError:
    return SuiteFileError(f"{source}: {message}")


def _check_keys(table: dict[str, Any], allowed: set[str], where: str, source: str) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise _fail(
            source, f"unknown key '{unknown[0]}' in {where}; allowed: {', '.join(sorted(allowed))}"
        )


def _int(raw: dict[str, Any], key: str, default: int, source: str, high: int | None = None) -> int:
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise _fail(source, f"'{key}' must be a positive integer, got {value!r}")
    if high is not None and value > high:
        raise _fail(source, f"'{key}' must be at most {high:,}, got {value:,}")
    return value


def _device(raw: dict[str, Any], source: str) -> str | None:
    """The suite's `device` key, checked like any other key (its availability is checked
    when a run starts, bench.core.device.resolve_device); None when absent."""
    if "device" not in raw:
        return None
    value = raw["device"]
    if not isinstance(value, str):
        raise _fail(
            source, f"'device' must be a string (cpu, cuda, cuda:N, mps, auto), got {value!r}"
        )
    try:
        from bench.core.device import parse_device  # torch: only for a suite that names a device

        return parse_device(value, "'device'")
    except DeviceError as exc:
        raise _fail(source, str(exc)) from exc


def _kind(raw: dict[str, Any], source: str) -> str:
    """The suite's `kind` key: one of KINDS, "paper" when absent."""
    kind = raw.get("kind", DEFAULT_KIND)
    if kind not in KINDS:
        hint = did_you_mean(str(kind), list(KINDS))
        raise _fail(source, f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}{hint}")
    return kind


def _job_timeout(raw: dict[str, Any], source: str) -> float | None:
    """The suite's `job_timeout` key in seconds (bench.run.timeouts), None when absent."""
    if "job_timeout" not in raw:
        return None
    try:
        return checked_timeout(raw["job_timeout"], "'job_timeout'")
    except ConfigError as exc:
        raise _fail(source, str(exc)) from exc


def _entries(raw: dict[str, Any], kind: str, allowed: set[str], source: str) -> tuple[Entry, ...]:
    tables = raw.get(kind, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise _fail(source, f"'{kind}' must be an array of tables ([[{kind}]])")
    entries = []
    for i, table in enumerate(tables):
        where = f"[[{kind}]] #{i + 1}"
        if kind != "task":
            _check_keys(table, allowed, where, source)
        name = table.get("name")
        if not isinstance(name, str):
            raise _fail(source, f"{where} needs a string 'name'")
        if kind == "task":
            params = {k: v for k, v in table.items() if k not in ("name", "attack_samples")}
            samples = (
                _int(table, "attack_samples", 0, source) if "attack_samples" in table else None
            )
            entries.append(Entry(name, params, attack_samples=samples))
            continue
        params, grid = table.get("params", {}), table.get("grid", {})
        if not isinstance(params, dict) or not isinstance(grid, dict):
            raise _fail(source, f"{where}: 'params' and 'grid' must be tables")
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise _fail(source, f"{where}: grid '{key}' must be a non-empty list")
        tasks = _names(table, "tasks", "task", where, source)
        mechanisms = _names(table, "mechanisms", "mechanism", where, source)
        entries.append(Entry(name, dict(params), dict(grid), tasks, mechanisms=mechanisms))
    if not entries and kind != "attack":
        raise _fail(source, f"a suite needs at least one [[{kind}]]")
    return tuple(entries)


def _names(
    table: dict[str, Any], key: str, kind: str, where: str, source: str
) -> tuple[str, ...] | None:
    """An optional non-empty list of names under `key` (None when absent)."""
    if key not in table:
        return None
    names = table[key]
    if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
        raise _fail(source, f"{where}: '{key}' must be a non-empty list of {kind} names")
    return tuple(names)


def parse_suite(raw: dict[str, Any], source: str = "<suite>") -> Suite:
    """Validate a parsed TOML document and check every name and parameter it uses."""
    _check_keys(raw, _TOP_KEYS, "the top level", source)
    for key in ("name", "version"):
        if not isinstance(raw.get(key), str):
            raise _fail(source, f"'{key}' must be a string")
    check_suite_name(raw["name"], source)
    suite = Suite(
        name=raw["name"],
        version=raw["version"],
        description=str(raw.get("description", "")),
        seeds=_int(raw, "seeds", 1, source, high=MAX_SEEDS),
        attack_samples=_int(raw, "attack_samples", 100, source),
        tasks=_entries(raw, "task", set(), source),
        mechanisms=_entries(raw, "mechanism", _MECH_KEYS, source),
        attacks=_entries(raw, "attack", _ATTACK_KEYS, source),
        source=source,
        device=_device(raw, source),
        kind=_kind(raw, source),
        job_timeout=_job_timeout(raw, source),
    )
    _check_components(suite)
    return suite


def _check_components(suite: Suite) -> None:
    """Resolve every name and instantiate every parameter set, so that a typo fails before
    any job runs; a task or a setting listed twice, and noise no release can draw, too."""
    task_names = {t.name for t in suite.tasks}
    mechanism_names = {m.name for m in suite.mechanisms}
    tasks = {}
    for entry in suite.tasks:
        key = (entry.name, canonical_json(entry.params))
        if key in tasks:
            raise _fail(
                suite.source,
                f"[[task]] {entry.name} with options {entry.params or '{}'} is listed twice; "
                "delete one",
            )
        tasks[key] = make_task(entry.name, entry.params, suite.source)
    count = job_count_bound(suite)
    if count > MAX_JOBS:
        raise _fail(
            suite.source,
            f"the suite expands to up to {count:,} jobs, more than {MAX_JOBS:,}; lower "
            "'seeds' or the grids",
        )
    for registry, entries in ((MECHANISMS, suite.mechanisms), (ATTACKS, suite.attacks)):
        seen: dict[str, list[Entry]] = {}
        for entry in entries:
            try:
                cls = registry.get(entry.name)
                for params in entry.param_sets():
                    instance = cls(**params)
                    setting = f"{entry.name} {canonical_json(instance.params)}"
                    _check_not_listed_twice(suite, entry, seen.setdefault(setting, []), setting)
                    if registry is MECHANISMS:
                        _check_noise(suite, entry, instance, tasks.values())
            except (UnknownNameError, ConfigError) as exc:
                raise _fail(suite.source, str(exc)) from exc
            for t in entry.tasks or ():
                if t not in task_names:
                    raise _fail(
                        suite.source, f"{entry.name}: 'tasks' names '{t}', not a task of this suite"
                    )
            for m in entry.mechanisms or ():
                if m not in mechanism_names:
                    raise _fail(
                        suite.source,
                        f"{entry.name}: 'mechanisms' names '{m}', not a mechanism of this suite",
                    )


def canonical_json(value: Any) -> str:
    """A parameter set as sorted JSON, to tell equal settings apart from other ones."""
    return json.dumps(value, sort_keys=True, default=str)


def job_count_bound(suite: Suite) -> int:
    """An upper bound on the jobs a suite expands to (every mechanism setting on every task,
    each with every attack setting), counted without building one."""
    settings = sum(_combinations(m) for m in suite.mechanisms)
    attacks = sum(_combinations(a) for a in suite.attacks)
    return len(suite.tasks) * settings * suite.seeds * (1 + attacks)


def _combinations(entry: Entry) -> int:
    count = 1
    for values in entry.grid.values():
        count *= len(values)
    return count


def _check_not_listed_twice(suite: Suite, entry: Entry, earlier: list[Entry], setting: str) -> None:
    """A mechanism or attack setting may appear in several entries only for disjoint tasks
    (and, for an attack, disjoint mechanisms): else its jobs are listed twice."""
    for other in earlier:
        tasks = _overlap(entry.tasks, other.tasks)
        mechanisms = _overlap(entry.mechanisms, other.mechanisms)
        if tasks and mechanisms:
            raise _fail(
                suite.source,
                f"setting {setting} is listed twice (in its grid, or in two entries for the "
                "same tasks); delete one",
            )
    earlier.append(entry)


def _overlap(a: tuple[str, ...] | None, b: tuple[str, ...] | None) -> bool:
    """Whether two optional name lists (None: all) share a name."""
    return a is None or b is None or bool(set(a) & set(b))


def _check_noise(suite: Suite, entry: Entry, mechanism: Any, tasks: Iterable[Any]) -> None:
    """A mechanism whose noise scale follows from its parameters and the task alone (its
    `calibrate(task)`) must get a finite scale a float32 release can draw: `r = 1e308` is
    refused here, not in every job."""
    calibrate = getattr(mechanism, "calibrate", None)
    if calibrate is None or "task" not in inspect.signature(calibrate).parameters:
        return
    for task in tasks:
        if not entry.applies_to(task.name) or task.modality not in mechanism.modalities:
            continue
        try:
            noise = calibrate(task)
        except (ValueError, OverflowError, ZeroDivisionError) as exc:
            scale, why = math.inf, str(exc)
        else:
            if noise is None:
                continue
            scale = float(noise.scale)
            why = f"scale {scale:g}"
        if not (math.isfinite(scale) and scale <= MAX_NOISE_SCALE):
            raise _fail(
                suite.source,
                f"mechanism {entry.name} {canonical_json(mechanism.params)} on task "
                f"{task.name}: its noise is not finite ({why}); lower the radius or raise eps",
            )


def make_task(name: str, options: dict[str, Any], source: str = "<suite>") -> Any:
    """Instantiate a registered task with suite options; unknown options are errors."""
    try:
        cls = TASKS.get(name)
    except UnknownNameError as exc:
        raise _fail(source, str(exc)) from exc
    accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
    unknown = sorted(set(options) - accepted)
    if unknown:
        raise _fail(
            source,
            f"task {name} has no option '{unknown[0]}'; its options: {', '.join(sorted(accepted))}",
        )
    try:
        return cls(**normalise_options(f"task {name}", cls.__init__, options))
    except ConfigError as exc:
        raise _fail(source, str(exc)) from exc
