"""Every board bench reads is checked before use: `bench leaderboard --refresh` and `bench
compare` given a truncated, binary, row-less, task-less, deeply nested, oversized board, or a
FIFO, a directory or a character device where the board should be, refuse it in one line
with a non-zero exit, and write nothing."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import ROOT, cli_here

GOOD = ROOT / "leaderboards" / "smoke" / "leaderboard.json"


def _truncated(path: Path) -> None:
    text = GOOD.read_text()
    path.write_text(text[: len(text) // 2])


def _binary(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 8)


def _rowless(path: Path) -> None:
    path.write_text(json.dumps({**json.loads(GOOD.read_text()), "rows": []}))


def _taskless(path: Path) -> None:
    doc = json.loads(GOOD.read_text())
    for row in doc["rows"]:
        row.pop("task")
    path.write_text(json.dumps(doc))


def _nested(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def _nested_in_a_row(path: Path) -> None:
    """Deep enough to exhaust a recursive encoder, shallow enough for the JSON parser."""
    doc = json.loads(GOOD.read_text())
    deep: dict = {}
    for _ in range(900):
        deep = {"a": deep}
    doc["rows"][0]["params"] = deep
    path.write_text(json.dumps(doc))


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _directory(path: Path) -> None:
    path.mkdir()


def _device(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _oversized(path: Path) -> None:
    path.write_text(GOOD.read_text() + " " * (1024 * 1024))


DAMAGE: dict[str, Callable[[Path], None]] = {
    "truncated": _truncated,
    "binary": _binary,
    "task-less": _taskless,
    "nested": _nested,
    "nested-in-a-row": _nested_in_a_row,
    "fifo": _fifo,
    "directory": _directory,
    "character-device": _device,
    "oversized": _oversized,
}


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Boards over 1 MiB count as oversized here (the real limit is 64 MiB)."""
    monkeypatch.setattr("bench.report.board.load.MAX_BOARD_BYTES", 1024 * 1024)


def _one_line(done, fragment: str = "leaderboard") -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("bench: error: "), done.stderr
    assert fragment in lines[0]
    assert "Traceback" not in done.stderr + done.stdout
    return lines[0]


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize("kind", [*DAMAGE, "row-less"])
def test_a_refresh_of_a_bad_board_is_one_line(tmp_path, monkeypatch, capsys, kind) -> None:
    board = tmp_path / "lb" / "damaged"
    board.mkdir(parents=True)
    {**DAMAGE, "row-less": _rowless}[kind](board / "leaderboard.json")
    before = sorted(p.name for p in board.iterdir())
    args = ("leaderboard", "--refresh", "--suite", "damaged", "--root", str(tmp_path / "lb"))
    _one_line(cli_here(monkeypatch, capsys, *args, cwd=tmp_path))
    assert sorted(p.name for p in board.iterdir()) == before  # nothing written


@pytest.mark.usefixtures("small_limit")
@pytest.mark.parametrize("kind", DAMAGE)
def test_compare_with_a_bad_board_is_one_line(tmp_path, monkeypatch, capsys, kind) -> None:
    bad = tmp_path / "bad.json"
    DAMAGE[kind](bad)
    good = tmp_path / "good.json"
    shutil.copy(GOOD, good)
    for pair in ((bad, good), (good, bad)):
        done = cli_here(monkeypatch, capsys, "compare", *map(str, pair), cwd=tmp_path)
        assert str(bad) in _one_line(done)


def test_compare_reads_a_character_device_only_up_to_the_limit(tmp_path, monkeypatch, capsys):
    done = cli_here(monkeypatch, capsys, "compare", "/dev/zero", str(GOOD), cwd=tmp_path)
    assert "not a regular file" in _one_line(done)
