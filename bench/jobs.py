"""Jobs: one (task, mechanism + params, attack + params or None, seed) of a suite.

A job's identity is a hash of its resolved config, the task version, the data actually
loaded, and the code version of the parts it uses; the store skips any job whose hash
it already holds, which is what makes reruns free and interrupted runs resumable.
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from bench.device import device_kind, jobs_device
from bench.errors import ConfigError
from bench.hashing import digest, files_digest
from bench.project import in_project
from bench.protocols import Task
from bench.registry import ATTACKS, MECHANISMS, TASKS
from bench.suite import Entry, Suite, make_task
from bench.threads import threads_for

# Harness modules every job's result depends on.
_HARNESS = (
    "bench.cpu_math",  # the ISA every job's CPU arithmetic is pinned to
    "bench.evaluate",
    "bench.protocols",
    "bench.training",
    "bench.metrics.reconstruction",
    "bench.metrics.utility",
    "bench.metrics.stats",
)
# The privacy audit runs in utility jobs only (bench.evaluate), so only their code version
# covers it: a better audit re-runs the cheap utility jobs, not the attacks.
_AUDIT_PACKAGE = "bench.certify.audit"
# Modules that decide which jobs exist, find components by name, parse suite files, store
# artifacts and word errors, but compute no number a job reports. They are left out of the
# code version (and their imports are not followed), so hardening them re-runs nothing:
# what they decide about a job is hashed as data (the resolved config, the task version
# and the data fingerprint), and the artifact cache keys each artifact by its own recipe.
RESULT_NEUTRAL = frozenset(
    {
        "bench.errors",
        "bench.fsutil",
        "bench.registry",
        "bench.suite",
        "bench.jobs",
        "bench.cache",
        "bench.project",
    }
)


@dataclass(frozen=True)
class Job:
    """A unit of work; `hash` identifies it across runs and machines."""

    task: str
    task_options: dict[str, Any]  # as written in the suite (may hold a local data_root)
    task_config: dict[str, Any]  # resolved options that define the data and model
    mechanism: str
    params: dict[str, Any]
    attack: str | None
    attack_params: dict[str, Any]
    seed: int
    attack_samples: int
    task_version: str
    data_hash: str
    code_hash: str
    # Intra-op threads the job runs with (bench.threads); fixed by the mechanism's code,
    # which the code hash covers, so it is not hashed again.
    threads: int = 1
    # Where the job runs (bench.device): "cpu", "cuda", "cuda:N" or "mps". An accelerator's
    # kernels give other floats than the CPU's, so its kind (not its index) is part of the
    # hash; the CPU is not, so CPU jobs keep the hashes they had before devices existed.
    device: str = "cpu"
    hash: str = field(init=False)

    def __post_init__(self) -> None:
        identity = {
            "config": self.config(),
            "task_version": self.task_version,
            "data": self.data_hash,
            "code": self.code_hash,
        }
        kind = device_kind(self.device)
        if kind != "cpu":
            identity["device"] = kind
        object.__setattr__(self, "hash", digest(identity, length=20))

    def config(self) -> dict[str, Any]:
        """The resolved configuration (defaults filled in) that defines this job."""
        return {
            "task": self.task,
            "task_config": self.task_config,
            "mechanism": self.mechanism,
            "params": self.params,
            "attack": self.attack,
            "attack_params": self.attack_params,
            "seed": self.seed,
            "attack_samples": self.attack_samples if self.attack else None,
        }

    def label(self) -> str:
        params = ",".join(f"{k}={v}" for k, v in sorted(self.params.items()))
        tail = f" / {self.attack}" if self.attack else ""
        return f"{self.task} / {self.mechanism}({params}){tail} / seed {self.seed}"


def _project_imports(module: ModuleType) -> set[str]:
    """Names of the project modules whose names `module` imports (or which it imports)."""
    owners: set[str] = set()
    for value in vars(module).values():
        owner = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(owner, str) and in_project(owner) and owner in sys.modules:
            owners.add(owner)
    return owners


@cache
def _module_files(module_name: str, skip_audit: bool = False) -> frozenset[Path]:
    """Source files of a module and, transitively, of every project module it draws on,
    so an edit anywhere below a mechanism (a helper of a helper) changes its code hash.
    Result-neutral modules (and, with `skip_audit`, the audit package) are not followed."""
    if module_name not in sys.modules:
        __import__(module_name)
    files: set[Path] = set()
    seen: set[str] = set()
    pending = [module_name]
    while pending:
        name = pending.pop()
        if name in seen or _excluded(name, skip_audit):
            continue
        seen.add(name)
        src = getattr(sys.modules[name], "__file__", None)
        if src:
            files.add(Path(src))
        pending.extend(_project_imports(sys.modules[name]) - seen)
    return frozenset(files)


def _excluded(module_name: str, skip_audit: bool) -> bool:
    audit = module_name == _AUDIT_PACKAGE or module_name.startswith(_AUDIT_PACKAGE + ".")
    return module_name in RESULT_NEUTRAL or (skip_audit and audit)


def code_files_of(*classes: type, audited: bool = False) -> set[Path]:
    """The source files a job's code version covers: the modules of each class and its
    project base classes, what they import from the project, and the harness modules;
    the audit's modules only for a job that runs the audit (`audited`)."""
    skip_audit = not audited
    files: set[Path] = set()
    for cls in classes:
        for base in cls.__mro__:
            if in_project(base.__module__):
                files |= _module_files(base.__module__, skip_audit)
    for module_name in _HARNESS:
        files |= _module_files(module_name, skip_audit)
    if audited:
        files |= _module_files(f"{_AUDIT_PACKAGE}.core")
    return files


def code_files(*module_names: str) -> frozenset[Path]:
    """Source files of modules and, transitively, of every project module they draw on (the
    audit excepted)."""
    return frozenset().union(*(_module_files(name, skip_audit=True) for name in module_names))


@cache
def code_digest(*module_names: str) -> str:
    """`files_digest` of `code_files`, for the code part of an artifact recipe: an edit
    anywhere below the code that builds an artifact re-keys it, as it re-hashes the jobs
    that use it."""
    return files_digest(sorted(code_files(*module_names)))


@cache
def code_hash_of(*classes: type, audited: bool = False) -> str:
    """Code version of the parts a job uses (the files of `code_files_of`)."""
    return files_digest(sorted(code_files_of(*classes, audited=audited)))


def _attack_samples(suite: Suite, entry: Entry, task: Task) -> int:
    """The test samples the task's attack jobs score; a suite asking for more than the task
    has is refused (the row would record a sample count its metrics do not have)."""
    wanted = entry.attack_samples or suite.attack_samples
    n_test = len(task.splits().test)
    if wanted > n_test:
        raise ConfigError(
            f"{suite.source}: attack_samples = {wanted}, but task {entry.name} has only "
            f"{n_test} test samples; set attack_samples = {n_test} in its [[task]] (or lower "
            "the suite's)"
        )
    return wanted


def expand(
    suite: Suite,
    *,
    seeds: int | None = None,
    task: str | None = None,
    mechanism: str | None = None,
    attack: str | None = None,
    device: str | None = None,
) -> list[Job]:
    """All jobs of a suite, optionally filtered, to run on `device` (a device string,
    bench.device; None: the suite's `device` key, else the CPU); utility jobs (attack None)
    always included for the selected (task, mechanism) pairs."""
    on = jobs_device(device or suite.device, check=False, where=f"{suite.source}: 'device'")
    jobs: list[Job] = []
    for t_entry in suite.tasks:
        if task is not None and t_entry.name != task:
            continue
        task_obj: Task = make_task(t_entry.name, t_entry.params, suite.source)
        data_hash = task_obj.data_fingerprint()
        task_cls = TASKS.get(t_entry.name)
        for m_entry in suite.mechanisms:
            if (mechanism is not None and m_entry.name != mechanism) or not m_entry.applies_to(
                t_entry.name
            ):
                continue
            m_cls = MECHANISMS.get(m_entry.name)
            if task_obj.modality not in m_cls.modalities:
                continue
            # Reconstruction attacks need an encoder; a label-only release has none.
            attack_entries = [
                a
                for a in suite.attacks
                if (attack is None or a.name == attack)
                and a.applies_to(t_entry.name)
                and a.attacks_mechanism(m_entry.name)
                and task_obj.modality in ATTACKS.get(a.name).modalities
                and not m_cls.releases_labels
            ]
            samples = _attack_samples(suite, t_entry, task_obj) if attack_entries else 0
            for m_params in m_entry.param_sets():
                resolved = m_cls(**m_params).params
                for seed in range(seeds or suite.seeds):
                    targets: list[tuple[str | None, dict[str, Any], tuple[type, ...]]] = [
                        (None, {}, ())
                    ]
                    for a_entry in attack_entries:
                        a_cls = ATTACKS.get(a_entry.name)
                        for a_params in a_entry.param_sets():
                            targets.append((a_entry.name, a_cls(**a_params).params, (a_cls,)))
                    for a_name, a_params, a_classes in targets:
                        jobs.append(
                            Job(
                                task=t_entry.name,
                                task_options=dict(t_entry.params),
                                task_config=task_obj.config(),
                                mechanism=m_entry.name,
                                params=resolved,
                                attack=a_name,
                                attack_params=a_params,
                                seed=seed,
                                attack_samples=samples,
                                task_version=task_cls.version,
                                data_hash=data_hash,
                                code_hash=code_hash_of(
                                    task_cls, m_cls, *a_classes, audited=a_name is None
                                ),
                                threads=threads_for(m_cls),
                                device=on,
                            )
                        )
    return jobs
