"""Splitting one layer over cores by batch, output channel and space equals the whole layer."""

import numpy as np
import pytest
from tiling_testing import assert_close

from crane.tiling.cores import (
    SplitDim,
    backward_on_cores,
    forward_on_cores,
    spatial_grid,
    split_layer,
)
from crane.tiling.execute import init_params, untiled_backward, untiled_forward
from crane.tiling.layers import Layer

LAYERS = [
    Layer.conv(3, 8, 3, stride=2, dilation=(1, 2), padding=(1, 0, 2, 1), bias=True),
    Layer.max_pool(3, 3, stride=2, padding=1),
    Layer.avg_pool(3, 2),
    Layer.relu(3),
    Layer.batch_norm(3),
]


@pytest.mark.parametrize("layer", LAYERS, ids=lambda layer: layer.kind.value)
@pytest.mark.parametrize(("dim", "cores"), [(SplitDim.BATCH, 2), (SplitDim.CHANNEL, 3), (SplitDim.SPATIAL, 6)])
def test_split_equals_whole_layer(layer: Layer, dim: SplitDim, cores: int) -> None:
    if layer.needs_global_statistics and dim is not SplitDim.CHANNEL:
        with pytest.raises(ValueError, match="batch norm"):
            split_layer(layer, 2, (17, 22), cores, dim)
        return
    params = init_params([layer], seed=4)[0]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, layer.in_channels, 17, 22)).astype(np.float32)
    works = split_layer(layer, 2, (17, 22), cores, dim)
    assert len(works) == cores
    y = untiled_forward([layer], [params], x)
    assert_close(forward_on_cores(layer, params, x, works), y, "output")
    grad_y = rng.standard_normal(y.shape).astype(np.float32)
    grad_x, grads = untiled_backward([layer], [params], x, grad_y)
    split_gx, split_grads = backward_on_cores(layer, params, x, grad_y, works)
    assert_close(split_gx, grad_x, "input gradient")
    for got, want in zip(split_grads, grads[0], strict=True):
        assert_close(got, want, "parameter gradient")


def test_outputs_are_disjoint_and_dense_conv_reads_every_channel() -> None:
    conv = Layer.conv(4, 6, 3)
    works = split_layer(conv, 1, (8, 8), 3, SplitDim.CHANNEL)
    assert [w.out_channels.size for w in works] == [2, 2, 2]
    assert all(w.in_channels.size == 4 for w in works)
    pool = split_layer(Layer.max_pool(6, 2), 1, (8, 8), 3, SplitDim.CHANNEL)
    assert [w.in_channels for w in pool] == [w.out_channels for w in pool]
    spatial = split_layer(conv, 1, (8, 8), 4, SplitDim.SPATIAL)
    assert sum(w.output.area for w in spatial) == 64
    assert spatial[0].padding == (1, 0, 1, 0)


def test_spatial_grid_prefers_square_tiles() -> None:
    assert spatial_grid((100, 100), 4) == (2, 2)
    assert spatial_grid((10, 400), 4) == (1, 4)
    with pytest.raises(ValueError, match="cannot split"):
        spatial_grid((2, 2), 7)
