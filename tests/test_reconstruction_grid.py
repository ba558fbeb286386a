"""The reconstruction grid: every original and reconstruction lands in its own cell of one
mosaic, greyscale or colour, and the figure's size follows its rows and columns."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from bench.report.plots import _GAP_PX, _mosaic, reconstruction_grid_png


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
