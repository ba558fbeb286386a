"""`bench list`: the shipped suites (all, or the tracks, papers or studies among them) as a
table read from their files and committed boards alone, the reference papers, and the
registered tasks, mechanisms, attacks and metrics, one line each within 100 columns
(`--params` for each one's whole description, paper and typed parameters).

Listing the components imports every one of them (torch, about 2 s); the listing is kept
(bench.report.tools.status_cache) under a key over everything it is read from (bench.run.warm
.inputs_key: the project's files, the installed distributions, the data trees), so asking
again with nothing changed imports none. A plug-in's component is never kept.
"""

from __future__ import annotations

import textwrap
from dataclasses import asdict, dataclass
from typing import Annotated, Any

import typer

from bench.core.errors import UnknownNameError, did_you_mean

WIDTH = 100  # every line `bench list` prints fits in this many columns
COMPONENT_KINDS = ("tasks", "mechanisms", "attacks", "metrics")
KINDS = ("suites", "tracks", "studies", "papers", *COMPONENT_KINDS)
LISTING_FORMAT = 1  # bump when what a kept listing holds changes


def list_cmd(
    kind: Annotated[
        str,
        typer.Argument(
            help="suites, tracks, studies, papers, tasks, mechanisms, attacks or metrics"
        ),
    ],
    params: Annotated[
        bool,
        typer.Option(
            "--params",
            help="Also give each component's whole description, paper and typed parameters.",
        ),
    ] = False,
    notion: Annotated[
        str | None,
        typer.Option(
            "--notion",
            help="Only the mechanisms whose guarantee is of this notion (ip, ldp, dp, idp, "
            "dfil, reconstruction, none): the ones whose claims compare.",
        ),
    ] = None,
    long: Annotated[
        bool, typer.Option("--long", help="Suites: also each one's whole description.")
    ] = False,
) -> None:
    """List the shipped suites (as a table: kind, jobs, expected time on 2 cores, what a
    fresh machine lacks) or the registered components of one kind."""
    if kind not in KINDS:
        raise UnknownNameError(
            f"cannot list '{kind}'{did_you_mean(kind, list(KINDS))}; choose {', '.join(KINDS)}"
        )
    if notion is not None and kind != "mechanisms":
        raise UnknownNameError("--notion filters mechanisms: bench list mechanisms --notion NAME")
    if kind in ("suites", "tracks", "studies"):
        wanted = {"suites": None, "tracks": "track", "studies": "study"}[kind]
        _echo(suite_table(wanted, long))
    elif kind == "papers":
        _echo(paper_lines())
    else:
        _echo(component_lines(kind, params, notion))


def _echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


# ------------------------------------------------------------------------------- suites


def suite_table(kind: str | None, long: bool = False) -> list[str]:
    """The shipped suites (and a checkout's studies) of `kind` (None: all) as a table, then
    the boards' root; with `long`, each suite's description under its row."""
    from bench.core.places import boards_root
    from bench.suite.catalog import catalog

    boards = boards_root()
    entries = [e for e in catalog(boards.path) if kind is None or e.kind == kind]
    if not entries:
        where = " (a checkout's studies/ directory holds them)" if kind == "study" else ""
        return [f"no suites of kind {kind} here{where}", boards.line()]
    name_w = max(len("suite"), *(len(e.name) for e in entries))
    head = f"{'suite':<{name_w}}  {'kind':<5}  {'jobs':>6}  {'time (2 cores)':>14}  needs"
    lines = [head]
    for e in entries:
        jobs = f"{e.jobs:,}" if e.jobs is not None else "-"
        time = e.expected_time or "-"
        row = f"{e.name:<{name_w}}  {e.kind:<5}  {jobs:>6}  {time:>14}  "
        needs = ", ".join(e.needs) or "-"
        lines.append(_fit(row + needs))
        if long and e.description:
            lines += textwrap.wrap(e.description, WIDTH, initial_indent="    ",
                                   subsequent_indent="    ")  # fmt: skip
    lines.append("jobs, time: from each suite's committed board (time: its job time on 2 workers)")
    lines.append(boards.line())
    return lines


def _fit(line: str, width: int = WIDTH) -> str:
    """`line` cut to `width` columns (with an ellipsis), never longer."""
    return line if len(line) <= width else line[: width - 1] + "…"


def paper_lines() -> list[str]:
    """Every paper with a reference table (`bench reproduce PAPER`): id, title and the suites
    that answer it, read from the shipped tables as TOML (no report code imported; `bench
    reproduce` checks them)."""
    import tomllib
    from importlib import resources

    folder = resources.files("bench") / "report" / "reproduce" / "reference"
    tables = sorted((p for p in folder.iterdir() if p.name.endswith(".toml")), key=str)
    lines = []
    for path in tables:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
        title = str((doc.get("paper") or {}).get("title", ""))
        suites = dict.fromkeys(str(c["suite"]) for c in doc.get("cell", []) if c.get("suite"))
        lines.append(_fit(f"{path.name.removesuffix('.toml'):<8} {title}"))
        lines += textwrap.wrap(", ".join(suites) or "no bench suite", WIDTH,
                               initial_indent="         suites: ",
                               subsequent_indent="                 ")  # fmt: skip
    return lines


# --------------------------------------------------------------------------- components


@dataclass(frozen=True)
class Component:
    """One registered component as `bench list` shows it."""

    name: str
    summary: str  # the first paragraph of its docstring, on one line
    description: str  # the whole docstring, paragraphs joined
    paper: str
    tags: list[str]  # tasks: modality, data status; mechanisms: notion; attacks: modalities
    params: list[str]  # each typed parameter, described (bench.plugin.params)


def component_lines(kind: str, params: bool = False, notion: str | None = None) -> list[str]:
    """One line per component of `kind` (name, its tags, its summary cut to fit), or with
    `params` its whole description, paper and parameters under it; mechanisms optionally
    only those of one guarantee notion."""
    listing = components()[kind]
    if notion is not None:
        notions = sorted({c.tags[0] for c in listing})
        if notion not in notions:
            raise UnknownNameError(
                f"no mechanism claims notion '{notion}'{did_you_mean(notion, notions)}; "
                f"notions: {', '.join(notions)}"
            )
        listing = [c for c in listing if c.tags[0] == notion]
    name_w = max((len(c.name) for c in listing), default=4)
    tag_w = max((len(" ".join(c.tags)) for c in listing), default=0)
    lines = []
    for c in listing:
        tags = " ".join(c.tags)
        lines.append(_fit(f"{c.name:<{name_w}}  {tags:<{tag_w}}  {c.summary}".rstrip()))
        if params:
            indent = " " * 4
            text = c.description if kind != "metrics" else ""
            lines += textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent)
            if c.paper:
                lines.append(f"{indent}paper: {c.paper}")
            lines += [_fit(f"{indent}{spec}") for spec in c.params]
    if kind == "mechanisms" and not params:
        lines.append("(the notion of each guarantee; --params: descriptions, papers, parameters)")
    return lines


def components() -> dict[str, list[Component]]:
    """Every registered task, mechanism, attack and metric, from the kept listing when its
    inputs are unchanged, else imported (and kept when every one is the project's own)."""
    from bench.report.tools.status_cache import keep_record, load_record
    from bench.run.warm import inputs_key

    key = inputs_key([], None, None)
    kept = load_record("listing", key) if key is not None else None
    if isinstance(kept, dict) and kept.get("format") == LISTING_FORMAT:
        try:
            return {
                kind: [Component(**fields) for fields in kept["kinds"][kind]]
                for kind in COMPONENT_KINDS
            }
        except (KeyError, TypeError):
            pass
    listing, own = _import_components()
    if key is not None and own:
        kinds = {kind: [asdict(c) for c in items] for kind, items in listing.items()}
        keep_record("listing", key, {"format": LISTING_FORMAT, "kinds": kinds})
    return listing


def _import_components() -> tuple[dict[str, list[Component]], bool]:
    """The listing from the registries, and whether every component is the project's own."""
    from bench.core.project import in_project
    from bench.metrics import METRICS
    from bench.plugin.registry import ATTACKS, MECHANISMS, TASKS

    listing: dict[str, list[Component]] = {}
    own = True
    for kind, registry in (("tasks", TASKS), ("mechanisms", MECHANISMS), ("attacks", ATTACKS)):
        items = []
        for name in registry.names():
            cls = registry.get(name)
            own = own and in_project(cls.__module__)
            items.append(_component(kind, name, cls))
        listing[kind] = items
    better = {spec.name: [f"{spec.better}-is-better"] for spec in METRICS.values()}
    listing["metrics"] = [
        Component(spec.name, spec.description, spec.description, "", better[spec.name], [])
        for spec in METRICS.values()
    ]
    return listing, own


def _component(kind: str, name: str, cls: Any) -> Component:
    paragraphs = [" ".join(p.split()) for p in (cls.__doc__ or "").strip().split("\n\n")]
    summary = paragraphs[0] if paragraphs else ""
    if kind == "tasks":
        from bench.data.embedded import task_data_status

        tags = [str(getattr(cls, "modality", "?")), f"[{task_data_status(name)}]"]
    elif kind == "mechanisms":
        tags = [notion_of(cls)]
    else:
        tags = [",".join(sorted(getattr(cls, "modalities", ())))]
    specs = [] if kind == "tasks" else [spec.describe() for spec in cls.param_specs().values()]
    return Component(name, summary, " ".join(p for p in paragraphs if p),
                     str(getattr(cls, "paper", "") or ""), tags, specs)  # fmt: skip


def notion_of(cls: Any) -> str:
    """The notion of a mechanism's guarantee: its default instance's `guarantee()` (cheap:
    no fit), else a declared `notion` class attribute, else "?"."""
    try:
        return str(cls().guarantee().notion)
    except Exception:  # a mechanism whose defaults cannot be instantiated alone
        return str(getattr(cls, "notion", "?"))
