"""Build step (setuptools `build_py`, pyproject.toml's [tool.setuptools.cmdclass]): the
committed boards go into the wheel as bench/_boards/SUITE/{leaderboard,reproduction}.json,
so an installed bench reads the same boards a checkout does (bench.data.locations
.boards_root). Only those two JSON files per suite: no pages, plots or CSVs."""

from __future__ import annotations

from pathlib import Path

from setuptools.command.build_py import build_py

BOARDS = Path(__file__).resolve().parent / "leaderboards"
FILES = ("leaderboard.json", "reproduction.json")
TARGET = ("bench", "_boards")


class BuildPyWithBoards(build_py):
    """build_py, then each suite's committed board files copied under bench/_boards/."""

    def run(self) -> None:
        super().run()
        dest = Path(self.build_lib, *TARGET)
        for name in FILES:
            for source in sorted(BOARDS.glob(f"*/{name}")):
                target = dest / source.parent.name / name
                self.mkpath(str(target.parent))
                self.copy_file(str(source), str(target))
