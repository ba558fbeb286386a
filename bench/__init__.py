"""bench: benchmark and attack-evaluation suite for inference-time privacy mechanisms.

The public API is deliberately small: the protocols (`Task`, `Mechanism`, `Attack`,
`Release`, `Guarantee`, `NoiseModel`), the registration decorators, and `run_suite`.
"""

from __future__ import annotations

from bench.cpu_math import pin_cpu_math

__version__ = "0.1.0"

# Before any job computes: one vector ISA for CPU arithmetic on every host (bench.cpu_math).
pin_cpu_math()
