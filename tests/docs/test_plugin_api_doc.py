"""docs/plugin-api.md is written by docs/scripts/plugin_reference.py from the code (bench.plugin's
public names, their fields, types and docstrings, and the registered privacy notions): a
change to the API or to a notion makes this fail until the page is rewritten."""

from __future__ import annotations

import re
from types import ModuleType

import bench.plugin
from tests.conftest import ROOT
from tests.docs import doc_script

PAGE = ROOT / "docs" / "plugin-api.md"


def _script() -> ModuleType:
    return doc_script("plugin_reference")


def test_the_committed_page_is_the_one_the_code_gives() -> None:
    assert PAGE.read_text(encoding="utf-8") == _script().render(), (
        "docs/plugin-api.md differs from the code: run `python docs/scripts/plugin_reference.py`"
    )


def test_every_public_name_and_every_notion_is_on_the_page() -> None:
    text = PAGE.read_text(encoding="utf-8")
    headings = set(re.findall(r"^#### `(\w+)`$", text, re.M))
    assert set(bench.plugin.__all__) <= headings
    rows = set(re.findall(r"^\| `([\w-]+)` \|", text, re.M))
    notions = {spec.name for spec in _script().project_notions()}
    assert {"none", "ldp", "ip", "dp", "idp", "dfil", "reconstruction"} <= notions <= rows


def test_the_containers_a_plugin_author_touches_list_their_fields_with_types() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for container, fields in {
        "DataSplit": ("x", "y"),
        "Splits": ("train", "aux", "test"),
        "FitContext": ("seed", "cache", "device"),
        "Task": ("num_classes", "input_shape", "data_range"),
    }.items():
        section = text.split(f"#### `{container}`\n", 1)[1].split("\n#### ", 1)[0]
        for name in fields:
            assert re.search(rf"^\| `{name}` \| `[^`]+` \|", section, re.M), (container, name)
