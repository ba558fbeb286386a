"""Stable hashes: job identities, seed derivation, data fingerprints, code versions.

Torch-free at import (the job record and the store use it); torch is imported by the two
helpers that take tensors or seed its RNG."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no whitespace: equal configs give equal strings."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


def digest(obj: Any, length: int = 16) -> str:
    """Short sha256 of the canonical JSON of `obj`."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


def derive_seed(seed: int, purpose: str) -> int:
    """An independent 63-bit seed for (`seed`, `purpose`), so streams never overlap."""
    h = hashlib.sha256(f"{seed}:{purpose}".encode()).digest()
    return int.from_bytes(h[:8], "little") & (2**63 - 1)


def tensor_digest(*tensors: torch.Tensor, length: int = 16) -> str:
    """Short sha256 over the raw bytes, shapes and dtypes of `tensors`."""
    h = hashlib.sha256()
    for t in tensors:
        t = t.detach().cpu().contiguous()
        h.update(f"{tuple(t.shape)}{t.dtype}".encode())
        h.update(t.numpy().tobytes())
    return h.hexdigest()[:length]


def _package_relative(path: Path) -> str:
    """`path` from the top of its package tree (e.g. bench/certify/milp.py): the same in a
    checkout and in site-packages, and unique where two subpackages share a file name."""
    top = path.resolve().parent
    while (top / "__init__.py").exists():
        top = top.parent
    return path.resolve().relative_to(top).as_posix()


def files_digest(paths: list[Path], length: int = 16) -> str:
    """Short sha256 over the package-relative names and contents of source files (a code
    version)."""
    h = hashlib.sha256()
    for p in sorted({Path(p).resolve() for p in paths}):
        h.update(_package_relative(p).encode())
        h.update(p.read_bytes())
    return h.hexdigest()[:length]


def source_digest(*module_names: str, length: int = 16) -> str:
    """`files_digest` of the source files of modules named by their dotted names, found
    without importing them (for the code part of a cache recipe)."""
    paths = []
    for name in module_names:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise ValueError(f"no source file for module {name}")
        paths.append(Path(spec.origin))
    return files_digest(paths, length)


@contextmanager
def seeded_init(seed: int, purpose: str) -> Iterator[None]:
    """Seed torch's global RNG for weight initialisation, restoring it afterwards (also on
    a CUDA device the job uses, bench.core.device.forked_rng)."""
    import torch

    from bench.core.device import forked_rng

    with forked_rng():
        torch.manual_seed(derive_seed(seed, purpose))
        yield
