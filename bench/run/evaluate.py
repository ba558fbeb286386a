"""A submitter's path onto a standard track: one mechanism's settings run on the track's task,
under its battery, seeds and scoring rule, and ranked among the committed track rows.

The committed board is reused only while it is current for today's code (the check `bench
status` makes: the suite's version and its jobs' code version), so the new rows and the
committed ones come from the same code; otherwise the evaluation is refused in one line with
the reason. The mechanism's settings are read exactly as a suite's `[[mechanism]]` entry
would be (its name, fixed `params` and a `grid` of sweeps) and checked the same way, so a
setting a suite would refuse is refused here too.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import ConfigError
from bench.report.board.load import load_leaderboard
from bench.report.tools.status import CURRENT, NO_BOARD, board_status
from bench.run.job import Job
from bench.run.plan import expand
from bench.run.publish import code_version_of, leaderboard_rows, task_utility_metrics
from bench.store.results import ResultStore
from bench.suite.read import Suite, SuiteSource, load_suite, parse_suite, read_suite


@dataclass(frozen=True)
class TrackEntry:
    """A track, its jobs now, and the rows of its committed board (current for these jobs)."""

    suite: Suite
    jobs: list[Job]
    board: Path
    rows: list[dict[str, Any]]


def is_track(suite: Suite) -> bool:
    """Whether a suite is a standard track (`kind = "track"` in its file)."""
    return suite.kind == "track"


def current_track(track: str, boards: Path) -> TrackEntry:
    """The track `track` with its committed board under `boards`, refused in one line when it
    is not a track or its board is missing or stale (a re-run of the track would give other
    numbers than the board shows, so new rows could not be ranked among them)."""
    source = read_suite(track)
    suite = load_suite(source)
    if not is_track(suite):
        raise ConfigError(f"suite {suite.name} is not a track; `bench list tracks` lists them")
    jobs = expand(suite)
    board = boards / suite.name
    status = board_status(suite.name, suite.version, code_version_of(jobs), board)
    if status.state == NO_BOARD:
        raise ConfigError(
            f"no committed {suite.name} board under {boards}: pass --boards with the directory "
            f"of the committed boards, or run `bench run --suite {suite.name}` and publish it"
        )
    if status.state != CURRENT:
        raise ConfigError(
            f"the committed {suite.name} board is {status.state} ({'; '.join(status.reasons)}):"
            f" its rows cannot be ranked beside today's code; run `bench run --suite "
            f"{suite.name}` and publish it, or pass --boards with a current board"
        )
    rows = load_leaderboard(board / "leaderboard.json")["rows"]
    check_board_seeds(suite, rows)
    return TrackEntry(suite, jobs, board, rows)


def check_board_seeds(suite: Suite, rows: list[dict[str, Any]]) -> None:
    """A committed track board whose rows rest on fewer seeds than the track runs (a board of
    its first seeds, published while the rest run) is refused in one line: a submission runs
    at the track's seeds, and means over other seeds are not ranked against each other."""
    found = sorted({int(r["seeds"]) for r in rows if "seeds" in r})
    if found != [suite.seeds]:
        shown = ", ".join(map(str, found)) or "no"
        raise ConfigError(
            f"the committed {suite.name} board rests on {shown} seed(s) per row, the track "
            f"on {suite.seeds}: its rows cannot be ranked beside a submission's; run "
            f"`bench run --suite {suite.name}` to its {suite.seeds} seeds and publish it"
        )


def submission_suite(
    source: SuiteSource, mechanism: str, params: dict[str, Any], grid: dict[str, list[Any]]
) -> Suite:
    """The track with its mechanisms replaced by the submitted one (its `params` and `grid`):
    the same task, battery, seeds and attack samples, checked as a suite file would be."""
    raw = copy.deepcopy(source.raw)
    entry: dict[str, Any] = {"name": mechanism}
    if params:
        entry["params"] = params
    if grid:
        entry["grid"] = grid
    raw["mechanism"] = [entry]
    return parse_suite(raw, f"{source.path.name} with {mechanism}")


def submission_jobs(track: TrackEntry, suite: Suite) -> list[Job]:
    """The submitted mechanism's jobs on the track; none is a one-line error (the mechanism
    applies to none of the track's tasks)."""
    jobs = expand(suite)
    if not jobs:
        tasks = ", ".join(t.name for t in track.suite.tasks)
        raise ConfigError(
            f"mechanism {suite.mechanisms[0].name} applies to none of track "
            f"{track.suite.name}'s tasks ({tasks}): its modalities do not include theirs"
        )
    return jobs


def ranked_board(
    track: TrackEntry, suite: Suite, jobs: list[Job], store: ResultStore, out_dir: Path
) -> list[Path]:
    """The track's board with the submitted rows beside the committed ones, written to
    `out_dir` (flags, worst cases, bands and the plot computed over all of them)."""
    from bench.report.board.write import write_leaderboard

    hashes = list(dict.fromkeys(j.hash for j in jobs))
    results = store.load(hashes)
    new_rows = leaderboard_rows(suite, jobs, results, store.machines(hashes))
    generated_at = max(r["created_at"] for r in results)
    return write_leaderboard(
        track.suite.name,
        track.suite.version,
        [*track.rows, *new_rows],
        out_dir,
        code_version=code_version_of([*track.jobs, *jobs]),
        generated_at=generated_at,
        utility_metrics=task_utility_metrics(track.suite),
        kind=track.suite.kind,  # a track's page: bands, ranks and the audit column
    )


def standing_lines(board_json: Path, track: Suite, jobs: list[Job]) -> list[str]:
    """Each submitted setting's place on the track's board: its rank by utility in the
    strictest privacy band it reaches, among every ranked setting there, or why it is not
    ranked (bench.report.board.ranking.standing), one line per setting and task."""
    import json

    from bench.report.board.overview import task_overview
    from bench.report.board.ranking import attack_bands, standing

    rows = json.loads(board_json.read_text())["rows"]
    submitted = {job.mechanism for job in jobs}
    utility = task_utility_metrics(track)
    out = []
    for task in dict.fromkeys(row["task"] for row in rows):
        view = task_overview([r for r in rows if r["task"] == task], utility.get(task))
        bands = (
            attack_bands(view["score"], view["prior"], view["score_words"])
            if view["has_attacks"]
            else []
        )
        for line in view["lines"]:
            if line["mechanism"] in submitted:
                name = (
                    f"{line['mechanism']}({line['setting']})"
                    if line["setting"]
                    else line["mechanism"]
                )
                where = standing(line, bands, view["lines"], view["floor"])
                out.append(f"  {name} on {task}: {where}")
    return out
