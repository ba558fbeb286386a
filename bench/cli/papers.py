"""`bench reproduce` and `bench attack-report`: a paper's headline numbers beside the
committed rows that answer them; the worst case per setting before and after the stronger
attacks."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from bench.core.errors import ConfigError, UnknownNameError, did_you_mean

if TYPE_CHECKING:
    from bench.cli.kept import Answer
    from bench.core.places import BoardsRoot

RootOpt = Annotated[
    Path | None,
    typer.Option(
        help="Where the committed leaderboards live [the checkout's leaderboards/, else the "
        "boards installed with bench]."
    ),
]


def reproduce(
    paper: Annotated[
        str, typer.Argument(help="Paper id: posthoc, dfil, lucid or ip (bench list papers).")
    ],
    root: RootOpt = None,
    docs_page: Annotated[
        Path | None,
        typer.Option("--docs", help="Also rewrite this doc page's reproduction block."),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Also rewrite each answering suite's reproduction.{md,json} and page from its "
            "committed leaderboard.json (after a reference table or rule change; no rerun).",
        ),
    ] = False,
) -> None:
    """A paper's headline numbers beside the committed bench rows that answer them, with
    computed verdicts (the table each suite's reproduction.md holds; that file and the page
    are written with the suite's leaderboard). The first line names the boards read. Asked
    again with nothing changed, the answer is the kept one (bench.cli.kept)."""
    from bench.cli.kept import answer_key, answered
    from bench.core.places import boards_root

    papers = _known_papers()
    if paper not in papers:
        raise UnknownNameError(
            f"no reference table for paper '{paper}'{did_you_mean(paper, papers)}; known "
            f"papers: {', '.join(papers)}"
        )
    boards = boards_root(root)
    if write or docs_page is not None:
        root = boards.writable("bench reproduce --write/--docs")
        _reproduce_and_write(paper, boards, root, write, docs_page).emit()
        return
    reads = sorted(boards.path.glob("*/leaderboard.json")) if boards.path.is_dir() else []
    key = answer_key("reproduce", [paper, boards.path.resolve(), boards.source], reads)
    answered(key, lambda: _reproduce_and_write(paper, boards, boards.path, False, None)).emit()


def _known_papers() -> list[str]:
    """Ids of the shipped reference tables (bench.report.reproduce.reproduction.known_papers,
    read without importing the report code)."""
    from importlib import resources

    folder = resources.files("bench") / "report" / "reproduce" / "reference"
    if not folder.is_dir():
        return []
    return sorted(
        p.name.removesuffix(".toml") for p in folder.iterdir() if p.name.endswith(".toml")
    )


def _reproduce_and_write(
    paper: str, boards: BoardsRoot, root: Path, write: bool, docs_page: Path | None
) -> Answer:
    """`bench reproduce`'s output over the boards under `root` (of `boards`), rewriting the
    reproduction files (`write`) and a doc page's block (`docs_page`) when asked."""
    from bench.cli.kept import Answer
    from bench.report.reproduce.reproduction import paper_report, summary_line, total_counts

    docs = paper_report(paper, root)  # from leaderboard.json, which --write leaves as it is
    reference_suites = {d["suite"] for d in docs if d["suite"]}
    if not any((root / s / "leaderboard.json").is_file() for s in reference_suites):
        # Nothing to compare: exit 1 (a missing result, like failed jobs), not "all not run".
        return Answer([], [
            f"bench: error: no committed leaderboard of {paper}'s suites under {root} "
            f"({', '.join(sorted(reference_suites))}); pass --root LEADERBOARDS"
        ], 1)  # fmt: skip
    out = [boards.line()]
    if write:
        from bench.report.board.write import refresh_reproductions
        from bench.run.publish import refresh_site_index

        for suite in sorted(reference_suites):
            if (root / suite / "leaderboard.json").is_file():
                refresh_reproductions(root / suite)
                refresh_site_index(root / suite)  # its verdict counts changed too
    for doc in docs:
        out.append(f"{doc['suite'] or '(no bench suite)'}: {doc['summary']}")
        for cell in doc["cells"]:
            b = cell["bench"]
            bench = "—" if b is None else f"{b['value']:.4g} [{b['ci'][0]:.4g}, {b['ci'][1]:.4g}]"
            paper_value = "—" if cell["paper"] is None else f"{cell['paper']:.4g}"
            flags = ", ".join(b["flags"]) if b and b["flags"] else ""
            out.append(
                f"  {cell['source']:<14} {cell['id']:<44} {cell['metric']:<16} "
                f"{cell['class']:<10} paper {paper_value:<8} bench {bench:<28} "
                f"{cell['verdict']}" + (f" [{flags}]" if flags else "")
            )
        for trend in doc["trends"]:
            ratio = "" if trend.get("ratio") is None else f" (effect ratio {trend['ratio']:.2f})"
            out.append(f"  trend {trend['id']:<48} {trend['verdict']}{ratio}")
    out.append(f"{paper}: {summary_line(total_counts(docs))}")
    if docs_page is not None:
        from bench.report.reproduce.reproduction import docs_block, replace_docs_block

        if not docs_page.is_file():
            raise ConfigError(f"no doc page at {docs_page}")
        text = replace_docs_block(docs_page.read_text(), docs_block(paper, root))
        docs_page.write_text(text)
        out.append(f"updated {docs_page}")
    return Answer(out)


def attack_report(
    suite: Annotated[
        str, typer.Option(help="Suite whose committed leaderboard runs both attack sets.")
    ] = "attacks",
    root: RootOpt = None,
    docs_page: Annotated[
        Path | None,
        typer.Option("--docs", help="Also rewrite this doc page's attack-strength block."),
    ] = None,
) -> None:
    """Which attack is the worst case per mechanism setting, before and after the stronger
    attacks, from a committed leaderboard: writes ROOT/SUITE/attack-strength.{md,json}."""
    from bench.core.places import boards_root
    from bench.report.tools.attack_strength import docs_block, replace_docs_block, write_report

    boards = boards_root(root)
    board = boards.writable("bench attack-report") / suite
    if not (board / "leaderboard.json").is_file():
        have = sorted(p.parent.name for p in boards.path.glob("*/leaderboard.json"))
        raise ConfigError(
            f"no committed leaderboard at {board / 'leaderboard.json'}{did_you_mean(suite, have)}"
            f"; run `bench run --suite {suite}` and `bench leaderboard --suite {suite}` first"
        )
    for path in write_report(board):
        typer.echo(str(path))
    if docs_page is not None:
        if not docs_page.is_file():
            raise ConfigError(f"no doc page at {docs_page}")
        docs_page.write_text(replace_docs_block(docs_page.read_text(), docs_block(board)))
        typer.echo(f"updated {docs_page}")
