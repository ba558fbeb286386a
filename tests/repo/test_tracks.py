"""The standard tracks, as suite files: each fixes one task, one battery that every
mechanism setting meets, one scoring rule and at least three seeds, and holds every in-tree
mechanism of its modality at three or more privacy levels; the image tracks share one grid.
The main job (`default`) is a slice of the tracks: every one of its jobs is a track job."""

from __future__ import annotations

import pytest

from bench.plugin.registry import MECHANISMS
from bench.suite.read import available_suites, load_suite

# The parameters that state a setting's privacy level (a sweep over them is the trade-off).
LEVEL_PARAMS = frozenset({"eps", "r", "R", "inv_dfil"})
IMAGE_TRACKS = ("track-fmnist", "track-mnist", "track-faces", "track-cifar10")
MIN_LEVELS = 3


def tracks() -> list[str]:
    return [name for name in available_suites() if load_suite(name).kind == "track"]


def test_the_standard_tracks_exist() -> None:
    expected = {*IMAGE_TRACKS, "track-movielens", "track-text", "track-tabular"}
    assert expected <= set(tracks())


@pytest.mark.parametrize("name", tracks())
def test_a_track_fixes_one_task_one_battery_and_three_seeds(name: str) -> None:
    suite = load_suite(name)
    assert suite.seeds >= 3
    assert suite.description
    for attack in suite.attacks:  # one battery: every attack meets every setting it applies to
        assert attack.mechanisms is None and attack.tasks is None, attack.name
    for mechanism in suite.mechanisms:
        assert mechanism.tasks is None, mechanism.name


@pytest.mark.parametrize("name", tracks())
def test_every_mechanism_variant_sits_at_three_or_more_levels(name: str) -> None:
    levels: dict[tuple[str, str], set[tuple]] = {}
    for entry in load_suite(name).mechanisms:
        for params in entry.param_sets():
            variant = tuple(sorted((k, str(v)) for k, v in params.items() if k not in LEVEL_PARAMS))
            level = tuple(sorted((k, v) for k, v in params.items() if k in LEVEL_PARAMS))
            levels.setdefault((entry.name, str(variant)), set()).add(level)
    unprotected = {n for n in MECHANISMS.names() if not _claims(n)}
    for (mechanism, variant), found in levels.items():
        if mechanism in unprotected:
            continue  # the reference (identity, label-only) has no level
        assert len(found) >= MIN_LEVELS, f"{name}: {mechanism} {variant} at {sorted(found)}"


def _notion(mechanism: str) -> str:
    """The notion a registered mechanism claims at its default parameters."""
    return MECHANISMS.get(mechanism)().guarantee().notion


def _claims(mechanism: str) -> bool:
    """Whether a registered mechanism claims any privacy at its default parameters."""
    from bench.plugin.notions import notion_spec

    return notion_spec(_notion(mechanism)).claims_privacy


def test_the_image_tracks_share_one_battery_and_one_set_of_mechanisms() -> None:
    batteries = {
        name: sorted((a.name, str(sorted(a.params.items()))) for a in load_suite(name).attacks)
        for name in IMAGE_TRACKS
    }
    assert len({str(b) for b in batteries.values()}) == 1, batteries
    mechanisms = {name: {m.name for m in load_suite(name).mechanisms} for name in IMAGE_TRACKS}
    assert len({frozenset(m) for m in mechanisms.values()}) == 1, mechanisms
    # Families of guarantees: local DP (on pixels, on an embedding, of a clipped encoder),
    # inference privacy, the dFIL bound and reconstruction privacy under PTR.
    families = {_notion(m) for m in mechanisms["track-fmnist"] if _claims(m)}
    assert len(mechanisms["track-fmnist"]) >= 7 and len(families) >= 4, families
    image = {n for n in MECHANISMS.names() if "image" in MECHANISMS.get(n).modalities}
    assert image - mechanisms["track-fmnist"] == set()  # every in-tree image mechanism


@pytest.mark.slow
def test_the_main_job_is_a_slice_of_the_tracks() -> None:
    """Every job of `default` is a job of a track (same task, parameters, battery and
    scoring, so the same hash): its numbers are the tracks' numbers."""
    from bench.run.publish import expand_suite

    _, default = expand_suite("default")
    on_tracks: set[str] = set()
    for name in ("track-mnist", "track-tabular"):
        on_tracks |= {j.hash for j in expand_suite(name)[1]}
    assert [j.label() for j in default if j.hash not in on_tracks] == []
