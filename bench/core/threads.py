"""Thread pinning: a job's numbers must not depend on how many threads torch happens to use.

Float reductions sum in an order that depends on torch's intra-op thread count, so the same
seeded training gives different weights with 1 and 2 threads. Every job therefore runs with
a thread count fixed by the job itself (its mechanism's `resources["num_cpus"]`, default 1),
never by the executor, `--jobs` or the machine; cached artifacts are keyed by the count they
were built with (bench.plugin.artifacts), and the count is recorded in every row's provenance.
The other hidden input, torch's global RNG (a module's default init draws from it), is
seeded per job from its config (bench.run.kinds.reconstruction) and per artifact from its recipe
(bench.plugin.artifacts).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


def threads_for(mechanism_cls: type) -> int:
    """Intra-op threads a job of this mechanism runs with: its declared CPUs, default 1."""
    wanted = getattr(mechanism_cls, "resources", None) or {}
    return max(1, int(wanted.get("num_cpus", 1)))


@contextmanager
def pinned_threads(threads: int) -> Iterator[None]:
    """Run the body with exactly `threads` intra-op threads, restoring the count after."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
