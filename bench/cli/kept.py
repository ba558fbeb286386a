"""Kept answers of the commands that read committed files and compute nothing new from them
(`bench reproduce PAPER`, `bench compare A B`): the output of a call, kept under a key over
everything it is read from (the project's files, the installed distributions and the data
trees: bench.run.warm.inputs_key; the arguments; and the files it reads, by content or by
size and modification time), so asking again imports none of the report code (about 1 to
4 s of numpy, scipy, pandas and torch). Records live with bench's other kept answers
(bench.report.tools.status_cache), never in the current directory.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from stat import S_ISREG

import typer

FORMAT = 1  # bump when what a record holds changes


@dataclass(frozen=True)
class Answer:
    """A command's output: its stdout and stderr lines and its exit code."""

    out: list[str]
    err: list[str] = field(default_factory=list)
    code: int = 0

    def emit(self) -> None:
        """Print it as the command prints it, and exit with its code."""
        for line in self.out:
            typer.echo(line)
        for line in self.err:
            typer.echo(line, err=True)
        if self.code:
            raise typer.Exit(self.code)


def _stamp(path: Path, by_content: bool) -> list[object] | None:
    """What a call's answer depends on in `path`: its content's hash (or its size and
    modification time), "absent" when it does not exist, and None when it is not a regular
    file (a FIFO would block the read forever, a device never ends): such a call is not kept,
    and the command itself refuses the file in one line."""
    try:
        stat = path.stat()
    except OSError:
        return [str(path), "absent"]
    if not S_ISREG(stat.st_mode):
        return None
    if not by_content:
        return [str(path.resolve()), stat.st_size, stat.st_mtime_ns]
    try:
        return [str(path.resolve()), hashlib.sha256(path.read_bytes()).hexdigest()]
    except OSError:
        return [str(path), "absent"]


def answer_key(
    command: str, args: Iterable[object], files: Iterable[Path], by_content: bool = False
) -> str | None:
    """The key of a call's answer, or None when its inputs cannot all be listed (or one of
    its files is not a regular file)."""
    from bench.report.tools.status_cache import short_key
    from bench.run.warm import inputs_key

    inputs = inputs_key([], None, None)
    if inputs is None:
        return None
    stamps = [_stamp(Path(f), by_content) for f in sorted(files)]
    if any(stamp is None for stamp in stamps):
        return None
    return short_key(FORMAT, command, inputs, *map(str, args), *map(repr, stamps))


def answered(key: str | None, compute: Callable[[], Answer]) -> Answer:
    """The answer kept under `key`, else `compute()`'s, kept for next time. A call that
    raises (a user's mistake: a missing file, a bad tolerance) is not kept."""
    from bench.report.tools.status_cache import keep_record, load_record

    if key is not None:
        kept = load_record("answer", key)
        try:
            return Answer(**kept)
        except TypeError:
            pass
    answer = compute()
    if key is not None:
        keep_record("answer", key, asdict(answer))
    return answer
