"""`bench evaluate`: a plug-in mechanism installed by entry point only (docs/submitting.md's
example package, built from the page, run with the page's own `bench evaluate` command on a
tiny track) is ranked on a track beside the track's committed rows, which are reused and
never re-run; a stale committed board is refused in one line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.conftest import ROOT, run_cli
from tests.docs import doc_script

PLUGINS = ROOT / "tests" / "plugins"
TRACK = """
name = "track-tiny"
version = "1"
kind = "track"
description = "A tiny track: the identity and one input-noise level, two attacks."
seeds = 1
attack_samples = 16

[[task]]
name = "fmnist"
n_train = 300
n_aux = 200
n_test = 100
train_epochs = 1

[[mechanism]]
name = "identity"

[[mechanism]]
name = "gauss-input"
params = { eps = 1.0, r = 0.5 }

[[attack]]
name = "optimization"
params = { max_steps = 30 }

[[attack]]
name = "map"
params = { max_steps = 30 }
"""


def _track(tmp_path: Path) -> tuple[Path, Path]:
    """The tiny track's suite file and a committed board of it (run here, at this code)."""
    suite = tmp_path / "track-tiny.toml"
    suite.write_text(TRACK)
    boards = tmp_path / "boards"
    args = ("run", "--suite", str(suite), "--store", "track.sqlite", "--no-progress")
    run_cli(*args, "--out", str(boards / "track-tiny"), cwd=tmp_path, check=True)
    return suite, boards


def _page_command() -> list[str]:
    """The arguments of docs/submitting.md's `bench evaluate` command (after `bench`)."""
    page = (ROOT / "docs" / "submitting.md").read_text()
    lines = [line for line in page.splitlines() if line.startswith("bench evaluate pooled-gauss")]
    assert len(lines) == 1, lines
    return shlex.split(lines[0])[1:]


def test_the_pages_plugin_is_ranked_among_the_committed_track_rows(tmp_path: Path) -> None:
    suite, boards = _track(tmp_path)
    committed = json.loads((boards / "track-tiny" / "leaderboard.json").read_text())["rows"]
    package = doc_script("submitting_outputs").build_package(
        (ROOT / "docs" / "submitting.md").read_text(), tmp_path
    )
    command = _page_command()
    command[command.index("--track") + 1] = str(suite)  # the tiny track in the page's place
    grid = command[command.index("--grid") + 1]
    done = run_cli(
        *command, "--boards", str(boards), "--store", "mine.sqlite", "--out", "mine",
        "--no-progress", cwd=tmp_path, extra_path=(package,), check=True,
    )  # fmt: skip
    # Only the plug-in's jobs ran: each setting x (utility + 2 attacks) at 1 seed; the
    # committed rows came from the board.
    eps = sorted(float(v) for v in grid.removeprefix("eps=").split(","))
    jobs = 3 * len(eps)
    assert f"{jobs} jobs run, 0 already stored, {jobs} selected" in done.stdout
    assert f"{len(committed)} committed rows reused" in done.stdout
    board = json.loads((tmp_path / "mine" / "leaderboard.json").read_text())
    assert board["kind"] == "track"  # rendered as the track's page, with ranks
    rows = board["rows"]
    mine = [r for r in rows if r["mechanism"] == "pooled-gauss"]
    assert sorted({r["params"]["eps"] for r in mine}) == eps
    assert {r["attack"] for r in mine} >= {None, "optimization", "map"}
    theirs = [r for r in rows if r["mechanism"] != "pooled-gauss"]
    assert [r["metrics"] for r in theirs] == [r["metrics"] for r in committed]
    assert (
        '<span class="kind-badge kind-track">Track</span>'
        in (tmp_path / "mine" / "index.html").read_text()
    )
    assert "ranked among the track" in done.stdout
    # Where each submitted setting ranks (or why it is not), one line each.
    standings = [line for line in done.stdout.splitlines() if " on fmnist: " in line]
    assert len(standings) == len(eps), done.stdout
    assert all(("rank " in line and " of " in line) or "not ranked: " in line for line in standings)


def test_a_stale_committed_track_board_is_refused(tmp_path: Path) -> None:
    suite, boards = _track(tmp_path)
    board = boards / "track-tiny" / "leaderboard.json"
    doc = json.loads(board.read_text())
    doc["code_version"] = "0.1.0+0000000000"  # as if made by other code
    board.write_text(json.dumps(doc))
    args = ("evaluate", "test-half-noise", "--track", str(suite), "--boards", str(boards))
    done = run_cli(*args, "--store", "mine.sqlite", cwd=tmp_path, extra_path=(PLUGINS,))
    assert done.returncode == 2
    err = done.stderr.strip()
    assert err.count("\n") == 0 and "board is stale" in err and "bench run --suite" in err
    assert not (tmp_path / "mine.sqlite").exists()
