"""Code versions: the source files a module draws on, followed through its project imports.

Job hashes (bench.run.plan) and artifact cache entries (bench.plugin.artifacts) are both keyed by
them, so
an edit anywhere below the code that computes a number (a helper of a helper) re-runs the
jobs and rebuilds the artifacts that depend on it, and nothing else.
"""

from __future__ import annotations

import inspect
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from bench.core.hashing import files_digest
from bench.core.project import in_project

# The privacy audit runs in utility jobs only (bench.run.kinds.reconstruction), so only their code
# version
# covers it: a better audit re-runs the cheap utility jobs, not the attacks.
AUDIT_PACKAGE = "bench.certify.audit"
# Modules that decide which jobs exist, find components by name, parse suite files, store
# artifacts and word errors, but compute no number a job reports. They are left out of the
# code version (and their imports are not followed), so hardening them re-runs nothing:
# what they decide about a job is hashed as data (the resolved config, the task version
# and the data fingerprint), and the artifact cache keys each artifact by its own recipe.
RESULT_NEUTRAL = frozenset(
    {
        "bench.core.errors",
        "bench.core.fsutil",
        "bench.plugin.registry",
        "bench.suite.read",
        "bench.run.plan",
        "bench.plugin.artifacts",
        "bench.core.project",
        "bench.core.codeversion",
    }
)


def _project_imports(module: ModuleType) -> set[str]:
    """Names of the project modules whose names `module` imports (or which it imports)."""
    owners: set[str] = set()
    for value in vars(module).values():
        owner = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(owner, str) and in_project(owner) and owner in sys.modules:
            owners.add(owner)
    return owners


def _excluded(module_name: str, skip_audit: bool) -> bool:
    audit = module_name == AUDIT_PACKAGE or module_name.startswith(AUDIT_PACKAGE + ".")
    return module_name in RESULT_NEUTRAL or (skip_audit and audit)


@cache
def module_files(module_name: str, skip_audit: bool = False) -> frozenset[Path]:
    """Source files of a module and, transitively, of every project module it draws on.
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


def code_files(*module_names: str, skip_audit: bool = True) -> frozenset[Path]:
    """`module_files` of several modules (by default without the audit package)."""
    return frozenset().union(*(module_files(name, skip_audit) for name in module_names))


@cache
def code_digest(*module_names: str, skip_audit: bool = True) -> str:
    """`files_digest` of `code_files`, for the code part of an artifact recipe: an edit
    anywhere below the code that builds an artifact re-keys it, as it re-hashes the jobs
    that use it."""
    return files_digest(sorted(code_files(*module_names, skip_audit=skip_audit)))
