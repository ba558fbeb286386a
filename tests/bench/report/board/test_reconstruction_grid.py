"""The reconstruction grid: every original and reconstruction lands in its own cell of one
mosaic, greyscale or colour, and the figure's size follows its rows and columns."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from bench.report.board.plots import _GAP_PX, _grid_rows, _mosaic, reconstruction_grid_png


def test_each_tile_lands_in_its_own_cell_on_a_white_canvas() -> None:
    tiles = [[np.full((4, 5), 0.1 * (3 * r + c), np.float32) for c in range(3)] for r in range(2)]
    canvas = _mosaic(tiles, gap=2)
    assert canvas.shape == (2 * 6, 3 * 7)
    for r in range(2):
        for c in range(3):
            top, left = r * 6 + 1, c * 7 + 1
            assert np.array_equal(canvas[top : top + 4, left : left + 5], tiles[r][c])
    # The gaps between cells stay white.
    assert (canvas[0] == 1.0).all() and (canvas[:, 0] == 1.0).all()
    assert canvas[5, 1] == 1.0 and canvas[1, 6] == 1.0


def test_colour_tiles_keep_their_channels() -> None:
    red = np.zeros((3, 3, 3))
    red[..., 0] = 1.0
    canvas = _mosaic([[red, red]], gap=_GAP_PX)
    assert canvas.shape[2] == 3
    inner = canvas[_GAP_PX // 2, _GAP_PX // 2]
    assert inner.tolist() == [1.0, 0.0, 0.0]


def test_the_grid_has_a_row_per_entry_and_a_column_per_image() -> None:
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (4, 1, 28, 28))
    entries = [(f"setting {i}\nattack", x, np.clip(x + 0.1 * i, 0, 1)) for i in range(3)]
    png = reconstruction_grid_png("fmnist", entries)
    width, height = Image.open(io.BytesIO(png)).size
    # 2.2 in of labels + 4 tiles of 1 in; 0.35 in of title + (1 original + 3) rows of 1 in.
    assert (width, height) == (620, 435)


def test_rows_scored_on_smoothed_targets_are_shown_under_those_targets() -> None:
    """The "original" row holds the test images most rows are scored on, even when a
    smoothed setting sorts first; smoothed rows get a labelled row of their own targets,
    and the rows after them the originals again."""
    rng = np.random.default_rng(1)
    raw = rng.uniform(0, 1, (3, 1, 8, 8))
    smoothed = raw + 0.25 * rng.standard_normal(raw.shape)
    early, late = "dfil(split=early, targets=smoothed)", "dfil(split=late, targets=raw)"
    entries = [(f"{early}\ntv", smoothed, smoothed), (f"{early}\nmap", smoothed, smoothed)]
    entries += [(f"{late}\n{attack}", raw, raw) for attack in ("tv", "map", "inverter")]
    rows = _grid_rows(entries)
    assert [label for label, _ in rows] == [
        "original",
        "smoothed targets: what the\nrows below are\nscored against",
        f"{early}\ntv\nSSIM 1.00",
        f"{early}\nmap\nSSIM 1.00",
        "original",
        f"{late}\ntv\nSSIM 1.00",
        f"{late}\nmap\nSSIM 1.00",
        f"{late}\ninverter\nSSIM 1.00",
    ]
    shown = [images for _, images in rows]
    assert np.array_equal(shown[0], raw) and np.array_equal(shown[1], smoothed)
    assert np.array_equal(shown[4], raw)
    png = reconstruction_grid_png("fmnist", entries)
    assert Image.open(io.BytesIO(png)).size[1] == 35 + 8 * 100  # title + 8 rows of 1 in


def test_one_set_of_targets_gives_one_original_row() -> None:
    x = np.random.default_rng(2).uniform(0, 1, (2, 1, 8, 8))
    rows = _grid_rows([("a\ntv", x, x), ("b\ntv", x, x)])
    assert [label.split("\n")[0] for label, _ in rows] == ["original", "a", "b"]
