"""bench: benchmark and attack-evaluation suite for inference-time privacy mechanisms.

Two public surfaces: bench.plugin, the API a mechanism, attack or task author writes against
(protocols, typed parameters, registries, the input-space base class, noise calibration, the
hooks a family registers, the contract checks), and bench.api, the one run path (plan, run,
publish; `run_suite` does all three with its checks). The packages below them, in the order
a run goes through them: suite/ (suite files), run/ (jobs, their kinds, the runner and its
executors), store/ (results), metrics/, certify/ (the certificates and the privacy audit),
report/ (boards, paper reproductions, maintainer tools), cli/ (the `bench` command); core/
holds what every layer uses (errors, hashing, code versions, devices, threads, CPU math).
docs/architecture.md draws it.

Importing bench has no side effect: CPU arithmetic is pinned to one vector ISA where jobs
start (the CLI, bench.api.run, every job's worker; bench.core.cpu_math).
"""

from __future__ import annotations

__version__ = "0.1.0"
