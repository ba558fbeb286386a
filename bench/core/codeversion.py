"""Code versions: the source files a module draws on, followed through its project imports.

Job hashes (bench.run.plan) and artifact cache entries (bench.plugin.artifacts) are both keyed by
them, so
an edit anywhere below the code that computes a number (a helper of a helper) re-runs the
jobs and rebuilds the artifacts that depend on it, and nothing else.

A plug-in's code (a component from outside the project's packages, by entry point or as
`module:Class`) is versioned the same way within its own top-level package
(`plugin_identity`): the source of the module that defines the class and of every module of
that package it draws on, with the name and version of the distribution that installs it.
Only code outside the project gets this part, so the project's own jobs and artifacts keep
exactly the hashes they had without it.
"""

from __future__ import annotations

import inspect
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from bench.core.hashing import digest, files_digest
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


# ------------------------------------------------------------------ plug-in code versions


def top_package(module_name: str) -> str:
    """The top-level package (or lone module) a module belongs to."""
    return module_name.split(".")[0]


def _package_imports(module: ModuleType, package: str) -> set[str]:
    """Names of the loaded modules of `package` that `module` draws on: those whose names
    it holds (as `_project_imports` finds them for the project) and those its import
    statements name, so that a constant imported from a helper counts too."""
    owners: set[str] = set()
    for value in vars(module).values():
        owner = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", None)
        if isinstance(owner, str):
            owners.add(owner)
    owners |= _imported_names(module)
    return {o for o in owners if top_package(o) == package and o in sys.modules}


def _imported_names(module: ModuleType) -> set[str]:
    """The modules `module`'s import statements name (relative ones resolved), read from
    its source; empty when it has none to read."""
    import ast

    src = getattr(module, "__file__", None)
    try:
        tree = ast.parse(Path(src).read_text(encoding="utf-8")) if src else None
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        tree = None
    if tree is None:
        return set()
    is_package = Path(src).name == "__init__.py"
    parts = module.__name__.split(".")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = parts if is_package else parts[:-1]
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names |= {f"{base}.{alias.name}" for alias in node.names}
    return names


@cache
def plugin_closure(module_name: str) -> frozenset[str]:
    """A plug-in module and, transitively, every module of its own top-level package that
    it draws on (the project's modules are versioned apart, and third-party libraries by
    the distributions installed, bench.run.warm)."""
    if module_name not in sys.modules:
        __import__(module_name)
    package = top_package(module_name)
    seen: set[str] = set()
    pending = [module_name]
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        pending.extend(_package_imports(sys.modules[name], package) - seen)
    return frozenset(seen)


def plugin_files(module_name: str) -> frozenset[Path]:
    """The source files of `plugin_closure(module_name)`."""
    sources = (getattr(sys.modules[n], "__file__", None) for n in plugin_closure(module_name))
    return frozenset(Path(src) for src in sources if src)


def _dist_info_dirs(folder: Path) -> list[Path]:
    """The distribution metadata directories directly in `folder`."""
    try:
        found = [p for p in folder.iterdir() if p.name.endswith((".dist-info", ".egg-info"))]
    except OSError:
        return []
    return sorted(p for p in found if p.is_dir())


def _installs(meta: Path, package: str) -> bool:
    """Whether the distribution whose metadata is in `meta` installs top-level `package`:
    its top_level.txt names it, or its RECORD lists a file of it."""
    try:
        top_level = (meta / "top_level.txt").read_text().split()
        if package in top_level:
            return True
    except OSError:
        pass
    try:
        record = (meta / "RECORD").read_text().splitlines()
    except OSError:
        return False
    return any(line.startswith((f"{package}/", f"{package}.py,")) for line in record)


def _metadata_name_version(meta: Path) -> tuple[str, str] | None:
    from importlib.metadata import PathDistribution

    dist = PathDistribution(meta)
    name, version = dist.metadata["Name"], dist.version
    return (str(name), str(version)) if name and version else None


@cache
def plugin_distribution(module_name: str) -> tuple[str, str] | None:
    """(name, version) of the distribution that installs a plug-in module: the one its
    entry point came from (bench.plugin.registry), else the one whose metadata beside its
    top-level package says it installs it; None for code on the import path that no
    distribution installs (its files alone version it)."""
    from bench.plugin.registry import entry_point_distribution

    package = top_package(module_name)
    found = entry_point_distribution(package)
    if found is not None:
        return found
    src = getattr(sys.modules.get(package), "__file__", None)
    if not src:
        return None
    path = Path(src)
    folder = path.parent.parent if path.name == "__init__.py" else path.parent
    for meta in _dist_info_dirs(folder):
        if _installs(meta, package):
            return _metadata_name_version(meta)
    return None


@cache
def plugin_identity(*module_names: str) -> str | None:
    """The code version of plug-in modules (`plugin_files` of each, and the name and version
    of the distributions installing them), or None when `module_names` is empty: the part
    a job or an artifact made by plug-in code adds to its key."""
    names = sorted({n for n in module_names if not in_project(n)})
    if not names:
        return None
    files = frozenset().union(*(plugin_files(name) for name in names))
    dists = sorted({f"{d[0]}=={d[1]}" for name in names if (d := plugin_distribution(name))})
    return digest({"files": files_digest(sorted(files)), "distributions": dists})


def clear_caches() -> None:
    """Forget every code version computed in this process (a test that edits a source file
    and lists its jobs again, in the same process)."""
    for cached in (module_files, code_digest, plugin_closure, plugin_distribution, plugin_identity):
        cached.cache_clear()
