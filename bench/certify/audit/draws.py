"""The audit's draws: many releases of a few inputs, each reduced to what the test needs as
soon as it is drawn, in blocks run by a small pool of worker threads.

Determinism. A stream of n releases (one input, one purpose such as "eval/0") is cut into
blocks of `block` releases; block b is drawn by one call of its `draw` with a generator
seeded from (seed, purpose, b) alone (`block_generator`). So every block's numbers are a
fixed function of the seed, whichever worker draws it, in whatever order, and however the
blocks are grouped into work units (`chunk`): results are put back in block order, and
integer counts or float64 sums in that order are the same for any number of workers.
Floating-point reductions inside a block could still depend on torch's intra-op thread
count, so the pool pins it to 1 while it runs (`bench.core.threads.pinned_threads`) and gets
its parallelism from the workers instead: one block per core at a time, never an OpenMP
team waiting on a busy core.

Concurrency. With more than one worker, a mechanism's `release()` runs in several threads
at once, each call with its own generator and a read-only input batch. A release that is a
function of its input and generator (what the contract checks of bench.plugin.checks demand) is
safe so; one that keeps state between calls should be audited with `workers=1`, which
draws every block in the calling thread. Grad mode is per thread in torch, so each worker
draws under `torch.no_grad()` itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Generic, TypeVar

import torch

from bench.core.hashing import derive_seed
from bench.core.threads import pinned_threads

T = TypeVar("T")

# Input + release values per release() call: 2^18 float32 values are 1 MB, so one block's
# tensors stay in a core's cache while the release and the statistic are computed.
BLOCK_VALUES = 1 << 20
MIN_BLOCK, MAX_BLOCK = 64, 8192
# Releases per work unit handed to a worker (rounded to whole blocks): large enough that
# scheduling costs nothing, small enough that progress moves about once per 0.1 s.
CHUNK_RELEASES = 1 << 15


def block_rows(values_per_release: int) -> int:
    """Releases per block for a release of `values_per_release` input + output values: a
    fixed function of the mechanism's shapes (never of the machine), so the blocks, hence
    the random streams, are the same everywhere."""
    rows = BLOCK_VALUES // max(1, values_per_release)
    return int(min(MAX_BLOCK, max(MIN_BLOCK, rows)))


def block_generator(seed: int, purpose: str, index: int) -> torch.Generator:
    """The generator of block `index` of the stream `purpose`: a function of the three
    alone (a SHA-256 derived seed, bench.core.hashing.derive_seed), so streams and blocks never
    share numbers and any block can be drawn first."""
    return torch.Generator().manual_seed(derive_seed(seed, f"audit-block/{purpose}/{index}"))


def default_workers() -> int:
    """Worker threads an audit uses by default: torch's intra-op thread count (what the
    caller allows this process; a bench job pins it), at most the CPUs available."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(torch.get_num_threads(), cpus))


@dataclass(frozen=True)
class Stream(Generic[T]):
    """n releases drawn in blocks of `block`, each block reduced by `draw(m, generator)` to
    a value of type T (a count, a sum, the block's scores); `purpose` names its
    generators."""

    purpose: str
    n: int
    block: int
    draw: Callable[[int, torch.Generator], T]

    def blocks(self) -> list[tuple[int, int]]:
        """(block index, releases in it) for every block, in order."""
        return [
            (b, min(self.block, self.n - start))
            for b, start in enumerate(range(0, self.n, self.block))
        ]


@dataclass(frozen=True)
class _Unit:
    """A run of consecutive blocks of one stream: what one worker draws in one go."""

    stream: int
    first: int  # position of its first block in the stream's block list
    blocks: tuple[tuple[int, int], ...]

    @property
    def releases(self) -> int:
        return sum(m for _, m in self.blocks)


def _units(streams: Sequence[Stream], chunk: int) -> list[_Unit]:
    units = []
    for s, stream in enumerate(streams):
        blocks = stream.blocks()
        per = max(1, chunk // stream.block)
        for first in range(0, len(blocks), per):
            units.append(_Unit(s, first, tuple(blocks[first : first + per])))
    return units


def _draw_unit(stream: Stream[T], unit: _Unit, seed: int) -> list[T]:
    with torch.no_grad():
        return [stream.draw(m, block_generator(seed, stream.purpose, b)) for b, m in unit.blocks]


@contextmanager
def _pool(workers: int) -> Iterator[ThreadPoolExecutor | None]:
    if workers <= 1:
        yield None
        return
    pool = ThreadPoolExecutor(workers, thread_name_prefix="audit")
    try:
        yield pool
    finally:  # an error or Ctrl-C: drop the units not started, let running ones end
        pool.shutdown(wait=True, cancel_futures=True)


def run_streams(
    streams: Sequence[Stream[T]],
    seed: int,
    *,
    workers: int = 1,
    chunk: int = CHUNK_RELEASES,
    counted: Callable[[int], None] | None = None,
) -> list[list[T]]:
    """Every block of every stream drawn and reduced; for each stream, its blocks' values in
    block order (module docstring: identical for any `workers` and `chunk`). `counted` is
    told each finished work unit's releases, in the calling thread (progress only)."""
    units = _units(streams, chunk)
    results: list[list[T | None]] = [[None] * len(s.blocks()) for s in streams]

    def store(unit: _Unit, values: list[T]) -> None:
        results[unit.stream][unit.first : unit.first + len(values)] = values
        if counted is not None:
            counted(unit.releases)

    with pinned_threads(1), _pool(workers) as pool:
        if pool is None:
            for unit in units:
                store(unit, _draw_unit(streams[unit.stream], unit, seed))
        else:
            pending: dict[Future, _Unit] = {
                pool.submit(_draw_unit, streams[u.stream], u, seed): u for u in units
            }
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    store(pending.pop(future), future.result())
    return results  # type: ignore[return-value]


__all__ = [
    "BLOCK_VALUES",
    "CHUNK_RELEASES",
    "Stream",
    "block_generator",
    "block_rows",
    "default_workers",
    "run_streams",
]
