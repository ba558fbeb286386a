"""Where `bench evaluate` reads the committed track boards: `--boards` when given, else where
`bench status` reads them (the checkout's leaderboards/, else the copy installed with the
package), so a pip install ranks against the boards it ships; a directory without the
track's board is refused in one line that says so, before any job runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import api
from bench.core import places
from bench.core.errors import ConfigError
from bench.run.evaluate import current_track


def test_a_directory_without_the_tracks_board_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no committed track-movielens board under") as e:
        current_track("track-movielens", tmp_path)
    assert "\n" not in str(e.value) and str(tmp_path) in str(e.value)


def test_without_boards_it_reads_where_status_reads(tmp_path: Path, monkeypatch) -> None:
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(places, "boards_root", lambda override=None: places.BoardsRoot(
        Path(override) if override else shipped, places.INSTALLED))  # fmt: skip
    store = tmp_path / "mine.sqlite"
    with pytest.raises(ConfigError, match=f"board under {shipped}"):
        api.evaluate("identity", "track-movielens", store_path=store)
    with pytest.raises(ConfigError, match=f"board under {tmp_path / 'given'}"):
        api.evaluate("identity", "track-movielens", store_path=store, boards=tmp_path / "given")
    assert not store.exists()  # refused before the store is opened
