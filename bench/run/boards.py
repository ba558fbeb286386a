"""Where a run writes its board: a shipped suite's (read from bench/suite/files/) into the
committed leaderboards/NAME, any other suite file's into .bench/leaderboards/NAME, so that a
suite of one's own never writes over a committed board, whatever its name; `--out` names
any other place. Torch-free: the warm rerun asks it before importing anything heavy."""

from __future__ import annotations

from pathlib import Path

from bench.core.preflight import board_dir
from bench.suite.read import SuiteSource, available_suites, suite_dir


def is_shipped(source: SuiteSource | None) -> bool:
    """Whether a suite was read from bench's own suite files (bench/suite/files/): only
    those write the committed boards under leaderboards/ by default."""
    return source is not None and source.path.resolve().parent == suite_dir().resolve()


def suite_board(out_dir: Path | None, name: str, source: SuiteSource | None) -> tuple[Path, str]:
    """Where a run of the suite `name` read from `source` writes its board
    (bench.core.preflight.board_dir: `out_dir`, else leaderboards/NAME for a shipped suite,
    else .bench/leaderboards/NAME), and the line saying so when it is not where the
    committed board of that name lives ("" otherwise)."""
    shipped = out_dir is not None or is_shipped(source)
    board = board_dir(out_dir, name, shipped=shipped)
    if shipped:
        return board, ""
    where = source.path if source is not None else name
    if name in available_suites():
        return board, (
            f"suite {name} from {where} is named like the shipped suite {name}: its board "
            f"goes to {board}, not the committed leaderboards/{name} (--out DIR to choose)"
        )
    return board, (
        f"suite {name} from {where} is not a shipped suite: its board goes to {board} "
        "(--out DIR to choose)"
    )
