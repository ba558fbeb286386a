"""`bench evaluate` ranks a submission only among committed rows on the track's own seeds: a
track board published after its first seeds (while the rest run) is refused in one line."""

from __future__ import annotations

import pytest

from bench.core.errors import ConfigError
from bench.run.evaluate import check_board_seeds
from bench.suite.read import load_suite


def test_a_board_on_the_tracks_seeds_is_accepted() -> None:
    suite = load_suite("track-movielens")
    check_board_seeds(suite, [{"seeds": suite.seeds}, {"seeds": suite.seeds}])


@pytest.mark.parametrize("seeds", [[1], [1, 3], []])
def test_a_board_on_other_seeds_is_refused_in_one_line(seeds: list[int]) -> None:
    suite = load_suite("track-movielens")
    with pytest.raises(ConfigError, match=r"rests on .* seed\(s\) per row, the track on 3") as e:
        check_board_seeds(suite, [{"seeds": n} for n in seeds])
    assert "\n" not in str(e.value)
