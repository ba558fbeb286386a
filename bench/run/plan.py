"""A suite's jobs (`expand`), each with the code version of the parts it uses
(`code_hash_of`): the modules of its task, mechanism and attack classes and what they import,
the harness, and the audit for the utility jobs that run it; for a plug-in's class, also its
own package's code and its distribution's name and version (`plugin_modules_of`). The
record itself is bench.run.job.Job."""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from bench.certify.audit.registry import audit_modules
from bench.core.codeversion import AUDIT_PACKAGE, module_files, plugin_identity, top_package
from bench.core.codeversion import RESULT_NEUTRAL as RESULT_NEUTRAL  # re-exported (tests)
from bench.core.codeversion import code_files as code_files  # re-exported (tests)
from bench.core.device import jobs_device
from bench.core.errors import ConfigError
from bench.core.hashing import digest, files_digest
from bench.core.preflight import MAX_SEEDS
from bench.core.project import in_project
from bench.core.threads import threads_for
from bench.plugin.protocols import Task
from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS
from bench.run.job import Job
from bench.suite.read import MAX_JOBS, Entry, Suite, job_count_bound, make_task

# Harness modules every job's result depends on.
_HARNESS = (
    "bench.core.cpu_math",  # the ISA every job's CPU arithmetic is pinned to
    "bench.run.kinds.reconstruction",
    "bench.plugin.protocols",
    "bench.plugin.training",
    "bench.metrics.reconstruction",
    "bench.metrics.utility",
    "bench.metrics.stats",
)


def code_files_of(*classes: type, audited: bool = False) -> set[Path]:
    """The source files a job's code version covers: the modules of each class and its
    project base classes, what they import from the project, and the harness modules;
    the audit's modules only for a job that runs the audit (`audited`)."""
    skip_audit = not audited
    files: set[Path] = set()
    for cls in classes:
        for base in cls.__mro__:
            if in_project(base.__module__):
                files |= module_files(base.__module__, skip_audit)
    for module_name in _HARNESS:
        files |= module_files(module_name, skip_audit)
    if audited:
        files |= module_files(f"{AUDIT_PACKAGE}.core")
        for cls in classes:  # a family's own audit (bench.certify.audit.registry)
            for module_name in audit_modules(cls):
                files |= module_files(module_name)
    return files


def plugin_modules_of(*classes: type) -> tuple[str, ...]:
    """The modules of the classes that are not the project's, and of their bases from the
    same top-level package: the plug-in code a job's code version adds (empty for a job of
    the project's own components)."""
    modules: set[str] = set()
    for cls in classes:
        if in_project(cls.__module__):
            continue
        package = top_package(cls.__module__)
        modules |= {b.__module__ for b in cls.__mro__ if top_package(b.__module__) == package}
    return tuple(sorted(modules))


@cache
def code_hash_of(*classes: type, audited: bool = False) -> str:
    """Code version of the parts a job uses: the files of `code_files_of`, and for a job
    with a plug-in's class, that plug-in's code and distribution too
    (bench.core.codeversion.plugin_identity). A job of the project's own classes has no
    plug-in part, so its hash is exactly the digest of its project files."""
    project = files_digest(sorted(code_files_of(*classes, audited=audited)))
    plugin = plugin_identity(*plugin_modules_of(*classes))
    if plugin is None:
        return project
    return digest({"project": project, "plugin": plugin})


def _infers_membership(attack_cls: type) -> bool:
    """Whether an attack class infers membership (bench.run.kinds.membership.MembershipAttack)
    rather
    than reconstructing inputs."""
    return bool(getattr(attack_cls, "infers_membership", False))


def attack_samples_of(suite: Suite, entry: Entry, task: Task) -> int:
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


def check_sizes(suite: Suite, entry: Entry, task: Task) -> None:
    """A size option larger than its split is refused, naming the size there is: the task
    would run on fewer samples than its config (and every stored row) says."""
    splits = None
    for key, split in (("n_train", "train"), ("n_aux", "aux"), ("n_test", "test")):
        wanted = getattr(task, key, None)
        if not isinstance(wanted, int):
            continue
        splits = splits or task.splits()
        have = len(getattr(splits, split))
        if wanted > have:
            raise ConfigError(
                f"{suite.source}: task {entry.name}: {key} = {wanted:,}, but its {split} "
                f"split has only {have:,} samples; set {key} <= {have} (or leave it out: all)"
            )


def check_seeds(suite: Suite, seeds: int | None) -> None:
    """A --seeds override within [1, MAX_SEEDS] that keeps the suite within MAX_JOBS jobs;
    else a one-line ConfigError."""
    if seeds is None:
        return
    if not 1 <= seeds <= MAX_SEEDS:
        raise ConfigError(f"--seeds must be in [1, {MAX_SEEDS}], got {seeds:,}")
    bound = job_count_bound(replace(suite, seeds=seeds))
    if bound > MAX_JOBS:
        raise ConfigError(
            f"{suite.source} with {seeds} seeds expands to up to {bound:,} jobs, more "
            f"than {MAX_JOBS:,}; lower --seeds"
        )


def attacks_of(suite: Suite, task_name: str, modality: str, m_entry: Entry) -> list[Entry]:
    """The suite's attacks that run on a (task, mechanism): those that apply to both and
    to the task's modality, reconstruction attacks on mechanisms with an encoder and
    membership-inference attacks on label-only ones (bench.run.kinds.membership)."""
    m_cls = MECHANISMS.get(m_entry.name)
    return [
        a
        for a in suite.attacks
        if a.applies_to(task_name)
        and a.attacks_mechanism(m_entry.name)
        and modality in ATTACKS.get(a.name).modalities
        and bool(m_cls.releases_labels) == _infers_membership(ATTACKS.get(a.name))
    ]


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
    bench.core.device; None: the suite's `device` key, else the CPU); utility jobs (attack None)
    always included for the selected (task, mechanism) pairs."""
    on = jobs_device(device or suite.device, check=False, where=f"{suite.source}: 'device'")
    check_seeds(suite, seeds)
    jobs: list[Job] = []
    for t_entry in suite.tasks:
        if task is not None and t_entry.name != task:
            continue
        task_obj: Task = make_task(t_entry.name, t_entry.params, suite.source)
        check_sizes(suite, t_entry, task_obj)
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
            # Reconstruction attacks need an encoder, which a label-only release does not
            # have; membership-inference attacks need label-only access
            # (bench.run.kinds.membership).
            attack_entries = [
                a
                for a in attacks_of(suite, t_entry.name, task_obj.modality, m_entry)
                if attack is None or a.name == attack
            ]
            samples = attack_samples_of(suite, t_entry, task_obj) if attack_entries else 0
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
