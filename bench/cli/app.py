"""The `bench` command line: list, run, failures, leaderboard, status, reproduce,
attack-report, profile, compare, validate, evaluate, data. Each command group is a module of this
package and a thin caller of bench.api or of the report tools.

User mistakes (`BenchError`, and usage errors) print one line on stderr and exit 2; a run
in which jobs failed lists them on stderr and exits 1 (`bench failures` shows their
tracebacks); an interrupted run exits 130. Either resumes when the same command is run
again.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Annotated

INTERRUPTED_EXIT = 130  # Ctrl-C, as shells report a SIGINT


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while the command line is still being imported: one line, exit 130."""
    print("bench: interrupted while starting; nothing was run or written", file=sys.stderr)
    os._exit(INTERRUPTED_EXIT)


# Run as the `bench` program, not imported (by a test, or a spawned worker): Ctrl-C during
# the imports below says why it ends instead of printing an import's traceback (main() takes
# it over), and the program's exit waits for no thread a plug-in left behind (`_exit`).
AS_PROGRAM = __name__ == "__main__" or Path(sys.argv[0]).name == "bench"
if AS_PROGRAM:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import typer  # noqa: E402

from bench import __version__  # noqa: E402
from bench.cli import boards, evaluate, listing, papers, run, validate  # noqa: E402
from bench.cli.data import data_app  # noqa: E402
from bench.core.cpu_math import pin_cpu_math  # noqa: E402
from bench.core.errors import BenchError  # noqa: E402

app = typer.Typer(
    help="Benchmark and attack-evaluation suite for inference-time privacy mechanisms.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,  # plain click-style usage errors: no boxes in logs
)
app.command("list")(listing.list_cmd)
app.command()(run.run)
app.command()(run.failures)
app.command()(boards.leaderboard)
app.command()(boards.profile)
app.command()(boards.status)
app.command()(papers.reproduce)
app.command("attack-report")(papers.attack_report)
app.command()(boards.compare)
app.command()(validate.validate)
app.command()(evaluate.evaluate)
app.add_typer(data_app, name="data")


def _print_version(value: bool) -> None:
    """`bench --version`: the version and the hash of every source file of the project."""
    if value:
        from bench.core.project_hash import project_code_hash  # torch-free: answers in < 1 s

        typer.echo(f"bench {__version__} (code {project_code_hash()})")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the version and the code hash, then exit.",
        ),
    ] = False,
) -> None:
    """Benchmark and attack-evaluation suite for inference-time privacy mechanisms."""


def main() -> None:
    """Entry point: run the app, turning user errors (bench's own and click's usage errors)
    into one line and exit code 2, failed jobs into exit code 1 (listed by `run`), and
    Ctrl-C into one line and exit code 130."""
    from typer._click.exceptions import NoArgsIsHelpError

    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    pin_cpu_math()  # before any command computes (bench.core.cpu_math)
    try:
        code = app(standalone_mode=False)
    except BenchError as exc:
        print(f"bench: error: {exc}", file=sys.stderr)
        _exit(exc.exit_code)
    except NoArgsIsHelpError as exc:  # `bench` or a group without a command: its help
        print(exc.ctx.get_help() if exc.ctx else "bench --help")
        _exit(2)
    except typer.TyperException as exc:  # click's usage errors, one line instead of three
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"bench: error: {' '.join(message.split())} (see --help)", file=sys.stderr)
        _exit(getattr(exc, "exit_code", 2))
    except (typer.Abort, KeyboardInterrupt):
        code = INTERRUPTED_EXIT
    if code == INTERRUPTED_EXIT:  # typer turns Ctrl-C inside a command into this code
        print("bench: interrupted; finished jobs are stored, run the same command to resume",
              file=sys.stderr)  # fmt: skip
    _exit(code if isinstance(code, int) else 0)


def _exit(code: int) -> None:
    """Exit with `code`. A thread that a plug-in started and left running (not a daemon)
    would keep the interpreter alive after everything is stored and said: then the output
    is flushed and the process ends at once, without waiting for it."""
    lingering = [
        t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon
    ]
    if AS_PROGRAM and lingering and threading.current_thread() is threading.main_thread():
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    main()
