"""Keep dependencies' chatter out of bench's output: what a library prints about itself
(not about the user's run) would otherwise repeat once per worker between bench's lines.

- HiGHS writes its version banner to the process's standard output (fd 1, from C++) the
  first time a process constructs `highspy.Highs()`, before bench can switch its output
  off; absorbed here by building one solver with fd 1 pointed at /dev/null.
- torch deprecates `torch.jit.script`, which a dependency calls while a job runs; the
  FutureWarning is torch's advice to that dependency, nothing a bench user can act on.

Called once per process that runs jobs (bench.run.executors.attempt). Results are untouched:
nothing here changes what a job computes, so this module is not in any code version.
"""

from __future__ import annotations

import os
import sys
import warnings
from functools import cache

TORCH_JIT_DEPRECATION = r"`torch\.jit\.script` is deprecated"


@cache
def silence_dependencies() -> None:
    """Absorb HiGHS's banner and ignore torch's jit deprecation, once per process."""
    warnings.filterwarnings("ignore", message=TORCH_JIT_DEPRECATION, category=FutureWarning)
    absorb_highs_banner()


def absorb_highs_banner() -> None:
    """Construct one HiGHS solver with fd 1 sent to /dev/null, so the banner HiGHS prints
    once per process is spent there; nothing when highspy is not installed."""
    try:
        import highspy
    except ImportError:
        return
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
