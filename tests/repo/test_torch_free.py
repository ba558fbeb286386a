"""The store, the job record and the warm rerun import no torch: the commands that compute
nothing (a warm rerun, `bench status`, `bench list suites`) hold jobs and open the store
without the harness, in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

TORCH_FREE = (
    "bench.run.job",
    "bench.store.results",
    "bench.store.guard",
    "bench.store.rows",
    "bench.store.schema",
    "bench.run.warm",
    "bench.api",
    "bench.plugin",
    "bench.plugin.registry",
    "bench.plugin.params",
    "bench.core.hashing",
)


@pytest.mark.parametrize("module", TORCH_FREE)
def test_module_imports_without_torch(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in ('torch',) if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]", f"{module} imports torch"


def test_the_plugin_facade_exports_exactly_its_names() -> None:
    """bench.plugin's `__all__` (what IDEs and `import *` see) lists every lazily exported
    name, and each one resolves."""
    import bench.plugin as plugin

    assert sorted(plugin.__all__) == sorted(plugin._EXPORTS)
    for name in plugin.__all__:
        assert getattr(plugin, name) is not None
