"""Shared checks for the tiling tests: tiled execution against the untiled reference."""

from collections.abc import Sequence

import numpy as np

from crane.exec.kernels._types import Array
from crane.tiling.execute import (
    Params,
    Segment,
    init_params,
    segmented_backward,
    segmented_forward,
    untiled_backward,
    untiled_forward,
)
from crane.tiling.layers import Layer

RTOL = 1e-5


def assert_close(actual: Array, expected: Array, what: str) -> None:
    """rtol 1e-5; the absolute floor is relative to the tensor's scale (sums reorder)."""
    scale = float(np.abs(expected).max()) if expected.size else 0.0
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale, err_msg=what)


def check_segments(
    layers: Sequence[Layer], hw: tuple[int, int], segments: Sequence[Segment], seed: int = 0
) -> None:
    """Tiled forward/backward over ``segments`` equals the untiled chain, every gradient."""
    params: list[Params] = init_params(layers, seed=seed)
    rng = np.random.default_rng(seed + 1)
    x = rng.standard_normal((1, layers[0].in_channels, *hw)).astype(np.float32)
    y = untiled_forward(layers, params, x)
    grad_y = rng.standard_normal(y.shape).astype(np.float32)
    grad_x, grads = untiled_backward(layers, params, x, grad_y)
    y_tiled, kept = segmented_forward(layers, params, x, segments)
    grad_x_tiled, grads_tiled = segmented_backward(layers, params, kept, segments, grad_y)
    assert y_tiled.dtype == np.float32
    assert_close(y_tiled, y, "output")
    for seg, boundary in zip(segments, kept, strict=True):
        assert_close(boundary, untiled_forward(layers[: seg.start], params[: seg.start], x)
                     if seg.start else x, f"input of segment {seg}")
    assert_close(grad_x_tiled, grad_x, "input gradient")
    for index, (tiled, ref) in enumerate(zip(grads_tiled, grads, strict=True)):
        assert len(tiled) == len(ref)
        for g_tiled, g_ref in zip(tiled, ref, strict=True):
            assert_close(g_tiled, g_ref, f"gradient of layer {index} {layers[index].kind}")
