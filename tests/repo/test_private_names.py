"""Helpers shared between the reporting package's modules are public names: no module of
bench.report imports a name starting with an underscore from another module."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import ROOT


def private_imports(path: Path) -> list[str]:
    """ "module.name" for each underscore name that `path` imports from a project module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] not in ("bench", "mechanisms", "attacks"):
                continue
            found += [
                f"{node.module}.{alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return found


@pytest.mark.parametrize(
    "path", sorted((ROOT / "bench" / "report").rglob("*.py")), ids=lambda p: p.name
)
def test_the_reporting_modules_share_no_private_name(path: Path) -> None:
    assert private_imports(path) == []


def test_a_planted_private_import_is_found(tmp_path: Path) -> None:
    module = tmp_path / "planted.py"
    module.write_text(
        "from bench.report.board.labels import by_config, _hidden\nfrom os import _exit\n"
    )
    assert private_imports(module) == ["bench.report.board.labels._hidden"]
