"""Write docs/plugin-api.md, the reference of bench's plug-in API, from the code itself.

Two parts, both read from the code so that the page cannot drift from it:

- **Privacy notions**: every notion registered once the in-tree mechanisms are imported
  (bench.plugin.notions.notions()), with what each claims (its level parameter and what two
  neighbours differ in), what bench audits for it (the input-pair audit, a family's own
  audit, or nothing and why), how its bound rows are judged, whether membership attacks are
  held to the DP ceiling, the distances the in-tree mechanisms declare, and an example
  `Guarantee(...)`: the guarantee of an in-tree mechanism at its default parameters
  (`guarantee()` on an unfitted instance, which every in-tree mechanism answers cheaply).
- **Reference**: every public name of `bench.plugin` (its `__all__`) and the few names of
  its submodules a plug-in author also touches (EXTRA), grouped by submodule: dataclass
  fields and class attributes with their types, defaults and the comments beside them in the
  source, method and function signatures with the first paragraph of their docstrings.

Everything is read from the source's syntax tree (never from reprs), so the page is the same
on every run and machine. tests/docs/test_plugin_api_doc.py fails when the committed page
differs from what this script writes.

    python docs/scripts/plugin_reference.py            # rewrite docs/plugin-api.md
    python docs/scripts/plugin_reference.py --check    # exit 1 if it is not current
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "plugin-api.md"

# Names outside bench.plugin's facade that a plug-in author also touches, by submodule.
EXTRA = {
    "bench.plugin.protocols": ("AttackParams",),
    "bench.plugin.params": ("Range",),
    "bench.plugin.notions": ("Claim",),
    "bench.plugin.membership": ("MembershipAttack", "LabelAccess"),
    "bench.plugin.discrete": ("EmbeddingSplit",),
    "bench.plugin.checks": ("parametrize_with_checks", "MechanismUnderTest", "CheckFailed"),
}
# The order of the reference's sections, and what each submodule is for.
SECTIONS = {
    "bench.plugin.protocols": "the contracts and data containers",
    "bench.plugin.input_space": "the base of mechanisms that release a noisy copy of the input",
    "bench.plugin.params": "typed parameters",
    "bench.plugin.registry": "registration",
    "bench.plugin.training": "the task's trained utility model",
    "bench.plugin.artifacts": "the artifact cache",
    "bench.plugin.accounting": "noise calibration",
    "bench.plugin.notions": "privacy notions and claims",
    "bench.plugin.hooks": "what a family adds to the harness",
    "bench.plugin.families": "board plots",
    "bench.plugin.certify": "the audit a family registers",
    "bench.plugin.membership": "membership-inference attacks",
    "bench.plugin.discrete": "discrete-input tasks",
    "bench.plugin.checks": "contract checks",
}
HEADER = """\
# The plug-in API

<!-- Written by docs/scripts/plugin_reference.py from the code; do not edit by hand. -->

Everything a mechanism, attack or task author imports comes from one package,
`bench.plugin` (its names resolve lazily, so importing it costs nothing until a name is
used):

```python
from bench.plugin import Guarantee, InputSpaceMechanism, NoiseModel, register_mechanism
```

The contract checks (`bench.plugin.checks`) are the one other import, in a plug-in's tests.
This page is generated from the code: the privacy notions bench knows with what bench
audits for each, then every class, field and function of the API, with types. A walkthrough
of a complete plug-in is in [submitting.md](submitting.md).

## Privacy notions

A mechanism states its claim as a `Guarantee(notion, params, distance)`. The notion names
what is claimed; `params` holds the claim's numbers (`eps`, `delta`, `radius`, or the
notion's own level parameter); `distance` says what two neighbours differ in and how it is
measured (`l2/input`, `training-set/add-remove`, ...). `Guarantee.claim()` gives the typed
`Claim` the harness reads. Columns: **level**, the parameter that states the privacy level
(and which way is stronger); **neighbours**, what the claim protects (one user's input, or
the records of the training set); **audited by**, what `bench validate` and the boards' audit
cells run for the in-tree mechanisms that claim it; **bound rows**, how a mechanism's own
bound rows are judged (exact: one violation breaks it; or a per-sample estimate allowed to
fail at a rate); **membership ceiling**, whether membership-inference attacks are held to
TPR <= e^eps FPR + delta. A family with a notion of its own registers it from its hooks
module with `register_notion(NotionSpec(...))`.
"""


# ----------------------------------------------------------------------------- source


@cache
def module_tree(module_name: str) -> ast.Module:
    """The syntax tree of a project module."""
    path = inspect.getsourcefile(importlib.import_module(module_name))
    assert path is not None, module_name
    return ast.parse(Path(path).read_text(encoding="utf-8"))


@cache
def module_lines(module_name: str) -> tuple[str, ...]:
    path = inspect.getsourcefile(importlib.import_module(module_name))
    assert path is not None, module_name
    return tuple(Path(path).read_text(encoding="utf-8").splitlines())


def definition(module_name: str, name: str) -> tuple[str, ast.stmt]:
    """(module, node) where `name` is defined, following `from x import name` chains."""
    for node in module_tree(module_name).body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name:
            return module_name, node
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            return module_name, node
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == name:
            return module_name, node
    for node in module_tree(module_name).body:
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.level == 0
            and any(alias.name == name for alias in node.names)
        ):
            return definition(node.module, name)
    raise LookupError(f"{name} is not defined in {module_name}")


def comments_of(module_name: str, node: ast.stmt) -> str:
    """The comments on a statement's own lines and the comment lines just above it."""
    lines = module_lines(module_name)
    above: list[str] = []
    i = node.lineno - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        above.insert(0, lines[i].strip().lstrip("#").strip())
        i -= 1
    inline = []
    for line in lines[node.lineno - 1 : (node.end_lineno or node.lineno)]:
        if "#" in line and not line.strip().startswith("#"):
            code, _, comment = line.partition("  #")
            if comment and code.count('"') % 2 == 0:
                inline.append(comment.strip())
        elif line.strip().startswith("#"):
            inline.append(line.strip().lstrip("#").strip())
    text = " ".join([*above, *inline])
    return text.replace("type: ignore[attr-defined]", "").replace("type: ignore[misc]", "").strip()


def first_paragraph(node: ast.AST) -> str:
    doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
    return " ".join(doc.split("\n\n")[0].split())


def full_docstring(node: ast.AST) -> str:
    """The docstring as Markdown: paragraphs joined, bullet lists kept as lists."""
    doc = ast.get_docstring(node) or ""  # type: ignore[arg-type]
    out = []
    for paragraph in doc.split("\n\n"):
        lines = [ln.strip() for ln in paragraph.splitlines() if ln.strip()]
        if not lines:
            continue
        if lines[0].startswith("- "):
            items: list[str] = []
            for line in lines:
                if line.startswith("- ") or not items:
                    items.append(line)
                else:
                    items[-1] += " " + line
            out.append("\n".join(items))
        else:
            out.append(" ".join(" ".join(lines).split()))
    return "\n\n".join(out)


def decorator_names(node: ast.FunctionDef | ast.ClassDef) -> list[str]:
    names = []
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        names.append(ast.unparse(target))
    return names


def _arg(arg: ast.arg, default: ast.expr | None) -> str:
    text = arg.arg if arg.annotation is None else f"{arg.arg}: {ast.unparse(arg.annotation)}"
    if default is None:
        return text
    return f"{text}{' = ' if arg.annotation is not None else '='}{ast.unparse(default)}"


def signature(node: ast.FunctionDef, drop_self: bool) -> str:
    """`name(args) -> returns` in the source's own spelling (PEP 8 spacing)."""
    a = node.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults))
    defaults += list(a.defaults)
    parts = [_arg(arg, d) for arg, d in zip(positional, defaults, strict=True)]
    if drop_self and positional and positional[0].arg in ("self", "cls"):
        parts = parts[1:]
    if a.vararg is not None:
        parts.append("*" + _arg(a.vararg, None))
    elif a.kwonlyargs:
        parts.append("*")
    parts += [_arg(arg, d) for arg, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
    if a.kwarg is not None:
        parts.append("**" + _arg(a.kwarg, None))
    text = f"{node.name}({', '.join(parts)})"
    if node.returns is not None:
        text += f" -> {ast.unparse(node.returns)}"
    return text


def default_text(value: ast.expr | None) -> str:
    if value is None:
        return ""
    if isinstance(value, ast.Call) and ast.unparse(value.func) == "field":
        for kw in value.keywords:
            if kw.arg == "default_factory":
                factory = ast.unparse(kw.value)
                return {"dict": "{}", "list": "[]", "set": "set()"}.get(factory, f"{factory}()")
            if kw.arg == "default":
                return ast.unparse(kw.value)
        return ""
    return ast.unparse(value)


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def code(text: str) -> str:
    return f"`{text}`" if text else ""


# ----------------------------------------------------------------------------- reference


@dataclass(frozen=True)
class Item:
    """One documented name: where it is exported from, where defined, and its node."""

    name: str
    exported_from: str
    module: str
    node: ast.stmt


def exported_items() -> list[Item]:
    import bench.plugin as plugin

    items = []
    for name in plugin.__all__:
        exported_from = plugin._EXPORTS[name]
        module, node = definition(exported_from, name)
        items.append(Item(name, exported_from, module, node))
    for exported_from, names in EXTRA.items():
        for name in names:
            module, node = definition(exported_from, name)
            items.append(Item(name, exported_from, module, node))
    return items


def section_of(item: Item) -> str:
    """The section an item is listed under: the bench.plugin submodule that defines it, else
    the one that exports it (the audit's names, defined under bench.certify)."""
    if item.module in SECTIONS:
        return item.module
    if item.module.startswith("bench.certify"):
        return "bench.plugin.certify"
    return item.exported_from


def is_dataclass_node(node: ast.ClassDef) -> tuple[bool, bool]:
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if ast.unparse(target) == "dataclass":
            frozen = isinstance(d, ast.Call) and any(
                kw.arg == "frozen" and ast.unparse(kw.value) == "True" for kw in d.keywords
            )
            return True, frozen
    return False, False


def attribute_rows(
    module: str, node: ast.ClassDef, owner: str | None = None, skip: frozenset[str] = frozenset()
) -> list[str]:
    rows = []
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            name, kind = stmt.target.id, ast.unparse(stmt.annotation)
        elif (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            name, kind = stmt.targets[0].id, ""
        else:
            continue
        if name.startswith("_") or name in skip:
            continue
        note = comments_of(module, stmt)
        if owner:
            note = f"{note} (from `{owner}`)".strip()
        rows.append(
            f"| {code(name)} | {cell(code(kind))} | {cell(code(default_text(stmt.value)))} "
            f"| {cell(note)} |"
        )
    return rows


def method_lines(
    node: ast.ClassDef, owner: str | None = None, skip: frozenset[str] = frozenset()
) -> list[str]:
    lines = []
    for stmt in node.body:
        if not isinstance(stmt, ast.FunctionDef) or stmt.name in skip:
            continue
        if stmt.name.startswith("_") and stmt.name != "__init__":
            continue
        decorators = decorator_names(stmt)
        if stmt.name == "__init__":
            shown = signature(stmt, drop_self=True).replace("__init__", node.name, 1)
            lines.append(f"- constructor `{shown}`")
            continue
        tags = []
        if "property" in decorators or "cached_property" in decorators:
            tags.append("property")
        if "classmethod" in decorators:
            tags.append("classmethod")
        if "staticmethod" in decorators:
            tags.append("staticmethod")
        if "abstractmethod" in decorators:
            tags.append("abstract: a subclass implements it")
        if owner:
            tags.append(f"from `{owner}`")
        tag = f" ({', '.join(tags)})" if tags else ""
        doc = first_paragraph(stmt)
        lines.append(f"- `{signature(stmt, drop_self=True)}`{tag}" + (f": {doc}" if doc else ""))
    return lines


def undocumented_bases(item: Item, documented: set[str]) -> list[tuple[str, ast.ClassDef]]:
    """The project base classes of a class up to its first documented one (Parameterised,
    behind Mechanism and Attack): their members are listed with the class."""
    obj = getattr(importlib.import_module(item.exported_from), item.name)
    found = []
    for base in inspect.getmro(obj)[1:]:
        if base.__name__ in documented or not base.__module__.startswith("bench.plugin"):
            break
        _, node = definition(base.__module__, base.__name__)
        if isinstance(node, ast.ClassDef):
            found.append((base.__module__, node))
    return found


def member_names(node: ast.ClassDef) -> set[str]:
    names = set()
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            names.add(stmt.target.id)
        elif isinstance(stmt, ast.Assign):
            names |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}
        elif isinstance(stmt, ast.FunctionDef | ast.ClassDef):
            names.add(stmt.name)
    return names


def nested_params(module: str, node: ast.ClassDef) -> list[str]:
    for stmt in node.body:
        if isinstance(stmt, ast.ClassDef) and stmt.name == "Params":
            rows = attribute_rows(module, stmt)
            if rows:
                bases = ", ".join(ast.unparse(b) for b in stmt.bases)
                extends = f", extends `{bases}`" if bases else ""
                head = f"Parameters (`{node.name}.Params`{extends}"
                return [
                    f"{head}):",
                    "",
                    "| parameter | type | default | |",
                    "|---|---|---|---|",
                    *rows,
                    "",
                ]
    return []


def render_class(item: Item, documented: set[str]) -> list[str]:
    node = item.node
    assert isinstance(node, ast.ClassDef)
    is_dc, frozen = is_dataclass_node(node)
    bases = [ast.unparse(b) for b in node.bases if ast.unparse(b) not in ("ABC", "Generic[T]")]
    kind = ("frozen dataclass" if frozen else "dataclass") if is_dc else "class"
    where = f"`{item.module}`"
    lines = [
        f"#### `{item.name}`",
        "",
        f"{kind} in {where}"
        + (f", a subclass of {', '.join(f'`{b}`' for b in bases)}" if bases else "")
        + ".",
        "",
    ]
    doc = full_docstring(node)
    if doc:
        lines += [doc, ""]
    inherited = undocumented_bases(item, documented)
    for _, base in inherited:
        base_doc = full_docstring(base)
        if base_doc:
            lines += [f"From `{base.name}`: {base_doc}", ""]
    rows = attribute_rows(item.module, node)
    methods = method_lines(node)
    seen = frozenset(member_names(node))
    for module, base in inherited:
        rows += attribute_rows(module, base, owner=base.name, skip=seen)
        methods += method_lines(base, owner=base.name, skip=seen)
        seen |= member_names(base)
    if rows:
        label = "field" if is_dc else "attribute"
        lines += [f"| {label} | type | default | |", "|---|---|---|---|", *rows, ""]
    lines += nested_params(item.module, node)
    if methods:
        lines += [*methods, ""]
    return lines


def render_function(item: Item) -> list[str]:
    node = item.node
    assert isinstance(node, ast.FunctionDef)
    lines = [f"#### `{item.name}`", "", f"function in `{item.module}`.", ""]
    lines += ["```python", signature(node, drop_self=False), "```", ""]
    doc = full_docstring(node)
    if doc:
        lines += [doc, ""]
    return lines


def render_alias(item: Item) -> list[str]:
    node = item.node
    value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
    text = ast.unparse(value) if value is not None else ""
    lines = [f"#### `{item.name}`", "", f"type alias in `{item.module}`.", ""]
    lines += ["```python", f"{item.name} = {text}", "```", ""]
    comment = comments_of(item.module, node)
    if comment:
        lines += [comment, ""]
    return lines


def render_bound_method(item: Item) -> list[str] | None:
    """A name bound to a registry's method (`register_task = TASKS.register`): documented as
    the function it is, with that method's signature and docstring."""
    obj = getattr(importlib.import_module(item.exported_from), item.name)
    if not inspect.ismethod(obj):
        return None
    func = obj.__func__
    owner, _, method = func.__qualname__.partition(".")
    _, cls_node = definition(func.__module__, owner)
    assert isinstance(cls_node, ast.ClassDef)
    node = next(n for n in cls_node.body if isinstance(n, ast.FunctionDef) and n.name == method)
    shown = signature(node, drop_self=True).replace(f"{method}(", f"{item.name}(", 1)
    value = item.node.value if isinstance(item.node, ast.Assign | ast.AnnAssign) else None
    target = f" (`{ast.unparse(value)}`)" if value is not None else ""
    lines = [f"#### `{item.name}`", "", f"decorator in `{item.module}`{target}.", ""]
    lines += ["```python", shown, "```", ""]
    doc = full_docstring(node)
    module_doc = full_docstring(module_tree(item.module)).split("\n\n")
    return [*lines, *([doc, ""] if doc else []), *module_doc[1:2], ""]


def render_item(item: Item, documented: set[str]) -> list[str]:
    bound = None if isinstance(item.node, ast.ClassDef) else render_bound_method(item)
    if bound is not None:
        return bound
    if isinstance(item.node, ast.ClassDef):
        return render_class(item, documented)
    if isinstance(item.node, ast.FunctionDef):
        return render_function(item)
    return render_alias(item)


def checks_list() -> list[str]:
    from bench.plugin.checks import CHECKS

    lines = ["The checks `bench validate` runs, in order (`bench.plugin.checks.CHECKS`):", ""]
    for check in CHECKS:
        _, node = definition(check.__module__, check.__name__)
        lines.append(f"- `{check.__name__}`: {first_paragraph(node)}")
    return [*lines, ""]


def reference() -> list[str]:
    items = exported_items()
    documented = {i.name for i in items}
    by_section: dict[str, list[Item]] = {}
    for item in items:
        by_section.setdefault(section_of(item), []).append(item)
    assert set(by_section) <= set(SECTIONS), set(by_section) - set(SECTIONS)
    lines = ["## Reference", ""]
    for section, what in SECTIONS.items():
        if section not in by_section:
            continue
        if section == "bench.plugin.certify":
            lines += [f"### The audit's names: {what}", ""]
            lines += [
                "Exported by `bench.plugin` (through `bench.plugin.hooks`), defined under "
                "`bench.certify.audit`. The `Claim` exported here is the audit's tuple form "
                "of a guarantee, what a `FamilyAudit` and the `applies` test of "
                "`register_audit` receive; `Guarantee.claim()` returns the typed "
                "`bench.plugin.notions.Claim` above.",
                "",
            ]
        else:
            lines += [f"### `{section}`: {what}", ""]
        names = sorted({i.name: i for i in by_section[section]}.values(), key=_order)
        facade = [i.name for i in names if is_facade(i)]
        others = [i.name for i in names if not is_facade(i)]
        if facade and section != "bench.plugin.certify":
            lines += ["From `bench.plugin`: " + ", ".join(f"`{n}`" for n in facade) + ".", ""]
        if others:
            lines += [f"From `{section}`: " + ", ".join(f"`{n}`" for n in others) + ".", ""]
        for item in names:
            lines += render_item(item, documented)
        if section == "bench.plugin.checks":
            lines += checks_list()
    return lines


def is_facade(item: Item) -> bool:
    """Whether `bench.plugin` exports this very definition under its name."""
    import bench.plugin as plugin

    return plugin._EXPORTS.get(item.name) == item.exported_from


def _order(item: Item) -> tuple[int, int, str]:
    """Classes before functions, then in source order within the defining module."""
    is_class = isinstance(item.node, ast.ClassDef)
    return (0 if is_class else 1, item.node.lineno, item.name)


# ----------------------------------------------------------------------------- notions


INPUT_PAIR = "the input-pair audit (`bench.certify.audit.core`)"


@dataclass(frozen=True)
class Declared:
    """One in-tree mechanism's guarantee at its default parameters, and its audit."""

    mechanism: str
    guarantee: Any
    audit: str


def declared() -> list[Declared]:
    """Every registered in-tree mechanism's default guarantee (importing them registers the
    families' notions and audits)."""
    from bench.certify.audit.registry import registered_audit
    from bench.plugin.notions import notion_spec
    from bench.plugin.registry import MECHANISMS

    found = []
    for name in MECHANISMS.names():
        cls = MECHANISMS.get(name)
        if not cls.__module__.startswith("mechanisms."):
            continue  # a plug-in installed here is not part of bench
        guarantee = cls().guarantee()
        spec = notion_spec(guarantee.notion)
        family = registered_audit(cls)
        if family is not None and family.applies(guarantee.claim()):
            audit = f"`{family.audit.__module__}.{family.audit.__name__}`"
        elif spec.input_pair_audit:
            audit = INPUT_PAIR
        else:
            audit = ""
        found.append(Declared(name, guarantee, audit))
    return found


def guarantee_text(guarantee: Any) -> str:
    params = ", ".join(f"{k!r}: {v!r}" for k, v in guarantee.params.items())
    params = params.replace("'", '"')
    distance = "None" if guarantee.distance is None else f'"{guarantee.distance}"'
    return f'Guarantee("{guarantee.notion}", {{{params}}}, {distance})'


def project_notions() -> list[Any]:
    """The notions bench's own code registers (bench.plugin.notions and the in-tree families'
    hooks), read from the source: a notion a plug-in or a test registered in this process is
    not bench's."""
    from bench.plugin.notions import UNPROTECTED, notions

    names = set()
    for package in ("bench", "mechanisms"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "NotionSpec"
                    and node.args
                ):
                    first = node.args[0]
                    if isinstance(first, ast.Constant) and isinstance(first.value, str):
                        names.add(first.value)
                    elif isinstance(first, ast.Name) and first.id == "UNPROTECTED":
                        names.add(UNPROTECTED)
    return [spec for spec in notions() if spec.name in names]


def notions_table() -> list[str]:
    mechanisms = declared()
    rows = [
        "| notion | reads as | level | neighbours | audited by | bound rows "
        "| membership ceiling | distances declared in tree | in-tree mechanisms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    examples = []
    for spec in project_notions():
        mine = [m for m in mechanisms if m.guarantee.notion == spec.name]
        direction = "higher is stronger" if spec.level.higher_is_stronger else "lower is stronger"
        level = f"`{spec.level.param}` ({spec.level.symbol}, {direction})"
        if spec.zero_level:
            level += "; 0 is a claim that can be met"
        if not spec.claims_privacy:
            level = "—"
        neighbours = {"inputs": "two inputs", "training set": "two training sets"}.get(
            spec.neighbours, "nothing claimed"
        )
        if spec.radius:
            neighbours += " within `radius`"
        audits = sorted({m.audit for m in mine if m.audit})
        if audits:
            audited = "; ".join(audits)
        elif spec.input_pair_audit:
            audited = INPUT_PAIR
        else:
            audited = f"not audited: {spec.unaudited}" if spec.unaudited else "no in-tree audit"
        bounds = (
            "exact"
            if spec.bound_false_alarm is None
            else f"per-sample estimate, may fail at rate {spec.bound_false_alarm}"
        )
        if not spec.claims_privacy:
            bounds = "—"
        distances = sorted({m.guarantee.distance for m in mine if m.guarantee.distance})
        rows.append(
            f"| `{spec.name}` | {spec.words} | {level} | {neighbours} | {cell(audited)} "
            f"| {bounds} | {'yes' if spec.membership_ceiling else 'no'} "
            f"| {', '.join(f'`{d}`' for d in distances) or '—'} "
            f"| {', '.join(f'`{m.mechanism}`' for m in mine) or '—'} |"
        )
        example = next(
            (m for m in mine if spec.level.param in m.guarantee.params or not spec.claims_privacy),
            mine[0] if mine else None,
        )
        if example is not None:
            examples.append(f"{guarantee_text(example.guarantee):<72}  # {example.mechanism}")
    return [
        *rows,
        "",
        "An example claim of each notion, as an in-tree mechanism states it at its default "
        "parameters:",
        "",
        "```python",
        *examples,
        "```",
        "",
        "A mechanism whose claim no audit tests (`dp`, `dfil`, or a notion of its own without "
        "a registered audit) still passes `check_privacy_audit`, which reports it as not "
        "audited with the reason above. The input-pair audit and the families' audits are "
        "described in [submitting.md](submitting.md#what-the-privacy-audit-does).",
        "",
    ]


def render() -> str:
    """The whole page."""
    lines = [HEADER, *notions_table(), *reference()]
    text = "\n".join(lines)
    while "\n\n\n" in text:
        text = text.replace("\n\n\n", "\n\n")
    return text.rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the page is stale")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.is_file() else ""
        if current != text:
            raise SystemExit(f"{PAGE} is not current: run python docs/scripts/plugin_reference.py")
        return
    PAGE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
