"""Checks a run makes before it writes anything: every path it will write (store, artifact
cache, leaderboard directory) is usable, the leaderboard stays inside its directory, and
the run-time settings are valid. Each failure is a one-line ConfigError (exit 2) naming the
path and the fix, so a refused run leaves no file behind and no job runs in vain.

A path that does not exist yet is judged by its nearest existing ancestor. A directory is
writable when a file can really be created in it: a probe file is created there and removed
at once (permission bits say nothing for root, nor for a read-only or virtual filesystem
such as /proc); nothing else is created.
"""

from __future__ import annotations

import errno
import math
import os
import re
import sqlite3
import stat
import tempfile
from contextlib import suppress
from pathlib import Path

from bench.core.errors import BenchError, ConfigError

# A suite name is a path component of its leaderboard directory: letters, digits, '-', '_'
# and '.', not leading with '.', so that neither '.', '..' nor a hidden name is possible.
SUITE_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
BOARDS_ROOT = Path("leaderboards")
# Where the boards of suites read from files of one's own go without --out: beside the
# default store, out of the committed leaderboards/ (bench.api.run_suite says so in a line).
USER_BOARDS_ROOT = Path(".bench") / "leaderboards"
# More seeds than any study needs: `seeds = 9223372036854775807` (a suite's, or
# `bench run --seeds`) is refused at once, not expanded until memory runs out.
MAX_SEEDS = 1000
MAX_TIMEOUT_S = 30 * 24 * 3600.0  # a month: a job time limit beyond it is a typo, not a limit


def check_suite_name(name: str, where: str) -> str:
    """`name` when it is a safe leaderboard directory name, else a one-line ConfigError."""
    if not SUITE_NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: suite name {name!r} is not allowed; use 1-100 letters, digits, '-', "
            "'_' or '.' (not first), e.g. name = \"my-suite\""
        )
    return name


def checked_timeout(value: object, where: str) -> float:
    """`value` as a job time limit in seconds (bench.run.timeouts): a positive finite number
    up to a month (not a bool); anything else is a one-line ConfigError naming `where`."""
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    seconds = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_TIMEOUT_S):
        raise ConfigError(
            f"{where} must be a positive number of seconds up to {MAX_TIMEOUT_S:,.0f} "
            f"(30 days), got {value!r}"
        )
    return seconds


def board_dir(out: Path | None, suite: str, *, shipped: bool = True) -> Path:
    """Where a suite's leaderboard goes: `out`, else, for a shipped suite,
    leaderboards/SUITE (the committed boards), and for a suite read from any other file
    .bench/leaderboards/SUITE, so that a suite of one's own never writes over a committed
    board, whatever its name. The default must resolve to a directory directly inside its
    root (never the site index's own directory)."""
    if out is not None:
        return out
    root = BOARDS_ROOT if shipped else USER_BOARDS_ROOT
    path = root / suite
    if path.resolve().parent != root.resolve():
        raise ConfigError(
            f"suite {suite!r}: leaderboard directory {path} resolves outside {root}/; "
            "rename the suite or pass --out DIR"
        )
    return path


def _lstat(path: Path, what: str) -> os.stat_result | None:
    """os.stat of `path` (None when it does not exist), with a NUL byte or an overlong
    name a one-line error instead of a ValueError."""
    try:
        return path.stat()
    except FileNotFoundError:
        return None
    except ValueError as exc:  # an embedded NUL byte
        raise ConfigError(f"{what} {path!r}: not a usable path ({exc})") from exc
    except NotADirectoryError:
        return None  # a parent is a file: found by the ancestor walk
    except OSError as exc:
        raise ConfigError(f"{what} {path}: cannot be used ({os_reason(exc)})") from exc


def _nearest_existing(path: Path, what: str) -> Path:
    """The nearest ancestor of a path that does not exist; a file there is an error."""
    for parent in path.absolute().parents:
        st = _lstat(parent, what)
        if st is None:
            continue
        if not stat.S_ISDIR(st.st_mode):
            raise ConfigError(
                f"{what} {path}: {parent} is a file, not a directory; choose a path under a "
                "directory"
            )
        return parent
    return Path("/")


def _cannot_write(where: Path, exc: OSError) -> str:
    """Why no file can be written at `where`, with the fix."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            f"directory {where} is read-only for this user; make it writable or choose another path"
        )
    if exc.errno == errno.EROFS:
        return f"{where} is on a read-only filesystem; choose a path on a writable one"
    return f"no file can be created in {where} ({exc.strerror or exc}); choose another path"


def _writable_dir(directory: Path, path: Path, what: str) -> None:
    """A directory a file can be created in: the permission bits allow it, and a probe
    file really is created there (and removed)."""
    if not os.access(directory, os.W_OK | os.X_OK):
        raise ConfigError(
            f"{what} {path}: directory {directory} is read-only for this user; make it "
            "writable or choose another path"
        )
    try:
        fd, probe = tempfile.mkstemp(prefix=".bench-probe-", dir=directory)
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {_cannot_write(directory, exc)}") from exc
    os.close(fd)
    with suppress(OSError):
        os.unlink(probe)


def check_dir_target(path: Path, what: str) -> None:
    """A directory bench will create (if needed) and write into: an existing directory
    this user can write, or a path whose nearest existing ancestor is one."""
    st = _lstat(path, what)
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise ConfigError(f"{what} {path} is not a directory; point it at a directory")
        _writable_dir(path, path, what)
        return
    _writable_dir(_nearest_existing(path, what), path, what)


def check_file_target(path: Path, what: str) -> bool:
    """A file bench will open for writing (a SQLite store, with its -wal and -shm files
    beside it): a regular, writable file in a writable directory, or a new file a writable
    directory can hold. True when the file exists already."""
    st = _lstat(path, what)
    if st is None:
        _writable_dir(_nearest_existing(path, what), path, what)
        return False
    if stat.S_ISDIR(st.st_mode):
        raise ConfigError(f"{what} {path}: is a directory; --store takes a .sqlite file path")
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(
            f"{what} {path}: not a regular file (a FIFO, socket or device); "
            "--store takes a .sqlite file path"
        )
    if not os.access(path, os.R_OK | os.W_OK):
        raise ConfigError(
            f"{what} {path}: the file is read-only for this user; make it writable "
            "(chmod u+w) or use another --store"
        )
    try:  # opening for writing changes nothing, and fails on a read-only filesystem
        os.close(os.open(path, os.O_RDWR | os.O_NONBLOCK))
    except OSError as exc:
        raise ConfigError(f"{what} {path}: {_cannot_open(exc)}") from exc
    _writable_dir(path.absolute().parent, path, what)
    return True


def _cannot_open(exc: OSError) -> str:
    """Why an existing file cannot be opened for writing, with the fix."""
    if exc.errno == errno.EROFS:
        return (
            "the file is on a read-only filesystem; copy it to a writable one or use "
            "another --store"
        )
    if exc.errno in (errno.EACCES, errno.EPERM):
        return (
            "the file is read-only for this user; make it writable (chmod u+w) or use "
            "another --store"
        )
    return f"cannot be opened for writing ({exc.strerror or exc}); use another --store"


# ------------------------------------------------------------ failures during a run

_FIXES = {
    errno.ENOSPC: "the disk is full; free space and run the same command to resume",
    errno.EFBIG: "the file size limit was reached (disk full or a quota); free space or "
    "raise the limit, then run the same command to resume",
    errno.EDQUOT: "the disk quota is used up; free space and run the same command to resume",
    errno.EROFS: "the filesystem is read-only; choose a writable path",
    errno.EACCES: "permission denied; make it writable or choose another path",
    errno.EPERM: "permission denied; make it writable or choose another path",
    errno.ENOTDIR: "a parent is a file, not a directory; choose a path under a directory",
    errno.EISDIR: "it is a directory; choose a file path",
    errno.ENOENT: "a directory on the way does not exist and could not be created",
}


def os_reason(exc: OSError) -> str:
    """An OSError as `strerror` and the fix for its errno."""
    fix = _FIXES.get(exc.errno or 0)
    text = exc.strerror or str(exc)
    return f"{text}: {fix}" if fix else text


def sqlite_reason(exc: sqlite3.Error) -> str:
    """A SQLite error with the fix for the usual causes (a full disk, a read-only file)."""
    text = " ".join(str(exc).split())
    low = text.lower()
    if "disk i/o error" in low or "disk is full" in low:
        fix = "the disk may be full or the file size limit reached; free space and run the "
        fix += "same command to resume (stored jobs are kept)"
    elif "readonly" in low or "read-only" in low:
        fix = "the store is read-only; make it and its directory writable"
    elif "locked" in low or "busy" in low:
        fix = "another process holds the store locked; wait for it or use another --store"
    else:
        fix = "run the same command to resume (stored jobs are kept)"
    return f"{text}: {fix}"


class RunStorageError(BenchError):
    """Writing a store, a cache entry or a leaderboard failed during a run (disk full, a
    read-only file): jobs stored before it are kept; exit code 1."""

    exit_code = 1


def during_run(exc: BaseException, where: str) -> RunStorageError:
    """The one-line error for an OS or SQLite failure while a run writes `where`."""
    if isinstance(exc, sqlite3.Error):
        reason = sqlite_reason(exc)
    elif isinstance(exc, OSError):
        reason = os_reason(exc)
        if getattr(exc, "filename", None):
            where = str(exc.filename)
    else:
        reason = " ".join(str(exc).split())
    return RunStorageError(f"writing {where} failed: {reason}")
