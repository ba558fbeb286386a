"""One vector ISA for CPU arithmetic (bench.core.cpu_math): the caps are set before any job
computes, reach fresh processes, respect the user's own settings and are recorded."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.core.cpu_math import CAPS, OPT_OUT, caps_apply, pin_cpu_math

HOST_HOLDS_CAPS = caps_apply()


def _fresh(code: str, **env: str) -> str:
    """stdout of `code` in a new interpreter whose environment has no caps (plus `env`)."""
    clean = {k: v for k, v in os.environ.items() if k not in CAPS and k != OPT_OUT}
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


@pytest.mark.skipif(not HOST_HOLDS_CAPS, reason="needs an x86_64 CPU with AVX2 and FMA")
def test_every_job_pins_torch_to_avx2_before_it_computes():
    """A job's process (any executor's: `attempt` runs every job) is capped before the job's
    first op, whatever imported bench or torch before."""
    probe = (
        "import torch, os, bench.run.executors as e, bench.store.results as s\n"
        "def job(*args):\n"
        "    torch.ones(3).sum()\n"
        "    print(torch.backends.cpu.get_cpu_capability(), s.machine_info()['cpu_isa'],"
        " os.environ['MKL_CBWR'], os.environ['ONEDNN_MAX_CPU_ISA'])\n"
        "e.run_job_of_kind = job\n"
        "e.attempt(None, None)"
    )
    assert _fresh(probe) == "AVX2 AVX2 (pinned) AVX2 AVX2"


def test_importing_bench_changes_no_environment():
    """Importing bench, its plug-in API or its run API sets nothing: the caps are set where
    jobs start (the CLI, bench.api.run, every job), not as a side effect in a plug-in
    author's process."""
    probe = "import os, bench, bench.plugin, bench.api; print(sorted(set(os.environ) & {caps}))"
    assert _fresh(probe.format(caps=set(CAPS))) == "[]"


@pytest.mark.skipif(not HOST_HOLDS_CAPS, reason="needs an x86_64 CPU with AVX2 and FMA")
def test_opting_out_leaves_the_host_isa_and_says_so():
    probe = (
        "from bench.core.cpu_math import pin_cpu_math; pin_cpu_math(); "
        "import bench.store.results as s, os; "
        "print(s.machine_info()['cpu_isa'], 'MKL_CBWR' in os.environ)"
    )
    assert _fresh(probe, **{OPT_OUT: "native"}).endswith("(host) False")


def test_a_value_the_user_set_is_kept():
    env = {"ATEN_CPU_CAPABILITY": "default"}
    added = pin_cpu_math(env)
    if HOST_HOLDS_CAPS:
        assert env == {**CAPS, "ATEN_CPU_CAPABILITY": "default"}
        assert "ATEN_CPU_CAPABILITY" not in added
    else:
        assert added == {}


def test_caps_only_where_the_cpu_can_hold_them():
    assert caps_apply("x86_64", frozenset({"sse2", "avx", "avx2", "fma"}))
    assert not caps_apply("x86_64", frozenset({"sse2", "avx"}))  # no AVX2: left as it is
    assert not caps_apply("aarch64", frozenset({"avx2", "fma"}))
    assert pin_cpu_math({OPT_OUT: "Native"}) == {}
