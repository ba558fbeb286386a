"""Where bench reads and writes, beyond the data (bench.data.locations), decided in one place.

- Trained artifacts (`artifact_cache_dir`): $BENCH_CACHE, else `.bench/cache` beside a store
  kept in a checkout's `.bench/` directory (the default store's), else the platform's user
  cache directory. A store named anywhere else gets no directory beside it: `--store S`
  writes S (and SQLite's S-wal, S-shm) and nothing more there.
- Kept answers (`answers_dir`: what `status`, `list`, `--dry-run` and a warm rerun reuse, and
  the store each suite last ran on): $BENCH_CACHE, else the platform's user cache directory;
  never the current directory, so a command that computes nothing leaves no file where it
  is called.
- Committed boards (`boards_root`, read by `status`, `reproduce`, `list suites` and the
  estimates): `--root` when given, else the leaderboards/ of the checkout bench runs from,
  else that of the checkout the current directory is in, else the copy installed with the
  package (bench/_boards/, built from leaderboards/ into the wheel: leaderboard.json and
  reproduction.json only). `BoardsRoot.line` says which rule chose the directory.
- Research suites (`studies_dir`): the studies/ directory of the same checkout (none when
  installed).

No job's numbers depend on any of this, and no job's code imports this module (job hashes
cover the code a job imports: bench.core.codeversion).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import platformdirs

from bench.data.locations import APP_NAME, CACHE_ENV, checkout_root

BOARDS_DIR = "leaderboards"  # a checkout's committed boards
PACKAGED_BOARDS = "_boards"  # the same boards inside the installed bench package
STUDIES_DIR = "studies"  # a checkout's research suites
OWN_DIR = ".bench"  # the default store's directory (bench's own)
INSTALLED = "the installed package"  # BoardsRoot.source of the packaged boards


def _is_checkout(root: Path) -> bool:
    """Whether `root` is a source checkout of bench: its pyproject.toml names the project
    and a bench package sits beside it."""
    pyproject = root / "pyproject.toml"
    if not (pyproject.is_file() and (root / "bench" / "__init__.py").is_file()):
        return False
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return False
    return f'name = "{APP_NAME}"' in text


def enclosing_checkout(start: Path | None = None) -> Path | None:
    """The checkout of bench that `start` (default: the current directory) is in, or None."""
    try:
        here = (start or Path.cwd()).resolve()
    except OSError:  # the current directory was removed
        return None
    for folder in (here, *here.parents):
        if _is_checkout(folder):
            return folder
    return None


def artifact_cache_dir(store: Path) -> Path:
    """The artifact cache for a store: $BENCH_CACHE, else `.bench/cache` when the store sits
    in a checkout's `.bench/` directory (the default store's), else the platform's user
    cache directory. Artifacts are keyed by recipe and code version, so one cache serves
    any number of stores."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    parent = Path(store).parent
    if checkout_root() is not None and parent.name == OWN_DIR:
        return parent / "cache"
    return Path(platformdirs.user_cache_dir(APP_NAME)) / "artifacts"


def answers_dir() -> Path:
    """Where bench keeps what it may answer from again (status checks, listings, job lists,
    warm-rerun plans, each suite's last store): $BENCH_CACHE, else the platform's user
    cache directory. Each record is keyed by everything its answer is computed from."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(platformdirs.user_cache_dir(APP_NAME))


@dataclass(frozen=True)
class BoardsRoot:
    """The directory holding one committed board directory per suite, and why it was
    chosen (said once by the commands that read boards)."""

    path: Path
    source: str  # "--root", "the checkout", "the current checkout", INSTALLED

    @property
    def installed(self) -> bool:
        """Whether these are the boards installed with the package (never rewritten)."""
        return self.source == INSTALLED

    def writable(self, what: str) -> Path:
        """The path, for a command that rewrites committed boards (`what`); the installed
        package's copy is refused in one line (a ConfigError), so nothing is written into
        site-packages."""
        if self.installed:
            from bench.core.errors import ConfigError

            raise ConfigError(
                f"{what} rewrites committed boards, and {self.path} is the copy installed with "
                "bench; pass --root DIR (a checkout's leaderboards/)"
            )
        return self.path

    def line(self) -> str:
        """`boards: PATH (SOURCE)`, the line a command prints when the root matters."""
        missing = "" if self.path.is_dir() else "; not found, pass --root DIR"
        return f"boards: {self.path} ({self.source}{missing})"


def packaged_boards() -> Path:
    """The committed boards installed with the package (bench/_boards/)."""
    return Path(str(resources.files("bench") / PACKAGED_BOARDS))


def boards_root(override: Path | None = None) -> BoardsRoot:
    """Where the committed boards are read from: `override` (--root), else the checkout
    bench runs from, else the checkout the current directory is in, else the installed
    package's copy. A checkout without leaderboards/ is passed over."""
    if override is not None:
        return BoardsRoot(Path(override), "--root")
    for checkout, source in (
        (checkout_root(), "the checkout"),
        (enclosing_checkout(), "the current checkout"),
    ):
        if checkout is not None and (checkout / BOARDS_DIR).is_dir():
            return BoardsRoot(checkout / BOARDS_DIR, source)
    return BoardsRoot(packaged_boards(), INSTALLED)


def studies_dir() -> Path | None:
    """The research suites' directory (studies/) of the checkout bench runs from, else of
    the checkout the current directory is in; None when there is none (an installed copy)."""
    for checkout in (checkout_root(), enclosing_checkout()):
        if checkout is not None and (checkout / STUDIES_DIR).is_dir():
            return checkout / STUDIES_DIR
    return None
