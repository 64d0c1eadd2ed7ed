"""Tiled execution equals untiled execution: outputs and every gradient."""

import numpy as np
import pytest
from tiling_testing import check_segments

from crane.tiling.execute import Segment, init_params, tiled_backward, tiled_forward
from crane.tiling.layers import Layer, darknet19_trunk, vgg16_trunk
from crane.tiling.regions import Rect, grid_from_cuts


def test_vgg16_trunk_48_uneven_grid() -> None:
    layers = vgg16_trunk(divisor=16)
    # 48 / 8 = 6 rows after three pools; the 1x1 final output cannot be split further.
    check_segments(layers, (48, 48), [Segment(0, 17, 4, 5), Segment(17, len(layers))])


def test_vgg16_trunk_one_segment_non_square() -> None:
    layers = vgg16_trunk(divisor=16)
    check_segments(layers, (96, 160), [Segment(0, len(layers), 2, 3)])


def test_vgg16_trunk_several_segments() -> None:
    layers = vgg16_trunk(divisor=16)
    segments = [Segment(0, 5, 4, 4), Segment(5, 14, 2, 3), Segment(14, len(layers), 1, 1)]
    check_segments(layers, (64, 64), segments)


def test_darknet19_trunk_tiled() -> None:
    layers = darknet19_trunk(divisor=16)
    check_segments(layers, (64, 64), [Segment(0, 12, 3, 3), Segment(12, len(layers), 2, 2)])


def test_darknet19_trunk_48_and_non_square() -> None:
    layers = darknet19_trunk(divisor=32)
    # After four pools 48 -> 3; the last pool and the 1x1 convs after it run untiled.
    check_segments(layers, (48, 48), [Segment(0, 3, 5, 7), Segment(3, 17, 3, 2), Segment(17, len(layers))])
    check_segments(layers, (96, 160), [Segment(0, len(layers), 3, 4)])


def test_non_square_image() -> None:
    layers = vgg16_trunk(divisor=32)[:10]
    check_segments(layers, (96, 160), [Segment(0, 5, 3, 4), Segment(5, 10, 2, 5)])


def test_strided_dilated_asymmetric_chain() -> None:
    layers = (
        Layer.conv(2, 4, 3, stride=2, padding=(1, 0, 2, 1), bias=True),
        Layer.relu(4),
        Layer.conv(4, 3, (3, 2), dilation=(2, 3)),
        Layer.avg_pool(3, 3, stride=2, padding=1),
        Layer.conv(3, 5, 5, stride=(1, 2), dilation=2, padding=(4, 1, 0, 3)),
        Layer.max_pool(5, 3, stride=1, padding=1),
    )
    check_segments(layers, (45, 38), [Segment(0, 3, 3, 2), Segment(3, 6, 2, 3)])


def test_explicit_uneven_cuts() -> None:
    layers = vgg16_trunk(divisor=32)[:5]
    params = init_params(layers)
    x = np.random.default_rng(3).standard_normal((1, 3, 20, 28)).astype(np.float32)
    full = tiled_forward(layers, params, x, [Rect.of(0, 10, 0, 14)])
    grid = grid_from_cuts(10, 14, [1, 7], [5, 6, 13])
    np.testing.assert_allclose(tiled_forward(layers, params, x, grid), full, rtol=1e-6)
    grad_y = np.ones_like(full)
    gx_one, gw_one = tiled_backward(layers, params, x, [Rect.of(0, 10, 0, 14)], grad_y)
    gx, gw = tiled_backward(layers, params, x, grid, grad_y)
    np.testing.assert_allclose(gx, gx_one, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw[2][0], gw_one[2][0], rtol=1e-5, atol=1e-5)


def test_batch_norm_is_executed_as_its_own_untiled_segment() -> None:
    layers = (
        Layer.conv(3, 4, 3),
        Layer.batch_norm(4),
        Layer.relu(4),
        Layer.conv(4, 4, 3, stride=2),
        Layer.batch_norm(4),
        Layer.max_pool(4, 2),
    )
    segments = [Segment(0, 1, 2, 3), Segment(1, 2), Segment(2, 4, 3, 2), Segment(4, 5), Segment(5, 6, 2, 2)]
    check_segments(layers, (24, 30), segments)


def test_batch_norm_in_a_multi_tile_segment_is_refused() -> None:
    layers = (Layer.conv(3, 4, 3), Layer.batch_norm(4))
    params = init_params(layers)
    x = np.zeros((1, 3, 8, 8), dtype=np.float32)
    with pytest.raises(ValueError, match="batch norm"):
        tiled_forward(layers, params, x, [Rect.of(0, 4, 0, 8), Rect.of(4, 8, 0, 8)])


def test_bad_segment_cover_is_refused() -> None:
    layers = vgg16_trunk(divisor=32)[:4]
    params = init_params(layers)
    x = np.zeros((1, 3, 8, 8), dtype=np.float32)
    from crane.tiling.execute import segmented_forward

    with pytest.raises(ValueError, match="cover"):
        segmented_forward(layers, params, x, [Segment(0, 2), Segment(3, 4)])


def test_border_tiles_that_read_only_padding() -> None:
    # A 1x1 conv padded by 2: its border outputs are the bias alone, so for those tiles
    # the ops before it have nothing to compute.
    layers = (Layer.conv(2, 3, 3), Layer.relu(3), Layer.conv(3, 2, 1, padding=2, bias=True))
    check_segments(layers, (9, 7), [Segment(0, 3, 5, 4)])
