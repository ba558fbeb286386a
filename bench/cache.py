"""Content-addressed artifact cache for trained models (`.bench/cache/<key>/`).

Each artifact is a torch state (any picklable-by-torch object) written atomically
(temp file + rename) with its sha256 beside it and verified on read; a corrupt or
half-written entry is rebuilt, never used. A per-key file lock makes concurrent
workers build an artifact once.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from bench.hashing import digest


class ArtifactCache:
    """Get-or-build storage for expensive artifacts, keyed by a hash of their recipe."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def key(self, recipe: dict[str, Any]) -> str:
        """The cache key of a recipe (everything that determines the artifact)."""
        return digest(recipe, length=24)

    @contextmanager
    def _locked(self, key: str) -> Iterator[Path]:
        entry = self.root / key
        entry.mkdir(parents=True, exist_ok=True)
        with open(entry / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield entry
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def get_or_build(self, recipe: dict[str, Any], build: Callable[[], Any]) -> Any:
        """Load the artifact for `recipe`, building and storing it first if needed."""
        key = self.key(recipe)
        with self._locked(key) as entry:
            found = self._read(entry)
            if found is not None:
                return found
            artifact = build()
            self._write(entry, artifact)
            return artifact

    @staticmethod
    def _read(entry: Path) -> Any | None:
        blob_path, sum_path = entry / "artifact.pt", entry / "artifact.sha256"
        if not (blob_path.exists() and sum_path.exists()):
            return None
        blob = blob_path.read_bytes()
        if hashlib.sha256(blob).hexdigest() != sum_path.read_text().strip():
            return None  # corrupt: rebuild
        return torch.load(io.BytesIO(blob), weights_only=False)

    @staticmethod
    def _write(entry: Path, artifact: Any) -> None:
        buf = io.BytesIO()
        torch.save(artifact, buf)
        blob = buf.getvalue()
        _atomic_write(entry / "artifact.pt", blob)
        _atomic_write(entry / "artifact.sha256", hashlib.sha256(blob).hexdigest().encode())


def _atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` so readers see the old file or the whole new one."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
