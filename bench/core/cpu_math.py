"""One vector instruction set for every job's CPU arithmetic, whatever the host offers.

torch picks its CPU kernels by the host's widest vector ISA: ATen's own kernels
(reductions, elementwise maths), MKL's GEMM and oneDNN's convolutions each sum in another
order on an AVX-512 host than on an AVX2 one, so the same job gives other floats in the
4th-5th significant digit (seen on the smoke board: 30 of 277 metrics moved between two
x86_64 hosts, and 74 moved when this host was capped to SSE). A benchmark whose numbers
depend on the machine's CPU generation cannot be re-run by a reader, so bench caps all
three to AVX2 with FMA, which every x86_64 server CPU of the last decade has.

The caps are environment variables the libraries read at their first use, not at import,
so `bench/__init__.py` sets them before any job computes (and worker processes inherit
them). A variable the user set already is kept; `BENCH_CPU_ISA=native` turns the caps off.
A host without AVX2, or not x86_64, is left as it is. What a job ran with is recorded with
its results (`effective_isa`, the store's machine record), so a board says it.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

OPT_OUT = "BENCH_CPU_ISA"  # "native": no caps (the host's widest ISA)
# The three libraries' own switches, each capped to AVX2 (with FMA).
CAPS = {
    "ATEN_CPU_CAPABILITY": "avx2",  # ATen's vectorised kernels
    "MKL_CBWR": "AVX2",  # MKL's conditional numerical reproducibility branch (GEMM, LAPACK)
    "ONEDNN_MAX_CPU_ISA": "AVX2",  # oneDNN (convolutions, some matmuls)
}
_NEEDED_FLAGS = frozenset({"avx2", "fma"})


def _cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The host CPU's feature flags (Linux); empty where they cannot be read."""
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("flags"):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def caps_apply(machine: str | None = None, flags: frozenset[str] | None = None) -> bool:
    """Whether the AVX2 caps can hold here: an x86_64 CPU with AVX2 and FMA."""
    machine = (machine or platform.machine()).lower()
    if machine not in {"x86_64", "amd64"}:
        return False
    return (_cpu_flags() if flags is None else flags) >= _NEEDED_FLAGS


def pin_cpu_math(environ: os._Environ[str] | dict[str, str] = os.environ) -> dict[str, str]:
    """Set the caps in `environ` (never over a value already there) unless opted out or the
    host cannot hold them; returns the variables it set."""
    if environ.get(OPT_OUT, "").strip().lower() == "native" or not caps_apply():
        return {}
    added = {k: v for k, v in CAPS.items() if k not in environ}
    environ.update(added)
    return added


def effective_isa() -> str:
    """The vector ISA torch's CPU kernels run with in this process ("AVX2", "AVX512",
    "DEFAULT", ...), and whether bench's caps are set: what a reader needs to re-run a row."""
    import torch

    capability = str(torch.backends.cpu.get_cpu_capability())
    pinned = all(os.environ.get(k) == v for k, v in CAPS.items())
    return f"{capability} (pinned)" if pinned else f"{capability} (host)"
