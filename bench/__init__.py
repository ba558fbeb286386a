"""bench: benchmark and attack-evaluation suite for inference-time privacy mechanisms.

The public API is deliberately small: the protocols (`Task`, `Mechanism`, `Attack`,
`Release`, `Guarantee`, `NoiseModel`), the registration decorators, and `run_suite`.
"""

from __future__ import annotations

__version__ = "0.1.0"
