"""Every measured number a doc quotes comes from a committed file: a leaderboard, a
reproduction table, a reproduction under docs/reproductions/, or a study's board or record
under studies/ (the project's rule: "a result that is not committed is not a result"). The
docs are docs/*.md, README.md and the studies' READMEs.

A number here is a decimal with at least three digits after the point (0.8123, 13.558):
what a measurement prints, not a parameter such as eps 0.1. It counts as quoted when the
same text appears in a committed results file, or a committed number rounds to it. Text
that quotes no result is left out: the blocks `bench reproduce --docs` writes (tested in
test_reproduction.py), fenced code, inline code (constants of the code) and walkthrough
output between `<!-- example:begin -->` and `<!-- example:end -->`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

DOCS = [
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "README.md",
    *sorted((ROOT / "studies").glob("**/README.md")),
]
NUMBER = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\w.])")
SKIPPED = [
    re.compile(r"<!-- reproduction:begin.*?reproduction:end -->", re.S),
    re.compile(r"<!-- example:begin -->.*?<!-- example:end -->", re.S),
    re.compile(r"```.*?```", re.S),
    re.compile(r"`[^`\n]*`"),
]


def _numbers_in(obj: Any, out: set[float]) -> None:
    if isinstance(obj, dict):
        for value in obj.values():
            _numbers_in(value, out)
    elif isinstance(obj, list):
        for value in obj:
            _numbers_in(value, out)
    elif isinstance(obj, int | float) and not isinstance(obj, bool):
        out.add(float(obj))


@cache
def committed() -> tuple[frozenset[float], str]:
    """Every number in the committed JSON results, and the text of the other result files."""
    values: set[float] = set()
    texts = []
    results = [
        *ROOT.glob("leaderboards/*/*"),
        *ROOT.glob("docs/reproductions/**/*"),
        *ROOT.glob("studies/*/boards/*/*"),
        *ROOT.glob("studies/*/records/**/*"),
    ]
    for path in results:
        if path.suffix == ".json":
            _numbers_in(json.loads(path.read_text()), values)
        elif path.suffix in {".md", ".csv", ".txt"}:
            texts.append(path.read_text())
    return frozenset(values), "\n".join(texts)


@cache
def committed_rounded(digits: int) -> frozenset[float]:
    """Every committed number rounded to `digits` places: one set lookup per quoted token
    instead of a scan of every committed number."""
    return frozenset(round(v, digits) for v in committed()[0])


@cache
def committed_tokens() -> frozenset[str]:
    """Every decimal written in the committed text files, each run of digits taken whole
    (not preceded by a digit or a point, not cut inside its digits): a token appears as
    such in the text exactly when it is one of these."""
    return frozenset(re.findall(r"(?<![\d.])(\d+\.\d+)", committed()[1]))


def is_quoted(token: str) -> bool:
    if token in committed_tokens():
        return True
    digits, target = len(token.split(".")[1]), float(token)
    return target in committed_rounded(digits)


def quoted_numbers(text: str) -> list[str]:
    for pattern in SKIPPED:
        text = pattern.sub(" ", text)
    return NUMBER.findall(text)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_measured_number_in_the_docs_is_committed(doc: Path) -> None:
    missing = [n for n in quoted_numbers(doc.read_text()) if not is_quoted(n)]
    assert not missing, f"{doc.name} quotes numbers no committed result holds: {missing}"


def test_the_check_finds_an_uncommitted_number_and_skips_what_quotes_no_result() -> None:
    assert quoted_numbers("accuracy 0.8123 at eps 0.1; `L = 1.0001`") == ["0.8123"]
    assert quoted_numbers("<!-- example:begin -->\n0.4567\n<!-- example:end --> 0.98765") == [
        "0.98765"
    ]
    assert not is_quoted("0.123456789")  # no committed result holds this
