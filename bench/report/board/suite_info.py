"""What a board's page reads from its shipped suite file (bench/suite/files/<suite>.toml):
the task order, the description and the declared kind. Read as TOML alone, not as a loaded
suite, so a page is written without building a task or a mechanism; a suite not shipped (a
board of a suite given by path, a renamed suite) has none of them."""

from __future__ import annotations

import tomllib
from functools import cache
from typing import Any

from bench.core.errors import SuiteFileError
from bench.suite.read import DEFAULT_KIND, suite_dir, suite_kind


@cache
def _shipped_text(suite: str) -> str:
    try:
        return (suite_dir() / f"{suite}.toml").read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


def shipped_suite(suite: str) -> dict[str, Any]:
    """The shipped suite file of `suite` as a TOML document, {} when there is none (or it is
    not TOML)."""
    try:
        doc = tomllib.loads(_shipped_text(suite))
    except tomllib.TOMLDecodeError:
        return {}
    return doc if isinstance(doc, dict) else {}


def suite_description(suite: str) -> str:
    """The shipped suite's description ("" when not shipped)."""
    return str(shipped_suite(suite).get("description", ""))


def declared_kind(suite: str) -> str | None:
    """The kind the shipped suite file declares (its `kind` key), None when it declares none
    or is not shipped (an invalid value reads as the default; loading the suite refuses it)."""
    raw = shipped_suite(suite)
    if "kind" not in raw:
        return None
    return suite_kind(raw)


def shipped_kinds() -> dict[str, str]:
    """Suite -> kind of every shipped suite file (DEFAULT_KIND where it declares none)."""
    out = {}
    for path in sorted(suite_dir().glob("*.toml")):
        try:
            out[path.stem] = declared_kind(path.stem) or DEFAULT_KIND
        except SuiteFileError:
            continue
    return out
