"""The project's import graph: no cycles anywhere (module-level and function-level imports
both count, since a deferred import is how a cycle hides), the reporting package never
imports upward into the CLI, the API, the runner or the validation code, the contract checks
(bench.plugin.checks) are reached only through `bench validate`, and mechanisms and attacks never
import the job listing (bench.run.plan)."""

from __future__ import annotations

import ast
import importlib
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = ("bench", "mechanisms", "attacks")
UPWARD = (
    "bench.cli.app",
    "bench.api",
    "bench.run.runner",
    "bench.plugin.checks.validation",
    "bench.plugin.checks",
)
# The harness modules that may import the contract checks: `bench validate` and its command.
CHECK_USERS = {
    "bench.plugin.checks": {"bench.plugin.checks.validation"},
    "bench.plugin.checks.validation": {"bench.cli.validate"},
}


def project_modules(root: Path = ROOT) -> dict[str, Path]:
    """Dotted name -> source file of every module of the project's packages under `root`."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if not all(
                (root.joinpath(*parts[:i]) / "__init__.py").exists() for i in range(1, len(parts))
            ):
                continue  # not inside a package (e.g. a stray script)
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            modules[name] = path
    return modules


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ImportFrom names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1]
    return ".".join([*base, node.module] if node.module else base)


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Edges module -> project modules it imports anywhere in its source."""
    modules = project_modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(name, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            for target in targets:
                while target and target not in modules:  # `import a.b.c` of a non-module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


@cache
def project_graph() -> dict[str, set[str]]:
    """The import graph of this checkout, built once for the parametrized tests."""
    return import_graph()


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_imports() -> None:
    for name in project_modules():
        importlib.import_module(name)


def test_no_import_cycle_anywhere() -> None:
    assert cycles(import_graph()) == []


def test_the_cycle_finder_finds_a_planted_cycle(tmp_path: Path) -> None:
    pkg = tmp_path / "bench"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from bench.b import x\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("import bench.a\n")
    assert cycles(import_graph(tmp_path)) == [["bench.a", "bench.b"]]


@pytest.mark.parametrize(
    "module", sorted(m for m in project_modules() if m.startswith("bench.report"))
)
def test_the_reporting_package_never_imports_upward(module: str) -> None:
    upward = sorted(t for t in project_graph()[module] if t.startswith(UPWARD))
    assert upward == [], f"{module} imports {upward}"


@pytest.mark.parametrize("module", sorted(m for m in project_modules() if m.startswith("bench")))
def test_the_contract_checks_are_imported_only_by_bench_validate(module: str) -> None:
    imported = project_graph()[module]
    wrong = sorted(t for t, users in CHECK_USERS.items() if t in imported and module not in users)
    assert wrong == [], f"{module} imports {wrong}"


@pytest.mark.parametrize(
    "module", sorted(m for m in project_modules() if m.startswith(("mechanisms", "attacks")))
)
def test_mechanisms_and_attacks_never_import_the_job_listing(module: str) -> None:
    assert "bench.run.plan" not in project_graph()[module], f"{module} imports bench.run.plan"
