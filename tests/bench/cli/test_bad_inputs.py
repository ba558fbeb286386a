"""Bad input gets one clean line: a fixed table of named malformed suite values (every
mechanism and attack parameter given a value of the wrong type, out of range or not
finite), value normalisation before hashing, and property-based fuzzing of suite files."""

from __future__ import annotations

import math
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import attacks  # noqa: F401  (registers the attacks)
import mechanisms  # noqa: F401  (registers the mechanisms)
from bench.core.errors import BenchError, SuiteFileError
from bench.plugin.params import ParamSpec
from bench.plugin.registry import ATTACKS, MECHANISMS
from bench.run.plan import expand
from bench.suite.read import parse_suite
from tests.conftest import ROOT, TINY_SUITE


def _suite(**changes: Any) -> dict[str, Any]:
    raw = tomllib.loads(TINY_SUITE)
    raw.update(changes)
    return raw


def _bad_values(spec: ParamSpec) -> list[tuple[str, Any]]:
    """Named values a parameter of this declaration must refuse."""
    kind, default = spec.kind, spec.default
    if kind is bool:
        return [("string", "yes"), ("number", 1), ("list", [True])]
    if kind is str:
        out = [("number", 3), ("boolean", True), ("list", [default])]
        return [*out, ("unknown-choice", "no-such-choice")] if spec.choices else out
    out = [
        ("string", "abc"),
        ("numeric-string", str(float(default))),
        ("boolean", True),
        ("nan", math.nan),
        ("inf", math.inf),
        ("negative", -5),
        ("list", [default]),
        ("table", {"value": default}),
    ]
    if kind is int:
        out.append(("fraction", 1.5))
    return out


def _cases() -> list[Any]:
    cases = []
    for kind, registry in (("mechanism", MECHANISMS), ("attack", ATTACKS)):
        for name in registry.names():
            cls = registry.get(name)
            for param, spec in cls.param_specs().items():
                if spec.kind is object:  # a list or None: checked by the component itself
                    continue
                for label, value in _bad_values(spec):
                    if spec.kind in (int, float) and label == "negative" and spec.low < 0:
                        continue
                    cases.append(
                        pytest.param(kind, name, param, value, id=f"{name}.{param}={label}")
                    )
    return cases


CASES = _cases()


def test_the_table_has_at_least_100_named_cases() -> None:
    assert len(CASES) >= 100


def _entry(kind: str, name: str, params: dict[str, Any]) -> dict[str, Any]:
    entry = {"name": name, "params": params}
    if kind == "attack":
        return {"attack": [entry]}
    return {"mechanism": [entry]}


@pytest.mark.parametrize(("kind", "name", "param", "value"), CASES)
def test_bad_parameter_value_is_one_line_naming_file_component_and_key(
    kind: str, name: str, param: str, value: Any
) -> None:
    with pytest.raises(SuiteFileError) as err:
        parse_suite(_suite(**_entry(kind, name, {param: value})), "bad.toml")
    text = str(err.value)
    assert "\n" not in text and text.startswith("bad.toml: ")
    assert name in text and param in text


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("n_train", 1.5, "must be an integer"),
        ("n_train", "300", "must be a number"),
        ("n_train", True, "must be a number"),
        ("train_epochs", math.nan, "must be finite"),
        ("n_test", 0, "n_test must be >= 1"),
        ("n_aux", -3, "n_aux must be >= 1"),
    ],
)
def test_bad_task_option_is_one_line(option: str, value: Any, message: str) -> None:
    task = {**tomllib.loads(TINY_SUITE)["task"][0], option: value}
    with pytest.raises(SuiteFileError) as err:
        parse_suite(_suite(task=[task]), "bad.toml")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_equal_values_of_another_numeric_type_are_the_same_job() -> None:
    as_int = _suite(mechanism=[{"name": "gauss-input", "params": {"eps": 4, "r": 1}}])
    as_float = _suite(mechanism=[{"name": "gauss-input", "params": {"eps": 4.0, "r": 1.0}}])
    a, b = expand(parse_suite(as_int)), expand(parse_suite(as_float))
    assert [j.hash for j in a] == [j.hash for j in b]
    assert all(isinstance(j.params["eps"], float) for j in a)
    steps = _suite(attack=[{"name": "optimization", "params": {"max_steps": 30.0}}])
    (job,) = {j.attack_params["max_steps"]: j for j in expand(parse_suite(steps)) if j.attack}
    assert isinstance(job, int) and job == 30


def test_more_attack_samples_than_test_samples_is_refused() -> None:
    with pytest.raises(BenchError, match=r"attack_samples = 1000, but task fmnist has only 100"):
        expand(parse_suite(_suite(attack_samples=1000), "s.toml"))
    # A task entry may lower it for itself.
    task = {**tomllib.loads(TINY_SUITE)["task"][0], "attack_samples": 50}
    jobs = expand(parse_suite(_suite(attack_samples=1000, task=[task])))
    assert {j.attack_samples for j in jobs if j.attack} == {50}


# ------------------------------------------------------------------------ fuzzing

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
VALUES = st.one_of(
    SCALARS,
    st.lists(SCALARS, max_size=3),
    st.dictionaries(st.text(max_size=4), SCALARS, max_size=2),
)
NAMES = st.sampled_from(
    ["gauss-input", "identity", "ldp-image", "dfil", "no-such", "optimization", "map", ""]
)
KEYS = st.sampled_from(["eps", "r", "delta", "max_steps", "lr", "name", "grid", "params", "x"])


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,  # the same examples on every run: a deterministic test
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    top=st.dictionaries(
        st.sampled_from(["name", "version", "seeds", "attack_samples", "description", "extra"]),
        VALUES,
        max_size=3,
    ),
    mech_name=NAMES,
    mech_params=st.dictionaries(KEYS, VALUES, max_size=3),
    attack_name=NAMES,
    attack_params=st.dictionaries(KEYS, VALUES, max_size=2),
)
def test_fuzzed_suites_parse_or_fail_with_one_line(
    top: dict, mech_name: str, mech_params: dict, attack_name: str, attack_params: dict
) -> None:
    raw = _suite(
        mechanism=[{"name": mech_name, "params": mech_params}],
        attack=[{"name": attack_name, "params": attack_params}],
    )
    raw.update(top)
    try:
        suite = parse_suite(raw, "fuzz.toml")
    except BenchError as exc:  # refused: one line, no traceback
        assert "\n" not in str(exc) and str(exc)
        return
    # Accepted: every value is typed, finite and in range, so the jobs expand, unless the
    # suite asks more of its task than it has (attack_samples): again one line.
    try:
        jobs = expand(suite)
    except BenchError as exc:
        assert "\n" not in str(exc) and "attack_samples" in str(exc)
        return
    assert all(j.hash for j in jobs)


# ------------------------------------------------- files, stores, caches, plug-ins, CLI


def _cli(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """Run `bench ARGS` in-process: (exit code, stderr)."""
    from bench.cli.app import main

    monkeypatch.setattr("sys.argv", ["bench", *args])
    with pytest.raises(SystemExit) as done:
        main()
    return int(done.value.code or 0), capsys.readouterr().err


def _one_line_refusal(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bench: error: "), err
    assert fragment in lines[0] and "Traceback" not in err


SUITE_BYTES = {
    "directory": None,
    "binary": b"\xff\xfe\x00\x01\x02",
    "utf16": 'name = "x"\n'.encode("utf-16"),
    "bad-toml": b"name = \n",
}


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("directory", "is a directory"),
        ("binary", "not UTF-8"),
        ("utf16", "not UTF-8"),
        ("bad-toml", "not valid TOML"),
    ],
)
def test_unreadable_suite_files_are_one_line(tmp_path, monkeypatch, capsys, case, fragment):
    path = tmp_path / "suite.toml"
    if SUITE_BYTES[case] is None:
        path.mkdir()
    else:
        path.write_bytes(SUITE_BYTES[case])
    _one_line_refusal(*_cli(monkeypatch, capsys, "run", "--suite", str(path)), fragment)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("run", "--suite", "smoke", "--seeds", "0"), "'--seeds'"),
        (("run", "--suite", "smoke", "--jobs", "0"), "'--jobs'"),
        (("run", "--suite", "smoke", "--jobs", "two"), "'--jobs'"),
        (("run", "--bogus"), "No such option: --bogus"),
        (("run",), "Missing option '--suite'"),
        (("list",), "Missing argument"),
        (("nosuch",), "No such command 'nosuch'"),
        (("list", "gadgets"), "gadgets"),
        (("run", "--suite", "no-such-suite"), "unknown suite 'no-such-suite'"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else None,
)
def test_cli_usage_errors_are_one_line(monkeypatch, capsys, args, fragment) -> None:
    _one_line_refusal(*_cli(monkeypatch, capsys, *args), fragment)


def _store_case(tmp_path, case: str):
    import sqlite3

    if case == "parent-is-a-file":
        (tmp_path / "f").write_text("x")
        return tmp_path / "f" / "s.sqlite"
    if case == "is-a-directory":
        (tmp_path / "d.sqlite").mkdir()
        return tmp_path / "d.sqlite"
    path = tmp_path / "s.sqlite"
    if case == "garbage":
        path.write_bytes(bytes(range(256)) * 4)
    elif case == "truncated-sqlite":
        conn = sqlite3.connect(path)
        conn.execute("create table t(x)")
        conn.commit()
        conn.close()
        path.write_bytes(path.read_bytes()[:50])
    elif case == "foreign-jobs-table":
        conn = sqlite3.connect(path)
        conn.execute("create table jobs(a int)")
        conn.commit()
        conn.close()
    return path


@pytest.mark.parametrize(
    ("case", "fragment"),
    [
        ("parent-is-a-file", "is a file, not a directory"),
        ("is-a-directory", "is a directory"),
        ("garbage", "not a bench result store"),
        ("truncated-sqlite", "not a bench result store"),
        ("foreign-jobs-table", "'jobs' table is not bench's"),
    ],
)
def test_unusable_stores_are_one_line_and_left_unchanged(
    tmp_path, monkeypatch, capsys, case, fragment
) -> None:
    store = _store_case(tmp_path, case)
    before = store.read_bytes() if store.is_file() else None
    code, err = _cli(
        monkeypatch, capsys, "run", "--suite", "smoke", "--store", str(store), "--seeds", "1"
    )
    _one_line_refusal(code, err, fragment)
    assert (store.read_bytes() if store.is_file() else None) == before


def test_cache_that_is_a_file_is_one_line(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "cache").write_text("x")
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    code, err = _cli(
        monkeypatch, capsys, "run", "--suite", "smoke", "--store", str(tmp_path / "s.sqlite")
    )
    _one_line_refusal(code, err, "is not a directory")


@pytest.mark.parametrize("damage", ["garbage-build-seconds", "nan-build-seconds", "blob-is-dir"])
def test_damaged_cache_entry_is_rebuilt(tmp_path, damage: str) -> None:
    from bench.plugin.artifacts import ArtifactCache

    cache = ArtifactCache(tmp_path)
    recipe = {"what": "answer"}
    assert cache.get_or_build(recipe, lambda: {"v": 1}) == {"v": 1}
    entry = tmp_path / cache.key(recipe)
    if damage == "garbage-build-seconds":
        (entry / "build_seconds").write_text("not a number")
    elif damage == "nan-build-seconds":
        (entry / "build_seconds").write_text("nan")
    else:
        (entry / "artifact.pt").unlink()
        (entry / "artifact.pt").mkdir()
    built = []
    assert cache.get_or_build(recipe, lambda: built.append(1) or {"v": 2}) == {"v": 2}
    assert built == [1]  # rebuilt once, then read back
    assert ArtifactCache(tmp_path).get_or_build(recipe, lambda: {"v": 3}) == {"v": 2}


@pytest.mark.parametrize(
    ("source", "spec", "fragment"),
    [
        ("def broken(:\n", "plug_broken:X", "SyntaxError"),
        ("raise RuntimeError('boom at import')\n", "plug_raises:X", "RuntimeError: boom"),
        ("X = 3\n", "plug_value:X", "is not a bench Mechanism"),
        ("class X:\n    pass\n", "plug_class:X", "is not a bench Mechanism"),
        ("Y = 1\n", "plug_missing:X", "has no mechanism 'X'"),
    ],
)
def test_broken_plug_ins_are_one_line(tmp_path, monkeypatch, source, spec, fragment) -> None:
    (tmp_path / f"{spec.split(':')[0]}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(BenchError) as err:
        parse_suite(_suite(mechanism=[{"name": spec}]), "plug.toml")
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_an_existing_bench_store_opens_again(tmp_path) -> None:
    from bench.store.guard import open_store

    open_store(tmp_path / "s.sqlite").close()
    open_store(tmp_path / "s.sqlite").close()  # the guard accepts the schema it created


def test_a_plug_in_default_of_another_type_is_left_to_the_plug_in() -> None:
    from bench.plugin.params import resolve

    out = resolve("mechanism p", {"layers": None, "eps": 1.0}, {"layers": [8, 8], "eps": 2})
    assert out == {"layers": [8, 8], "eps": 2.0}


# A vocabulary of commands, options and values that a user might type, right or wrong.
# `run` always gets --dry-run (the fuzz checks argument handling, not the jobs), and
# commands that fetch data or run long validations are left out.
CLI_COMMANDS = ["run", "list", "leaderboard", "compare", "profile", "reproduce", "failures"]
CLI_COMMANDS += ["attack-report", "nosuch", ""]
CLI_OPTIONS = ["--suite", "--jobs", "--seeds", "--store", "--all", "--exact", "--params"]
CLI_OPTIONS += ["--docs", "--root", "--out", "--executor", "--no-progress", "--write", "-x"]
CLI_VALUES = ["smoke", "no-such", "0", "-1", "two", "", "1e9", "nan", "mechanisms"]
CLI_VALUES += ["attacks", "ip", "store.sqlite", "missing/dir/s.sqlite", "a.json", "local"]


@pytest.fixture(scope="module")
def boards_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the committed boards for the fuzzed commands to read and rewrite: a fuzzed
    `attack-report --suite attacks` or `leaderboard --all` is a valid command that writes the
    boards it finds, and must not write the checkout's."""
    copy = tmp_path_factory.mktemp("boards") / "leaderboards"
    shutil.copytree(ROOT / "leaderboards", copy)
    return copy


@settings(
    max_examples=120,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    command=st.sampled_from(CLI_COMMANDS),
    words=st.lists(st.sampled_from(CLI_OPTIONS + CLI_VALUES), max_size=5),
)
def test_fuzzed_command_lines_exit_0_or_one_line_2(
    tmp_path_factory, monkeypatch, capsys, boards_copy, command: str, words: list[str]
) -> None:
    """Any command line: exit 0, or exit 2 with one `bench: error:` line and no traceback;
    the files it was pointed at are left as they were on exit 2. The boards a command finds
    without --root are a copy of the committed ones."""
    from bench.core import places

    def copied_boards(override: Path | None = None) -> places.BoardsRoot:
        if override is not None:
            return places.BoardsRoot(Path(override), "--root")
        return places.BoardsRoot(boards_copy, "the checkout")

    monkeypatch.setattr(places, "boards_root", copied_boards)
    where = tmp_path_factory.mktemp("cli")
    monkeypatch.chdir(where)
    (where / "a.json").write_text("{}")
    args = [command, *words] if command else words
    assume(args)  # `bench` alone prints the help (test_bare_bench_prints_the_help)
    if command == "run":
        args.append("--dry-run")
    before = sorted(p.relative_to(where) for p in where.rglob("*"))
    code, err = _cli(monkeypatch, capsys, *args)
    assert "Traceback" not in err, (args, err)
    assert code in (0, 2), (args, code, err)
    if code == 2:
        assert len(err.strip().splitlines()) == 1, (args, err)
        assert err.startswith("bench: error: "), (args, err)
        assert sorted(p.relative_to(where) for p in where.rglob("*")) == before, args


def test_bare_bench_prints_the_help(monkeypatch, capsys) -> None:
    from bench.cli.app import main

    monkeypatch.setattr("sys.argv", ["bench"])
    with pytest.raises(SystemExit):
        main()
    out, err = capsys.readouterr()
    assert "Usage" in out and "Commands" in out and "Traceback" not in out + err
