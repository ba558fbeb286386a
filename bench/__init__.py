"""bench: benchmark and attack-evaluation suite for inference-time privacy mechanisms.

The public API is deliberately small: bench.plugin (the protocols, the input-space
base, the registration decorators), bench.plugin.accounting (noise calibration), bench.plugin.hooks
(what
a mechanism family adds: its audit, board plots, privacy level) and bench.api (plan, run,
publish; `run_suite` does all three).

Architecture of the run-time, in the order a run goes through it:
- suite.py reads a suite file once (`read_suite`) and checks every name and parameter
  (params.py); jobs.py expands it into jobs, each hashed on its config, data and the code
  that computes it (codeversion.py; a family's own audit counts for audited jobs).
- api.py: `plan` (the jobs, the filters), `run` (runner.py hands pending jobs to an
  executor, executors.py; evaluate.py or membership.py runs one; store.py keeps results,
  one transaction per job) and `publish` (bench.report builds the rows and writes the
  board, waivers.py adds declared expected failures). cli.py's `run` calls these three
  (its options are declared in cli_options.py); plan_cache.py answers a rerun with nothing
  to do without importing torch.
- registry.py finds components by name (in-tree decorators, plug-in entry points);
  importing a family package runs its hooks module, which registers what it adds.
- cache.py keeps trained artifacts keyed by recipe and builder code; threads.py, device.py
  and cpu_math.py make the same job give the same numbers everywhere.
- testing.py holds the contract checks, reached only through validation.py (`bench
  validate`) and plug-ins' own tests (tests/repo/test_import_graph.py).
"""

from __future__ import annotations

from bench.core.cpu_math import pin_cpu_math

__version__ = "0.1.0"

# Before any job computes: one vector ISA for CPU arithmetic on every host (bench.core.cpu_math).
pin_cpu_math()
