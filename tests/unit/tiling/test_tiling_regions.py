"""Index analysis: input regions, border padding and grid splitting."""

import pytest

from crane.tiling.layers import Layer, Window, vgg16_trunk
from crane.tiling.regions import (
    Interval,
    Rect,
    axis_input,
    chain_regions,
    grid_from_cuts,
    op_region,
    split_axis,
    split_grid,
)


def test_same_conv_interior_tile_gets_halo_and_no_padding() -> None:
    step = op_region(Layer.conv(1, 1, 3).window, (10, 10), Rect.of(3, 6, 4, 7))
    assert step.input == Rect.of(2, 7, 3, 8)
    assert step.padding == (0, 0, 0, 0)


def test_border_tile_is_padded_only_on_the_border_side() -> None:
    step = op_region(Layer.conv(1, 1, 3).window, (10, 10), Rect.of(0, 4, 6, 10))
    assert step.input == Rect.of(0, 5, 5, 10)
    assert step.padding == (1, 0, 0, 1)


def test_strided_dilated_asymmetric_conv_interval() -> None:
    window = Window(kernel=(3, 3), stride=(2, 2), dilation=(2, 2), padding=(3, 1, 0, 0))
    # Output rows [1, 3) read padded rows 2..(2*2+4) = [2, 9), i.e. unpadded [-1, 6).
    interval, low, high = axis_input(Interval(1, 3), 8, window, 0)
    assert (interval, low, high) == (Interval(0, 6), 1, 0)


def test_floor_mode_leaves_trailing_rows_unread() -> None:
    window = Layer.max_pool(1, 2).window
    interval, low, high = axis_input(Interval(0, 2), 5, window, 0)
    assert (interval, low, high) == (Interval(0, 4), 0, 0)


def test_window_entirely_in_padding_gets_an_empty_clipped_input() -> None:
    window = Window(kernel=(1, 1), padding=(2, 0, 0, 0))
    interval, low, high = axis_input(Interval(0, 1), 4, window, 0)
    assert (interval.size, low, high) == (0, 1, 0)


def test_pool_halves_and_chain_walks_back_to_the_input() -> None:
    layers = vgg16_trunk(32)[:5]  # conv relu conv relu pool
    steps = chain_regions(layers, (16, 16), Rect.of(2, 4, 0, 8))
    assert steps[-1].input == Rect.of(4, 8, 0, 16)
    assert steps[0].input == Rect.of(2, 10, 0, 16)
    assert steps[0].padding == (0, 0, 1, 1)
    assert [s.output for s in steps[:-1]] == [s.input for s in steps[1:]]


def test_output_region_outside_the_tensor_is_rejected() -> None:
    with pytest.raises(ValueError, match="outside"):
        op_region(Layer.conv(1, 1, 3).window, (8, 8), Rect.of(0, 9, 0, 8))


def test_split_axis_uneven_parts() -> None:
    assert [i.size for i in split_axis(10, 3)] == [4, 3, 3]
    with pytest.raises(ValueError):
        split_axis(3, 4)


def test_split_grid_covers_non_square_plane_disjointly() -> None:
    grid = split_grid(7, 11, 2, 3)
    assert len(grid) == 6
    assert sum(r.area for r in grid) == 77
    assert grid[0] == Rect.of(0, 4, 0, 4) and grid[-1] == Rect.of(4, 7, 8, 11)


def test_explicit_cuts() -> None:
    grid = grid_from_cuts(9, 6, [2, 7], [1])
    assert [r.hw for r in grid] == [(2, 1), (2, 5), (5, 1), (5, 5), (2, 1), (2, 5)]
    with pytest.raises(ValueError, match="increasing"):
        grid_from_cuts(9, 6, [7, 2], [])
