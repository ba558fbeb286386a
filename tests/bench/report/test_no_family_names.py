"""The report names no privacy notion and no mechanism family: it looks notions up by their
spec (bench.plugin.notions) and families up in their registries (bench.plugin.families,
the mechanism registry), so a family added as a plug-in is reported like an in-tree one.
The paper reproductions (bench/report/reproduce/) describe particular papers and are left
out. Docstrings and comments may name them (they explain); code may not."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import ROOT

REPORT = ROOT / "bench" / "report"
FAMILIES = ("posthoc", "dfil", "lucid", "label_only", "noise")
NOTIONS = ("ip", "dp", "idp", "ldp", "dfil", "reconstruction")
# A family named inside a string: as a word, or as the package it lives in.
FAMILY_IN_TEXT = re.compile(r"\b(posthoc|dfil|lucid|label_only)\b|\bmechanisms\.[a-z_]+")
# A jinja string literal in a template expression or statement.
TEMPLATE_LITERAL = re.compile(r"""{[{%][^}]*?["']([a-z_]+)["'][^}]*?[}%]}""")


def report_sources(root: Path = REPORT) -> list[Path]:
    """The report's Python files outside reproduce/."""
    return [p for p in sorted(root.rglob("*.py")) if "reproduce" not in p.relative_to(root).parts]


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = body[0] if body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _name_of(node: ast.AST) -> str | None:
    for attr in ("id", "attr", "name", "arg"):
        value = getattr(node, attr, None)
        if isinstance(value, str):
            return value
    return None


def spelled_names(path: Path, root: Path = ROOT) -> list[str]:
    """Every string literal (not a docstring) that is a notion or family name or names a
    family, and every identifier with a family name as one of its words (a notion's name
    inside an identifier, as in `dp_membership_bound`, names what the function is about), as
    'file:line: what'."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    docs = _docstrings(tree)
    hits = []
    where = path.relative_to(root)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
            if text in NOTIONS or text in FAMILIES or FAMILY_IN_TEXT.search(text):
                hits.append(f"{where}:{node.lineno}: string {text[:60]!r}")
        name = _name_of(node)
        if name and not isinstance(node, ast.Constant):
            words = name.lower().strip("_").split("_")
            if "label_only" in name.lower() or set(words) & set(FAMILIES):
                hits.append(f"{where}:{getattr(node, 'lineno', 0)}: name {name!r}")
    return hits


def template_names(path: Path) -> list[str]:
    """Every string literal of a template's expressions that is a notion or family name."""
    hits = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for literal in TEMPLATE_LITERAL.findall(line):
            if literal in NOTIONS or literal in FAMILIES:
                hits.append(f"{path.relative_to(ROOT)}:{number}: template literal {literal!r}")
    return hits


def test_the_scanner_finds_spelled_notions_and_families(tmp_path: Path) -> None:
    report = tmp_path / "bench" / "report"
    (report / "reproduce").mkdir(parents=True)
    (report / "board.py").write_text(
        '"""A docstring may say idp and posthoc."""\n'
        "def label_only_rows(rows):\n"
        '    """So may this one: dfil."""\n'
        '    if rows[0]["notion"] == "idp":\n'
        '        return "from mechanisms.noise"\n'
        '    return "answered without noise"\n'
    )
    (report / "reproduce" / "paper.py").write_text('NOTION = "dfil"\n')
    files = report_sources(report)
    assert [p.name for p in files] == ["board.py"]
    hits = [h.split(": ", 1)[1] for h in spelled_names(files[0], tmp_path)]
    assert sorted(hits) == sorted(
        ["name 'label_only_rows'", "string 'idp'", "string 'from mechanisms.noise'"]
    )


def test_the_report_spells_no_notion_and_no_family() -> None:
    files = report_sources()
    assert REPORT / "board" / "overview.py" in files
    assert not any("reproduce" in p.parts for p in files)
    hits = [hit for path in files for hit in spelled_names(path)]
    templates = sorted((REPORT / "board" / "templates").glob("*.j2"))
    assert templates
    hits += [hit for path in templates for hit in template_names(path)]
    assert not hits, (
        "bench/report names a notion or a family; look notions up with "
        "bench.plugin.notions.notion_spec and families in their registries:\n" + "\n".join(hits)
    )
