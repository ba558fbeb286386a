"""Content-addressed artifact cache for trained models (`.bench/cache/<key>/`).

Each artifact is a torch state (any picklable-by-torch object) written atomically
(temp file + rename) with its sha256 beside it and verified on read; a corrupt or
half-written entry is rebuilt, never used. A per-key file lock makes concurrent
workers build an artifact once. The time an artifact took to build is stored with it,
so a job's reported fit cost is the same whether the artifact was built or reused.
Artifacts are read onto the CPU whatever device built them (the job moves them to its own);
one built on an accelerator is keyed by its device kind, as its floats differ from the CPU's.
An entry is also keyed by the code that builds it: the project modules of the caller and of
the build function, followed through their imports (bench.core.codeversion), so an edit to any
helper below them rebuilds the artifact instead of handing out one the old code made. When
that code is a plug-in's (a package of a plug-in component loaded here), its own package's
files and its distribution's version key the entry too (`plugin_identity`); the entries of
the project's own code keep their keys.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import math
import pickle
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from bench.core.codeversion import code_digest, plugin_closure, plugin_identity, top_package
from bench.core.device import CPU, device_kind, to_cpu
from bench.core.errors import ConfigError
from bench.core.fsutil import atomic_write
from bench.core.hashing import digest, seeded_init
from bench.core.project import in_project


class ArtifactCache:
    """Get-or-build storage for expensive artifacts, keyed by a hash of their recipe."""

    def __init__(self, root: Path, device: torch.device | str = CPU) -> None:
        self.root = Path(root)
        self.device = torch.device(device)  # where builds run (the job's device)
        self.seconds_inside = 0.0  # wall time spent in get_or_build (building or loading)
        self.build_seconds = 0.0  # recorded build time of every artifact handed out
        self._depth = 0  # a build may fetch other artifacts: time only the outermost call

    def reset_timers(self) -> None:
        self.seconds_inside = self.build_seconds = 0.0

    def key(self, recipe: dict[str, Any]) -> str:
        """The cache key of a recipe (everything that determines the artifact), including
        the intra-op thread count it is built with: float reductions, and so trained
        weights, depend on it (bench.core.threads), and an artifact must not depend on which
        job happened to build it first. An accelerator's kind is part of it too (its kernels
        give other floats); the CPU is not: a CPU artifact's key is its recipe and thread
        count alone."""
        keyed = {**recipe, "torch_threads": torch.get_num_threads()}
        kind = device_kind(self.device)
        if kind != "cpu":
            keyed["device"] = kind
        return digest(keyed, length=24)

    @staticmethod
    def entry_key(key: str, modules: tuple[str, ...], plugin: str | None = None) -> str:
        """Where the artifact of recipe key `key`, built by code in `modules`, is stored: the
        key and the code version of those modules and all they import, and `plugin`, the
        code version of plug-in code that builds it (None: none does). The build is seeded
        by `key` alone, so the same code rebuilds the same artifact in a cold cache."""
        if plugin is not None:
            code = code_digest(*modules, skip_audit=False) if modules else None
            return digest({"key": key, "code": code, "plugin": plugin}, length=24)
        if not modules:
            return key
        return digest({"key": key, "code": code_digest(*modules, skip_audit=False)}, length=24)

    @contextmanager
    def _locked(self, key: str) -> Iterator[Path]:
        entry = self.root / key
        try:
            entry.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(
                f"artifact cache {self.root}: cannot create {entry.name} ({exc.strerror}); "
                "point BENCH_CACHE at a writable directory"
            ) from exc
        with open(entry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield entry
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get_or_build(self, recipe: dict[str, Any], build: Callable[[], Any]) -> Any:
        """Load the artifact for `recipe`, building and storing it first if needed."""
        key = self.key(recipe)
        caller = sys._getframe(1)
        entry_key = self.entry_key(
            key, _builder_modules(build, caller), plugin_identity(*_plugin_builders(build, caller))
        )
        start = time.perf_counter()
        outermost = self._depth == 0
        self._depth += 1
        try:
            with self._locked(entry_key) as entry:
                stored = self._read(entry)
                if stored is not None:
                    found, took = stored
                else:
                    # An artifact is a function of its recipe alone: anything its build draws
                    # from torch's global RNG (e.g. a module's default init) is seeded by the
                    # key, not by whatever the process ran before (job order, executor).
                    with seeded_init(int(key[:15], 16), "artifact"):
                        found = to_cpu(build())  # as a read gives it (the same object on CPU)
                    took = time.perf_counter() - start
                    self._write(entry, found, took)
                if outermost:
                    self.build_seconds += took
                return found
        finally:
            self._depth -= 1
            if outermost:
                self.seconds_inside += time.perf_counter() - start

    @staticmethod
    def _read(entry: Path) -> tuple[Any, float] | None:
        """The entry's artifact and its recorded build time, or None when any of its files
        is missing, unreadable or inconsistent (then it is rebuilt): the blob against its
        checksum, the build time a finite non-negative number, the blob loadable."""
        blob_path, sum_path = entry / "artifact.pt", entry / "artifact.sha256"
        try:
            blob = blob_path.read_bytes()
            if hashlib.sha256(blob).hexdigest() != sum_path.read_text().strip():
                return None
            took = float((entry / "build_seconds").read_text())
            if not (math.isfinite(took) and took >= 0):
                return None
            return torch.load(io.BytesIO(blob), weights_only=False, map_location=CPU), took
        except (OSError, ValueError, RuntimeError, EOFError, pickle.UnpicklingError):
            return None

    @staticmethod
    def _write(entry: Path, artifact: Any, build_seconds: float) -> None:
        for name in ("artifact.pt", "artifact.sha256", "build_seconds"):
            if (entry / name).is_dir():  # a damaged entry: make room for the rebuilt files
                shutil.rmtree(entry / name)
        buf = io.BytesIO()
        torch.save(artifact, buf)
        blob = buf.getvalue()
        atomic_write(entry / "build_seconds", f"{build_seconds:.6f}".encode())
        atomic_write(entry / "artifact.pt", blob)
        atomic_write(entry / "artifact.sha256", hashlib.sha256(blob).hexdigest().encode())


def _builder_modules(build: Callable[[], Any], caller: Any) -> tuple[str, ...]:
    """The project modules whose code makes an artifact: the one calling get_or_build (it
    writes the recipe and usually the build) and the one defining `build` (for a partial,
    its function)."""
    function = getattr(build, "func", build)  # functools.partial -> the function it wraps
    names = {caller.f_globals.get("__name__"), getattr(function, "__module__", None)}
    return tuple(sorted(n for n in names if isinstance(n, str) and in_project(n)))


def _plugin_builders(build: Callable[[], Any], caller: Any) -> tuple[str, ...]:
    """The plug-in modules among those `_builder_modules` looks at: a module of a plug-in
    component loaded in this process (bench.plugin.registry.plugin_modules) or one of its
    own package's modules that it draws on (bench.core.codeversion.plugin_closure)."""
    from bench.plugin.registry import plugin_modules

    components = plugin_modules()
    if not components:
        return ()
    function = getattr(build, "func", build)
    names = {caller.f_globals.get("__name__"), getattr(function, "__module__", None)}
    names = {n for n in names if isinstance(n, str) and not in_project(n)}
    if not names:
        return ()
    packages = {top_package(n) for n in names}
    code = frozenset().union(*(plugin_closure(m) for m in components if top_package(m) in packages))
    return tuple(sorted(names & code))
