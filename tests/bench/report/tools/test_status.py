"""`bench status`: a committed board is current only while its suite's version and its jobs'
code version are what they are now; otherwise it is named stale, with the reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from bench.report.tools.status import CURRENT, NO_BOARD, STALE, board_status, status_lines
from bench.run.publish import code_version_of, expand_suite
from tests.conftest import ROOT, cli_here

SMOKE_BOARD = ROOT / "leaderboards" / "smoke"


def _board(tmp_path: Path, **stamp: str) -> Path:
    """A copy of the committed smoke board with its stamp (suite_version, code_version) set."""
    board_dir = tmp_path / "smoke"
    board_dir.mkdir(parents=True)
    doc = json.loads((SMOKE_BOARD / "leaderboard.json").read_text())
    doc.update(stamp)
    (board_dir / "leaderboard.json").write_text(json.dumps(doc))
    return board_dir


def test_states_and_reasons(tmp_path: Path) -> None:
    board_dir = _board(tmp_path, suite_version="2", code_version="0.1.0+aaaa")
    assert board_status("smoke", "2", "0.1.0+aaaa", board_dir).state == CURRENT
    stale = board_status("smoke", "3", "0.1.0+bbbb", board_dir)
    assert stale.state == STALE
    assert stale.reasons == ("suite version 2 -> 3", "code 0.1.0+aaaa -> 0.1.0+bbbb")
    assert board_status("smoke", "3", "x", tmp_path / "none").state == NO_BOARD
    lines = status_lines([stale, board_status("other", "1", "x", tmp_path / "none")])
    assert lines[0].startswith("smoke  stale: suite version 2 -> 3")
    assert lines[-1] == "1 stale, 1 no board"


def test_cli_check_fails_on_a_stale_board_only(tmp_path: Path, monkeypatch, capsys) -> None:
    suite, jobs = expand_suite("smoke", check_device=False)
    boards = tmp_path / "boards"
    _board(boards, suite_version=suite.version, code_version=code_version_of(jobs))
    args = ("status", "--suite", "smoke", "--boards", str(boards), "--check")
    proc = cli_here(monkeypatch, capsys, *args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"boards: {boards} (--root)\nsmoke  current  (board of ")

    shutil.rmtree(boards)
    _board(boards, suite_version=suite.version, code_version="0.1.0+0000000000")
    proc = cli_here(monkeypatch, capsys, *args)
    assert proc.returncode == 1
    assert "smoke  stale: code 0.1.0+0000000000 -> " + code_version_of(jobs) in proc.stdout


def test_bad_input_is_one_line(tmp_path: Path, monkeypatch, capsys) -> None:
    proc = cli_here(monkeypatch, capsys, "status", "--suite", "no-such")
    assert proc.returncode == 2 and "unknown suite 'no-such'" in proc.stderr
    (tmp_path / "smoke").mkdir()
    (tmp_path / "smoke" / "leaderboard.json").write_text("{}")
    proc = cli_here(monkeypatch, capsys, "status", "--suite", "smoke", "--boards", str(tmp_path))
    assert proc.returncode == 2 and "missing top-level keys" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_second_status_reuses_the_check_until_the_suite_file_changes(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """The second `bench status` with every input unchanged lists no job; an edited suite
    file is checked again, and its new version is what the board is compared with."""
    monkeypatch.setenv("BENCH_CACHE", str(tmp_path / "cache"))
    suite_path = tmp_path / "smoke.toml"
    shutil.copy(ROOT / "bench" / "suite" / "files" / "smoke.toml", suite_path)
    suite, jobs = expand_suite("smoke", check_device=False)
    boards = tmp_path / "boards"
    _board(boards, suite_version=suite.version, code_version=code_version_of(jobs))
    args = ("status", "--suite", str(suite_path), "--boards", str(boards))
    first = cli_here(monkeypatch, capsys, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[1].startswith("smoke  current  (board of ")

    listed: list[str] = []
    expanded = lambda *a, **k: listed.append("expanded") or jobs  # noqa: E731
    monkeypatch.setattr("bench.run.publish.expand", expanded)
    again = cli_here(monkeypatch, capsys, *args)
    assert (again.returncode, again.stdout, listed) == (0, first.stdout, [])

    text = suite_path.read_text()
    suite_path.write_text(text.replace(f'version = "{suite.version}"', 'version = "99"', 1))
    edited = cli_here(monkeypatch, capsys, *args)
    assert listed == ["expanded"]
    assert f"smoke  stale: suite version {suite.version} -> 99" in edited.stdout
