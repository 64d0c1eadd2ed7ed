"""Property: for random conv/pool chains, images and grids, tiled == untiled (every gradient)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tiling_testing import check_segments

from crane.tiling.execute import Segment
from crane.tiling.layers import Layer, Pair, chain_hw


def _layer(data: st.DataObject, channels: int, hw: Pair) -> Layer | None:
    """A random op that still fits ``hw``, or None when the draw does not fit."""
    kind = data.draw(st.sampled_from(["conv", "conv", "max", "avg", "relu"]))
    kernel = (data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4)))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    pads = tuple(data.draw(st.integers(0, 2)) for _ in range(4))
    padding = (pads[0], pads[1], pads[2], pads[3])
    if kind == "relu":
        return Layer.relu(channels)
    if kind == "conv":
        dilation = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
        out = data.draw(st.integers(1, 4))
        bias = data.draw(st.booleans())
        layer = Layer.conv(channels, out, kernel, stride=stride, dilation=dilation, padding=padding, bias=bias)
    else:
        # Pools keep padding below the kernel, as PyTorch requires.
        padding = (min(pads[0], kernel[0] - 1), min(pads[1], kernel[0] - 1),
                   min(pads[2], kernel[1] - 1), min(pads[3], kernel[1] - 1))
        make = Layer.max_pool if kind == "max" else Layer.avg_pool
        layer = make(channels, kernel, stride=stride, padding=padding)
    try:
        layer.window.out_hw(hw)
    except ValueError:
        return None
    return layer


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_chains_and_grids(data: st.DataObject) -> None:
    hw = (data.draw(st.integers(4, 40)), data.draw(st.integers(4, 40)))
    channels = data.draw(st.integers(1, 3))
    layers: list[Layer] = []
    current = hw
    for _ in range(data.draw(st.integers(1, 6))):
        layer = _layer(data, channels, current)
        if layer is None:
            continue
        layers.append(layer)
        channels, current = layer.out_channels, layer.window.out_hw(current)
    if not layers:
        layers.append(Layer.relu(channels))
    shapes = chain_hw(layers, hw)
    cut = data.draw(st.integers(1, len(layers)))
    segments = []
    for start, stop in ((0, cut), (cut, len(layers))):
        if start == stop:
            continue
        out = shapes[stop]
        rows = data.draw(st.integers(1, min(out[0], 5)))
        cols = data.draw(st.integers(1, min(out[1], 5)))
        segments.append(Segment(start, stop, rows, cols))
    check_segments(layers, hw, segments, seed=data.draw(st.integers(0, 1000)))
