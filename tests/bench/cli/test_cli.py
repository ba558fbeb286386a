"""The command line as a user meets it: listing, bad input (one line, exit 2, nothing
stored), plug-ins through entry points, and regression comparison."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_here, run_cli

PLUGINS = ROOT / "tests" / "plugins"


def _one_line_error(proc, *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def _stored_jobs(store: Path) -> int:
    if not store.exists():
        return 0
    with sqlite3.connect(store) as conn:
        return conn.execute("SELECT COUNT(*) FROM jobs").fetchone()[0]


def test_list_shows_registered_components(monkeypatch, capsys) -> None:
    for kind, expected in [
        ("tasks", "image [data installed]"),  # modality, data here?
        ("mechanisms", "gauss-input"),
        ("attacks", "inverter"),
        ("metrics", "ssim"),
    ]:
        proc = cli_here(monkeypatch, capsys, "list", kind)
        assert proc.returncode == 0, proc.stderr
        assert expected in proc.stdout
        if kind == "tasks":
            assert re.search(r"^fmnist +image \[data installed\] +Fashion-MNIST", proc.stdout, re.M)
        assert max(len(line) for line in proc.stdout.splitlines()) <= 100
    lines = cli_here(monkeypatch, capsys, "list", "mechanisms").stdout.splitlines()
    notions = {line.split()[0]: line.split()[1] for line in lines if not line.startswith("(")}
    assert notions["gauss-input"] == "ip" and notions["lucid"] == "idp"
    assert notions["identity"] == "none" and notions["posthoc-ptr"] == "reconstruction"


def test_list_mechanisms_params_gives_each_ones_paper_and_parameters(monkeypatch, capsys) -> None:
    out = cli_here(monkeypatch, capsys, "list", "mechanisms", "--params").stdout
    blocks = re.split(r"\n(?=\S)", out)
    by_name = {block.split()[0]: block for block in blocks}
    assert "    paper: https://arxiv.org/abs/2502.16519" in by_name["lucid"]
    assert "paper:" not in by_name["identity"]
    assert "    eps: float = " in by_name["gauss-input"]


def test_list_mechanisms_by_notion(monkeypatch, capsys) -> None:
    """The mechanisms whose claims compare: one notion's."""
    out = cli_here(monkeypatch, capsys, "list", "mechanisms", "--notion", "ip").stdout
    names = {line.split()[0] for line in out.splitlines() if not line.startswith("(")}
    assert names == {"gauss-input", "gauss-output", "lap-output"}
    proc = cli_here(monkeypatch, capsys, "list", "mechanisms", "--notion", "ipp")
    _one_line_error(proc, "notion 'ipp' (did you mean 'ip'?)")


def test_a_listing_is_kept_and_asked_again_without_importing(tmp_path, monkeypatch, capsys) -> None:
    """The second `bench list mechanisms` with nothing changed answers from the kept
    listing: no registry is read."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    first = cli_here(monkeypatch, capsys, "list", "mechanisms").stdout
    assert list((tmp_path / "cache" / "listing").glob("*.json"))
    monkeypatch.setattr("bench.cli.listing._import_components", lambda: pytest.fail("imported"))
    assert cli_here(monkeypatch, capsys, "list", "mechanisms").stdout == first


def test_help_everywhere(tmp_path) -> None:
    for cmd in ([], ["run"], ["list"], ["leaderboard"], ["compare"], ["data"]):
        proc = run_cli(*cmd, "--help", cwd=tmp_path)
        assert proc.returncode == 0 and "Usage" in proc.stdout


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["run", "--suite", "no-such-suite"], ["unknown suite 'no-such-suite'", "smoke"]),
        (["run", "--suite", "smok"], ["unknown suite 'smok' (did you mean 'smoke'?)"]),
        (["run", "--suite", "no-such-dir/x.toml"], ["suite file not found: no-such-dir/x.toml"]),
        (["validate", "gauss-inptu"], ["unknown mechanism 'gauss-inptu' (did you mean"]),
        (["list", "gadgets"], ["cannot list 'gadgets'"]),
        (["leaderboard", "--suite", "smoke", "--store", "missing.sqlite"], ["no result store"]),
        (["compare", "missing.json", "missing.json"], ["missing.json"]),
    ],
)
def test_user_mistakes_give_one_line_and_exit_2(
    tmp_path, args, fragments, monkeypatch, capsys
) -> None:
    # In this process: test_malformed_suite_file checks the same path in a fresh one.
    _one_line_error(cli_here(monkeypatch, capsys, *args, cwd=tmp_path), *fragments)


def test_unknown_filter_names_are_refused(tmp_path, tiny_suite, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # nothing may land in the checkout if a check is missed
    store = str(tmp_path / "s.sqlite")
    for flag, value in (("--task", "cifar10"), ("--mechanism", "nope"), ("--attack", "nope")):
        proc = cli_here(
            monkeypatch, capsys, "run", "--suite", str(tiny_suite), flag, value, "--store", store
        )
        _one_line_error(proc, f"no {flag[2:]} '{value}'")
    assert _stored_jobs(tmp_path / "s.sqlite") == 0


@pytest.mark.slow
def test_malformed_suite_file(tmp_path, tiny_suite) -> None:
    tiny_suite.write_text(tiny_suite.read_text() + "\nretries = 3\n")
    proc = run_cli("run", "--suite", str(tiny_suite), cwd=tmp_path)
    _one_line_error(proc, "unknown key 'retries'", str(tiny_suite))


def test_missing_dataset_names_the_files(tmp_path, monkeypatch, capsys) -> None:
    suite = tmp_path / "c.toml"
    suite.write_text(
        'name="c"\nversion="1"\n[[task]]\nname="cifar10"\ndata_root="%s"\n'
        '[[mechanism]]\nname="identity"\n' % (tmp_path / "nowhere")
    )
    proc = cli_here(monkeypatch, capsys, "run", "--suite", str(suite), cwd=tmp_path)
    _one_line_error(proc, "data_batch_1")


@pytest.mark.parametrize(("mechanism", "fragment"), [("test-nan", "NaN"), ("test-short", "rows")])
@pytest.mark.slow
def test_faulty_plugin_mechanism_fails_each_of_its_jobs_and_nothing_is_stored(
    tmp_path, tiny_suite, mechanism, fragment
) -> None:
    """The harness's output checks fail each job of the mechanism alone (one line each, exit
    1; tests/bench/run/test_job_failures.py covers failed jobs among good ones)."""
    text = tiny_suite.read_text().replace('name = "identity"', f'name = "{mechanism}"')
    tiny_suite.write_text(text)
    store = tmp_path / "s.sqlite"
    proc = run_cli(
        "run",
        "--suite",
        str(tiny_suite),
        "--mechanism",
        mechanism,
        "--store",
        str(store),
        "--no-progress",
        cwd=tmp_path,
        extra_path=(PLUGINS,),
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    listed = [line for line in proc.stderr.splitlines() if line.startswith("  ")]
    assert len(listed) == 6  # 2 seeds x (utility + 2 attacks)
    for line in listed:
        assert f"MechanismOutputError: mechanism {mechanism}" in line and fragment in line
    assert "bench: error: 6 jobs failed, leaderboard not written" in proc.stderr
    assert _stored_jobs(store) == 0
    assert not (tmp_path / "leaderboards").exists()


@pytest.mark.slow
def test_plugins_are_listed_through_entry_points(tmp_path) -> None:
    proc = run_cli("list", "mechanisms", cwd=tmp_path, extra_path=(PLUGINS,), check=True)
    assert "test-nan" in proc.stdout and "test-short" in proc.stdout
    assert "test-nan" not in run_cli("list", "mechanisms", cwd=tmp_path, check=True).stdout


def _board(path: Path, accuracy: float, mse: float) -> Path:
    metrics = lambda value: {"value": value, "ci": [value * 0.99, value * 1.01], "n": 100}  # noqa: E731
    rows = [
        {
            "task": "fmnist",
            "mechanism": "gauss-input",
            "params": {"eps": 1.0},
            "guarantee": {"notion": "ip"},
            "attack": None,
            "attack_params": {},
            "seeds": 2,
            "metrics": {"accuracy": metrics(accuracy)},
        },
        {
            "task": "fmnist",
            "mechanism": "gauss-input",
            "params": {"eps": 1.0},
            "guarantee": {"notion": "ip"},
            "attack": "inverter",
            "attack_params": {},
            "seeds": 2,
            "metrics": {"mse": metrics(mse)},
        },
    ]
    path.write_text(
        json.dumps(
            {
                "suite": "t",
                "suite_version": "1",
                "generated_at": "x",
                "code_version": "0.1.0+abc123",
                "rows": rows,
            }
        )
    )
    return path


def test_compare_exit_codes(tmp_path, monkeypatch, capsys) -> None:
    base = _board(tmp_path / "base.json", 0.80, 0.050)
    same = _board(tmp_path / "same.json", 0.80, 0.050)
    worse_utility = _board(tmp_path / "worse_acc.json", 0.60, 0.050)
    stronger_attack = _board(tmp_path / "stronger.json", 0.80, 0.020)

    def compare(*args: Path | str):
        return cli_here(monkeypatch, capsys, "compare", *map(str, args))

    # The first in a fresh interpreter, as a CI step would call it.
    assert run_cli("compare", str(base), str(same), cwd=tmp_path).returncode == 0
    assert compare(base, worse_utility).returncode == 1
    assert compare(base, stronger_attack).returncode == 1
    # A loose enough tolerance accepts the utility drop.
    loose = compare(base, worse_utility, "--tolerance", "accuracy=0.5")
    assert loose.returncode == 0, loose.stdout
    _one_line_error(compare(base, same, "--tolerance", "mse=abc"), "mse=abc")


def test_list_suites_is_a_table_of_kind_jobs_time_and_needs(monkeypatch, capsys) -> None:
    out = cli_here(monkeypatch, capsys, "list", "suites", cwd=ROOT).stdout
    lines = out.splitlines()
    assert re.match(r"suite +kind +jobs +time \(2 cores\) +needs$", lines[0])
    assert re.search(r"^smoke +paper +36 +~\d+ s +-$", out, re.MULTILINE)
    assert re.search(r"^ip-cifar10 +paper +- +- +full cifar10 data$", out, re.MULTILINE)
    assert lines[-1] == f"boards: {ROOT / 'leaderboards'} (the checkout)"
    assert max(len(line) for line in lines) <= 100
    from bench.suite.read import load_suite

    long = cli_here(monkeypatch, capsys, "list", "suites", "--long", cwd=ROOT).stdout
    default = load_suite("default").description
    assert " ".join(default.split())[-60:] in " ".join(long.split())  # never cut


def test_list_tracks_and_studies_by_kind(tmp_path, monkeypatch, capsys) -> None:
    """A suite file's `kind` decides where it is listed; the suites of a checkout's
    studies/ are studies unless they say otherwise; no studies/ is no study."""
    from bench.suite import read

    files = tmp_path / "files"
    files.mkdir()
    shutil.copy(read.suite_dir() / "smoke.toml", files / "smoke.toml")
    track = (files / "smoke.toml").read_text().replace('name = "smoke"', 'name = "track-x"', 1)
    (files / "track-x.toml").write_text('kind = "track"\n' + track)
    studies = tmp_path / "studies"
    (studies / "probe").mkdir(parents=True)
    study = track.replace('name = "track-x"', 'name = "study-y"', 1)
    (studies / "probe" / "suite.toml").write_text(study)
    (studies / "notes.toml").write_text('title = "not a suite"\n')
    monkeypatch.setattr(read, "suite_dir", lambda: files)
    monkeypatch.setattr("bench.core.places.studies_dir", lambda: studies)
    tracks = cli_here(monkeypatch, capsys, "list", "tracks").stdout
    assert re.search(r"^track-x +track +- ", tracks, re.MULTILINE) and "smoke" not in tracks
    assert re.search(r"^study-y +study ", cli_here(monkeypatch, capsys, "list", "studies").stdout,
                     re.MULTILINE)  # fmt: skip
    every = [line.split()[0] for line in cli_here(monkeypatch, capsys, "list", "suites").stdout
             .splitlines()[1:-2]]  # fmt: skip
    assert every == ["track-x", "smoke", "study-y"]  # tracks, papers, studies
    assert read.suite_file("study-y") == studies / "probe" / "suite.toml"
    monkeypatch.setattr("bench.core.places.studies_dir", lambda: None)
    none = cli_here(monkeypatch, capsys, "list", "studies").stdout
    assert none.startswith("no suites of kind study here")


def test_a_suite_kind_is_one_of_three(tiny_suite) -> None:
    from bench.core.errors import SuiteFileError
    from bench.suite.read import load_suite

    assert load_suite(str(tiny_suite)).kind == "paper"
    tiny_suite.write_text('kind = "track"\n' + tiny_suite.read_text())
    assert load_suite(str(tiny_suite)).kind == "track"
    tiny_suite.write_text(tiny_suite.read_text().replace('"track"', '"tracks"', 1))
    with pytest.raises(SuiteFileError, match="got 'tracks' \\(did you mean 'track'\\?\\)"):
        load_suite(str(tiny_suite))


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["list", "suite"], "cannot list 'suite' (did you mean 'suites'?)"),
        (["list", "trakcs"], "(did you mean 'tracks'?)"),
        (["reproduce", "postoc"], "paper 'postoc' (did you mean 'posthoc'?)"),
        (["status", "--suite", "smokee"], "unknown suite 'smokee' (did you mean 'smoke'?)"),
        (["leaderboard", "--suite", "smoek"], "unknown suite 'smoek' (did you mean 'smoke'?)"),
        (["run", "--suite", "smoke", "--mechanism", "gauss-inptu", "--dry-run"],
         "suite smoke has no mechanism 'gauss-inptu' (did you mean 'gauss-input'?)"),
        (["run", "--suite", "smoke", "--attack", "inverterr", "--dry-run"],
         "has no attack 'inverterr' (did you mean 'inverter'?)"),
        (["validate", "gauss-inptu"], "unknown mechanism 'gauss-inptu' (did you mean"),
        (["validate", "gauss-input", "--task", "fmnsit"], "unknown task 'fmnsit' (did you mean"),
        (["compare", "a.json", "b.json", "--tolerance", "sim=0.1"],
         "unknown metric 'sim' (did you mean 'ssim'?)"),
        (["attack-report", "--suite", "atacks"], "(did you mean 'attacks'?)"),
    ],
)  # fmt: skip
def test_every_typed_name_gets_did_you_mean(tmp_path, args, fragment, monkeypatch, capsys) -> None:
    _one_line_error(cli_here(monkeypatch, capsys, *args, cwd=tmp_path), fragment)


def test_leaderboard_without_store_uses_the_suites_last_run_here(
    tmp_path, monkeypatch, capsys
) -> None:
    from bench.report.tools.status_cache import remember_store
    from bench.store.results import ResultStore

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    ResultStore(tmp_path / "runs" / "S").close()  # a store that holds no job yet
    remember_store("smoke", tmp_path / "runs" / "S")
    proc = cli_here(monkeypatch, capsys, "leaderboard", "--suite", "smoke")
    store = (tmp_path / "runs" / "S").resolve()
    assert proc.stdout == f"store: {store} (the last `bench run --suite smoke` here)\n"
    _one_line_error(proc, f"36 of 36 jobs of suite smoke are not in {store}")
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    proc = cli_here(monkeypatch, capsys, "leaderboard", "--suite", "smoke", cwd=elsewhere)
    _one_line_error(proc, "no result store at .bench/results.sqlite")  # the default there


def test_a_refused_or_dry_run_records_no_store(tmp_path, monkeypatch, capsys) -> None:
    from bench.report.tools.status_cache import last_store

    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    (tmp_path / "S").write_text("not a store")
    cli_here(monkeypatch, capsys, "run", "--suite", "smoke", "--store", "S", cwd=tmp_path)
    cli_here(monkeypatch, capsys, "run", "--suite", "smoke", "--dry-run", cwd=tmp_path)
    assert last_store("smoke") is None
