"""Tests of the docs: quoted numbers come from committed files, pages match their Markdown."""

import importlib.util
from types import ModuleType

from tests.conftest import ROOT


def doc_script(name: str) -> ModuleType:
    """The script docs/scripts/NAME.py, imported as a module (the scripts are not a package)."""
    path = ROOT / "docs" / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
