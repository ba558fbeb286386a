"""The committed track boards hold what a track promises: every setting of the suite with a
row for every attack of the battery that applies to it (no more, no fewer: the jobs the suite
expands to), every row on the same seeds, and for an image track at least seven mechanisms
from at least four families of guarantee, each variant at three or more privacy levels. A
setting a track shares with the main job names the same strongest attack on both boards when
both rest on the same seeds (the same jobs give the same numbers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.core.hashing import canonical_json
from bench.report.board.labels import WORST_CASE
from tests.conftest import ROOT
from tests.repo.test_tracks import IMAGE_TRACKS, LEVEL_PARAMS, MIN_LEVELS, _claims, _notion

BOARDS = ROOT / "leaderboards"
COMMITTED = sorted(p.parent.name for p in BOARDS.glob("track-*/leaderboard.json"))


def _rows(name: str) -> list[dict[str, Any]]:
    return json.loads((BOARDS / name / "leaderboard.json").read_text())["rows"]


def _setting(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["task"], row["mechanism"], canonical_json(row["params"])


@pytest.mark.slow
@pytest.mark.parametrize("name", COMMITTED)
def test_a_track_board_has_every_battery_row_of_every_setting(name: str) -> None:
    from bench.run.publish import expand_suite

    rows = _rows(name)
    seeds = {r["seeds"] for r in rows}
    assert len(seeds) == 1, f"{name}: rows on {sorted(seeds)} seeds"
    _, jobs = expand_suite(name, seeds=seeds.pop())
    expected = {
        (j.task, j.mechanism, canonical_json(j.params), j.attack, canonical_json(j.attack_params))
        for j in jobs
    }
    found = {
        (*_setting(r), r["attack"], canonical_json(r.get("attack_params") or {}))
        for r in rows
        if r["attack"] != WORST_CASE
    }
    assert sorted(expected - found, key=str) == [], f"{name}: rows missing"
    assert sorted(found - expected, key=str) == [], f"{name}: rows of no job of the suite"
    attacked = {_setting(r) for r in rows if r["attack"] not in (None, WORST_CASE)}
    worst = {_setting(r) for r in rows if r["attack"] == WORST_CASE}
    assert attacked == worst, f"{name}: a setting without its worst case"


@pytest.mark.parametrize("name", [n for n in COMMITTED if n in IMAGE_TRACKS])
def test_an_image_track_board_ranks_seven_mechanisms_of_four_families(name: str) -> None:
    rows = [r for r in _rows(name) if r["attack"] is None]
    mechanisms = {r["mechanism"] for r in rows}
    families = {_notion(m) for m in mechanisms if _claims(m)}
    assert len(mechanisms) >= 7 and len(families) >= 4, (mechanisms, families)
    levels: dict[tuple[str, str], set[str]] = {}
    for row in rows:
        params = row["params"]
        variant = canonical_json({k: v for k, v in params.items() if k not in LEVEL_PARAMS})
        level = canonical_json({k: v for k, v in params.items() if k in LEVEL_PARAMS})
        levels.setdefault((row["mechanism"], variant), set()).add(level)
    for (mechanism, variant), found in levels.items():
        if _claims(mechanism):
            assert len(found) >= MIN_LEVELS, f"{name}: {mechanism} {variant} at {found}"


def _strongest(rows: list[dict[str, Any]]) -> dict[tuple[str, str, str], dict[str, str]]:
    return {_setting(r): r.get("sources", {}) for r in rows if r["attack"] == WORST_CASE}


@pytest.mark.parametrize("name", COMMITTED)
def test_a_setting_shared_with_the_main_job_names_the_same_strongest_attack(name: str) -> None:
    default = _rows("default")
    track = _rows(name)
    if {r["seeds"] for r in default} != {r["seeds"] for r in track}:
        pytest.skip(f"{name} and default rest on different seeds: their means differ")
    on_default, on_track = _strongest(default), _strongest(track)
    shared = set(on_default) & set(on_track)
    assert {s: on_default[s] for s in shared} == {s: on_track[s] for s in shared}


def test_the_committed_track_boards_are_tracks() -> None:
    for name in COMMITTED:
        doc = json.loads(Path(BOARDS / name / "leaderboard.json").read_text())
        assert doc.get("kind") == "track", name
