"""Tests of the docs: quoted numbers come from committed files, pages match their Markdown."""

import importlib.util
import sys
from types import ModuleType

from tests.conftest import ROOT


def doc_script(name: str) -> ModuleType:
    """The script docs/scripts/NAME.py, imported as a module (the scripts are not a package)."""
    path = ROOT / "docs" / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does: dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def assert_block_is_current(page: str, script: ModuleType, command: str) -> None:
    """docs/PAGE holds, between the script's BEGIN and END markers, exactly the block the
    script writes from the committed boards (`command` rewrites it)."""
    text = (ROOT / "docs" / page).read_text()
    start, end = text.find(script.BEGIN), text.find(script.END)
    assert 0 <= start < end, f"docs/{page} has no {script.BEGIN} block"
    assert text[start : end + len(script.END)] == script.block(), (
        f"docs/{page}'s block differs from the committed boards: run `{command}`"
    )
