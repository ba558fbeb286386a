"""The project's code hash (`bench --version`), computed without importing torch.

Every source file of the bench, mechanisms and attacks packages, named from the top of its
package tree, is hashed in one sha256: the same digest as `bench.core.hashing.files_digest` over
those files, kept here apart so that printing the version takes a fraction of a second.
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from bench.core.project import PROJECT_PACKAGES


def _package_relative(path: Path) -> str:
    """`path` from the top of its package tree (e.g. bench/certify/milp.py)."""
    top = path.parent
    while (top / "__init__.py").exists():
        top = top.parent
    return path.relative_to(top).as_posix()


def project_source_files() -> list[Path]:
    """Every .py file of the project's packages, resolved, sorted and without repeats."""
    paths: set[Path] = set()
    for package in PROJECT_PACKAGES:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            paths.update(p.resolve() for p in Path(location).rglob("*.py"))
    return sorted(paths)


def project_code_hash(length: int = 16) -> str:
    """Short sha256 over the package-relative names and contents of every project source
    file: the code version `bench --version` prints."""
    h = hashlib.sha256()
    for path in project_source_files():
        h.update(_package_relative(path).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:length]
