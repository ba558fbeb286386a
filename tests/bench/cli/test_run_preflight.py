"""A run refuses, before it writes anything, every path and setting it could not finish
with: one line, exit 2, no job run, no new file, and an existing store left byte for byte
as it was. Each case is a named test; a fuzz over suite names and numeric options checks
the same promise."""

from __future__ import annotations

import os
import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.core.errors import BenchError, SuiteFileError
from bench.run.plan import expand
from bench.suite.read import parse_suite
from tests.conftest import ROOT, TINY_SUITE, cli_here


def _toml(value: Any) -> str:
    """A TOML literal for a value of the tiny suite (strings, numbers, lists, tables)."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\0", "\\u0000") + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    return repr(value)


def _suite_text(raw: dict[str, Any]) -> str:
    lines = [f"{k} = {_toml(v)}" for k, v in raw.items() if not isinstance(v, list)]
    for kind in ("task", "mechanism", "attack"):
        for table in raw.get(kind, []):
            lines.append(f"[[{kind}]]")
            lines += [f"{k} = {_toml(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _tiny(**changes: Any) -> dict[str, Any]:
    raw = tomllib.loads(TINY_SUITE)
    raw.update(changes)
    return raw


def _write_suite(where: Path, raw: dict[str, Any]) -> Path:
    path = where / "suite.toml"
    path.write_text(_suite_text(raw))
    return path


def _files(where: Path) -> list[Path]:
    return sorted(p.relative_to(where) for p in where.rglob("*"))


def _refused(
    monkeypatch, capsys, where: Path, *args: str, fragment: str, env: dict[str, str] | None = None
) -> str:
    """`bench ARGS` in `where`: exit 2, one `bench: error:` line holding `fragment`, and no
    file added, removed or changed under `where`."""
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    before = {p: (where / p).read_bytes() for p in _files(where) if (where / p).is_file()}
    listing = _files(where)
    done = cli_here(monkeypatch, capsys, *args, cwd=where)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("bench: error: "), done.stderr
    assert fragment in lines[0], lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    assert _files(where) == listing
    assert {p: (where / p).read_bytes() for p in before} == before
    return lines[0]


RUN = ("run", "--store", "r.sqlite", "--no-progress")


@pytest.fixture
def here(tmp_path: Path, monkeypatch) -> Path:
    """An empty working directory with its own artifact cache setting."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("BENCH_LEASE_TIMEOUT", raising=False)
    return tmp_path


def _bench_store(path: Path) -> None:
    """A bench store at `path` holding no job (its schema and version only)."""
    from bench.store.results import ResultStore

    ResultStore(path).close()


# ----------------------------------------------------------------------- the store


def test_store_with_a_renamed_results_column_is_refused_and_never_written(
    here, monkeypatch, capsys
) -> None:
    store = here / "r.sqlite"
    _bench_store(store)
    conn = sqlite3.connect(store)
    conn.execute("ALTER TABLE results RENAME COLUMN value TO val")
    conn.commit()
    conn.close()
    suite = _write_suite(here, _tiny())
    _refused(monkeypatch, capsys, here, *RUN, "--suite", str(suite), fragment="'results' table has")


def test_store_of_another_schema_version_is_refused(here, monkeypatch, capsys) -> None:
    store = here / "r.sqlite"
    _bench_store(store)
    conn = sqlite3.connect(store)
    conn.execute("PRAGMA user_version = 99")
    conn.commit()
    conn.close()
    suite = _write_suite(here, _tiny())
    _refused(monkeypatch, capsys, here, *RUN, "--suite", str(suite), fragment="schema version 99")


def test_new_store_is_stamped_with_the_schema_version(tmp_path) -> None:
    from bench.store.guard import open_store
    from bench.store.schema import SCHEMA_VERSION

    open_store(tmp_path / "s.sqlite").close()
    conn = sqlite3.connect(tmp_path / "s.sqlite")
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 1
    conn.close()


def test_unstamped_store_of_this_schema_is_accepted(tmp_path) -> None:
    """A store written before the version stamp existed holds user_version 0 and exactly
    these tables: it opens and is stamped."""
    from bench.store.guard import open_store

    path = tmp_path / "s.sqlite"
    _bench_store(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 0")
    conn.commit()
    conn.close()
    open_store(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    conn.close()


def _no_expansion(monkeypatch) -> None:
    """Fail the test if the suite's jobs are listed: the refusal must come before (the
    quick path: no torch import, no data loaded; measured 0.75 s for the whole CLI)."""

    def expanded(*args: object, **kwargs: object) -> None:
        raise AssertionError("the suite was expanded before the refusal")

    monkeypatch.setattr("bench.run.publish.expand_suite", expanded)


def test_fifo_store_is_refused_before_the_suite_is_read(here, monkeypatch, capsys) -> None:
    os.mkfifo(here / "r.sqlite")
    _no_expansion(monkeypatch)
    _refused(monkeypatch, capsys, here, *RUN, "--suite", "smoke", fragment="not a regular file")


def test_read_only_store_is_refused(here, monkeypatch, capsys) -> None:
    """(As root every file is writable, so the check's answer is stubbed for the store.)"""
    store = here / "r.sqlite"
    _bench_store(store)
    store.chmod(0o444)
    real = os.access
    monkeypatch.setattr(
        "bench.core.preflight.os.access",
        lambda p, mode: False if Path(p) == Path("r.sqlite") and mode & os.W_OK else real(p, mode),
    )
    _refused(monkeypatch, capsys, here, *RUN, "--suite", "smoke", fragment="read-only")


def test_store_in_a_read_only_directory_is_refused_and_not_created(
    here, monkeypatch, capsys
) -> None:
    (here / "ro").mkdir()
    real = os.access
    monkeypatch.setattr(
        "bench.core.preflight.os.access",
        lambda p, mode: False if Path(p).name == "ro" and mode & os.W_OK else real(p, mode),
    )
    _refused(
        monkeypatch,
        capsys,
        here,
        "run",
        "--suite",
        "smoke",
        "--store",
        "ro/r.sqlite",
        fragment="is read-only",
    )


def test_a_store_on_a_read_only_filesystem_is_told_so(here, monkeypatch, capsys) -> None:
    """The permission bits allow writing, but opening the file for writing fails with EROFS
    (as on a read-only mount): the fix named is another filesystem, not chmod."""
    import errno

    store = here / "r.sqlite"
    _bench_store(store)
    real = os.open

    def read_only_fs(path, flags, *args):
        if Path(path) == Path("r.sqlite") and flags & (os.O_WRONLY | os.O_RDWR):
            raise OSError(errno.EROFS, "Read-only file system", str(path))
        return real(path, flags, *args)

    monkeypatch.setattr("bench.core.preflight.os.open", read_only_fs)
    line = _refused(
        monkeypatch, capsys, here, *RUN, "--suite", "smoke", fragment="read-only filesystem"
    )
    assert "chmod" not in line


@pytest.mark.parametrize("where", ["/proc/bench-board", "/sys/bench-board"])
def test_a_directory_no_file_can_be_created_in_is_refused_even_as_root(
    here, monkeypatch, capsys, where
) -> None:
    """Permission bits say nothing for root, nor for a virtual filesystem: a probe file is
    really created (and removed) before a path counts as writable."""
    _refused(monkeypatch, capsys, here, *RUN, "--suite", "smoke", "--out", where, fragment=where)


# ------------------------------------------------------------ output and cache paths


def test_out_below_a_regular_file_is_refused_before_any_job(here, monkeypatch, capsys) -> None:
    (here / "f").write_text("x")
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        "--out",
        "f/board",
        fragment="is a file, not a directory",
    )


def test_out_that_is_a_file_is_refused(here, monkeypatch, capsys) -> None:
    (here / "board").write_text("x")
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        "--out",
        "board",
        fragment="is not a directory",
    )


def test_out_under_a_read_only_directory_is_refused(here, monkeypatch, capsys) -> None:
    (here / "ro").mkdir()
    real = os.access
    monkeypatch.setattr(
        "bench.core.preflight.os.access",
        lambda p, mode: False if Path(p).name == "ro" and mode & os.W_OK else real(p, mode),
    )
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        "--out",
        "ro/board",
        fragment="is read-only",
    )


def test_cache_that_cannot_be_created_is_refused_without_a_store(here, monkeypatch, capsys) -> None:
    (here / "f").write_text("x")
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        fragment="artifact cache",
        env={"BENCH_CACHE": str(here / "f" / "cache")},
    )


def test_bad_lease_timeout_leaves_no_store(here, monkeypatch, capsys) -> None:
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        fragment="BENCH_LEASE_TIMEOUT",
        env={"BENCH_LEASE_TIMEOUT": "soon"},
    )


# ------------------------------------------------------------------- suite names


@pytest.mark.parametrize(
    "name", [".", "..", "../escape", "a/b", "a\\b", ".hidden", "", "a\0b", "x" * 101, "a b"]
)
def test_unsafe_suite_name_is_refused_and_nothing_is_written(
    here, monkeypatch, capsys, name: str
) -> None:
    suite = _write_suite(here, _tiny(name=name))
    _refused(monkeypatch, capsys, here, *RUN, "--suite", str(suite), fragment="suite name")
    assert not (here / "leaderboards").exists()


def test_default_board_resolves_inside_leaderboards(here, monkeypatch) -> None:
    from bench.core.errors import ConfigError
    from bench.core.preflight import board_dir

    monkeypatch.chdir(here)
    assert board_dir(None, "smoke") == Path("leaderboards/smoke")
    (here / "leaderboards").mkdir()
    (here / "leaderboards" / "away").symlink_to(here)  # a name that resolves elsewhere
    with pytest.raises(ConfigError, match="resolves outside"):
        board_dir(None, "away")


# -------------------------------------------------------------- numeric options


def test_absurd_seed_option_is_refused_before_the_suite_is_read(here, monkeypatch, capsys) -> None:
    _no_expansion(monkeypatch)
    _refused(
        monkeypatch,
        capsys,
        here,
        *RUN,
        "--suite",
        "smoke",
        "--seeds",
        "99999999999999999999",
        fragment="'--seeds'",
    )


def test_absurd_suite_seed_count_is_refused_by_the_parser() -> None:
    """Refused while parsing, before a single job is built (so no memory grows)."""
    with pytest.raises(SuiteFileError, match="'seeds' must be at most 1,000"):
        parse_suite(_tiny(seeds=9223372036854775807), "s.toml")


def test_seed_override_beyond_the_bound_is_refused_by_expand() -> None:
    with pytest.raises(BenchError, match=r"--seeds must be in \[1, 1000\]"):
        expand(parse_suite(_tiny()), seeds=10**19)


def test_too_many_jobs_are_refused_before_any_is_built() -> None:
    grid = {"eps": [0.1 + i / 1000 for i in range(1000)], "delta": [1e-5, 1e-6]}
    raw = _tiny(seeds=1000, mechanism=[{"name": "gauss-input", "grid": grid}])
    with pytest.raises(SuiteFileError, match="more than 1,000,000"):
        parse_suite(raw, "s.toml")


@pytest.mark.parametrize(
    ("option", "value", "available"),
    [("n_test", 1_000_000_000, "10,000"), ("n_train", 99999999999999999999, "")],
)
def test_size_larger_than_the_data_is_refused_naming_the_size(
    option: str, value: int, available: str
) -> None:
    task = {**tomllib.loads(TINY_SUITE)["task"][0], option: value}
    with pytest.raises(BenchError) as err:
        expand(parse_suite(_tiny(task=[task]), "s.toml"))
    text = str(err.value)
    assert f"{option} = {value:,}" in text and "has only" in text and "\n" not in text
    assert available in text


@pytest.mark.parametrize("r", [1e308, 1e300])
def test_radius_that_makes_noise_infinite_is_refused(r: float) -> None:
    raw = _tiny(mechanism=[{"name": "gauss-input", "params": {"r": r, "eps": 1.0}}])
    with pytest.raises(SuiteFileError, match="noise is not finite"):
        parse_suite(raw, "s.toml")


def test_a_large_finite_radius_is_still_accepted() -> None:
    raw = _tiny(mechanism=[{"name": "gauss-input", "params": {"r": 1e6, "eps": 1.0}}])
    parse_suite(raw, "s.toml")


# -------------------------------------------------------------------- duplicates


def test_task_listed_twice_is_refused() -> None:
    task = tomllib.loads(TINY_SUITE)["task"][0]
    with pytest.raises(SuiteFileError, match=r"\[\[task\]\] fmnist .* is listed twice"):
        parse_suite(_tiny(task=[task, dict(task)]), "s.toml")


def test_mechanism_setting_listed_twice_is_refused() -> None:
    twice = [{"name": "gauss-input", "params": {"eps": 1.0}}] * 2
    with pytest.raises(SuiteFileError, match=r"gauss-input .* is listed twice"):
        parse_suite(_tiny(mechanism=twice), "s.toml")


def test_mechanism_setting_twice_in_one_grid_is_refused() -> None:
    grid = [{"name": "gauss-input", "grid": {"eps": [1.0, 1]}}]  # 1 and 1.0: one setting
    with pytest.raises(SuiteFileError, match="is listed twice"):
        parse_suite(_tiny(mechanism=grid), "s.toml")


def test_one_setting_for_disjoint_tasks_is_not_a_duplicate() -> None:
    tasks = tomllib.loads(TINY_SUITE)["task"]
    spam = {"name": "spam", "n_aux": 200, "n_test": 100}
    mechanisms = [
        {"name": "identity", "tasks": ["fmnist"]},
        {"name": "identity", "tasks": ["spam"]},
    ]
    parse_suite(_tiny(task=[*tasks, spam], mechanism=mechanisms, attack=[]), "s.toml")


def test_attack_setting_listed_twice_is_refused() -> None:
    twice = [{"name": "optimization", "params": {"max_steps": 30}}] * 2
    with pytest.raises(SuiteFileError, match=r"optimization .* is listed twice"):
        parse_suite(_tiny(attack=twice), "s.toml")


# ------------------------------------------------------------------------- fuzz

NAME_CHARS = st.sampled_from([*"ab.-_/\\ \0:*", "..", "é"])


@settings(
    max_examples=40,
    deadline=2000,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    name=st.lists(NAME_CHARS, max_size=6).map("".join),
    seeds=st.one_of(st.integers(-5, 10**20), st.floats(allow_nan=True)),
    attack_samples=st.integers(-5, 10**12),
    n_test=st.integers(-5, 10**20),
)
def test_fuzzed_names_and_numbers_parse_or_fail_in_one_line(
    name: str, seeds: Any, attack_samples: int, n_test: int
) -> None:
    """Any suite name and any seed / sample count: accepted only when safe (a name that is
    one plain path component, counts in range), else one line, quickly."""
    task = {**tomllib.loads(TINY_SUITE)["task"][0], "n_test": n_test}
    raw = _tiny(name=name, seeds=seeds, attack_samples=attack_samples, task=[task])
    try:
        suite = parse_suite(raw, "fuzz.toml")
    except BenchError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("fuzz.toml: ")
        return
    assert "/" not in suite.name and "\\" not in suite.name and "\0" not in suite.name
    assert not suite.name.startswith(".") and 1 <= suite.seeds <= 1000
    try:
        jobs = expand(suite)
    except BenchError as exc:
        assert "\n" not in str(exc)
        assert "n_test" in str(exc) or "attack_samples" in str(exc)
        return
    assert n_test <= 10_000 and attack_samples <= n_test
    assert {j.seed for j in jobs} == set(range(suite.seeds))


# ----------------------------------------------------------------------- compare

BOARD = ROOT / "leaderboards" / "smoke" / "leaderboard.json"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ("extra-top-level-key", "Additional properties are not allowed ('extra' was unexpected)"),
        ("bad-code-version", "at code_version"),
        ("metric-without-ci", "rows[0] metric"),  # the reader's own check comes first
    ],
)
@pytest.mark.parametrize("side", ["baseline", "candidate"])
def test_compare_refuses_a_board_that_fails_the_schema(
    tmp_path, monkeypatch, capsys, change: str, fragment: str, side: str
) -> None:
    import json

    doc = json.loads(BOARD.read_text())
    if change == "extra-top-level-key":
        doc["extra"] = 1
    elif change == "bad-code-version":
        doc["code_version"] = "not a version"
    else:
        first = next(iter(doc["rows"][0]["metrics"]))
        del doc["rows"][0]["metrics"][first]["ci"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    args = (str(BOARD), str(bad)) if side == "candidate" else (str(bad), str(BOARD))
    line = _refused(monkeypatch, capsys, tmp_path, "compare", *args, fragment=fragment)
    assert str(bad) in line


def test_compare_accepts_a_committed_board_against_itself(tmp_path, monkeypatch, capsys) -> None:
    done = cli_here(monkeypatch, capsys, "compare", str(BOARD), str(BOARD), "--exact")
    assert done.returncode == 0, done.stderr


# ------------------------------------------------------- failures during a run


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            sqlite3.OperationalError("disk I/O error"),
            "writing store r.sqlite failed: disk I/O error: the disk may be full",
        ),
        (
            sqlite3.OperationalError("attempt to write a readonly database"),
            "writing store r.sqlite failed: attempt to write a readonly database: the store "
            "is read-only",
        ),
        (
            OSError(30, "Read-only file system", "lb/index.html"),
            "writing lb/index.html failed: Read-only file system: the filesystem is read-only",
        ),
        (
            OSError(20, "Not a directory", "lb/plots"),
            "writing lb/plots failed: Not a directory: a parent is a file, not a directory",
        ),
        (OSError(28, "No space left on device"), "writing store r.sqlite failed: No space"),
    ],
    ids=["disk-io", "readonly-db", "read-only-fs", "not-a-directory", "no-space"],
)
def test_failures_during_a_run_are_one_line_naming_the_path_and_the_fix(exc, expected) -> None:
    from bench.core.preflight import RunStorageError, during_run

    error = during_run(exc, "store r.sqlite")
    assert isinstance(error, RunStorageError) and error.exit_code == 1
    assert str(error).startswith(expected) and "\n" not in str(error)
