"""conv2d forward against a direct loop, backward against finite differences."""

from collections.abc import Mapping

import numpy as np
import pytest
from kernel_cases import CONV_CASES, ConvCase
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    conv2d_backward_bias,
    conv2d_backward_input,
    conv2d_backward_weight,
    conv2d_forward,
    conv2d_output_shape,
)


def naive_conv2d(x: Array, w: Array, b: Array | None, case: ConvCase) -> Array:
    """Textbook definition, one output element at a time."""
    top, bottom, left, right = case.padding
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    n, o, oh, ow = conv2d_output_shape(case.x, case.weight, **case.kwargs)
    cg, og = w.shape[1], o // case.groups
    out = np.zeros((n, o, oh, ow))
    for idx in np.ndindex(n, o, oh, ow):
        bn, bo, y, xx = idx
        g = bo // og
        for c, i, j in np.ndindex(cg, *case.kernel):
            yy = y * case.stride[0] + i * case.dilation[0]
            xc = xx * case.stride[1] + j * case.dilation[1]
            out[idx] += w[bo, c, i, j] * xp[bn, g * cg + c, yy, xc]
    if b is not None:
        out += b[None, :, None, None]
    return out


def _shape4(a: Array) -> tuple[int, int, int, int]:
    n, c, h, w = a.shape
    return n, c, h, w


def _inputs(case: ConvCase, rng: np.random.Generator) -> dict[str, Array]:
    inputs: dict[str, Array] = {
        "x": rng.standard_normal(case.x),
        "w": rng.standard_normal(case.weight),
    }
    if case.bias:
        inputs["b"] = rng.standard_normal(case.out_channels)
    return inputs


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: c.name)
def test_conv2d_forward_matches_direct_loop(case: ConvCase, rng: np.random.Generator) -> None:
    inp = _inputs(case, rng)
    got = conv2d_forward(inp["x"], inp["w"], inp.get("b"), **case.kwargs)
    np.testing.assert_allclose(
        got, naive_conv2d(inp["x"], inp["w"], inp.get("b"), case), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("case", CONV_CASES, ids=lambda c: c.name)
def test_conv2d_gradients(case: ConvCase, rng: np.random.Generator) -> None:
    kw = case.kwargs

    def forward(x: Array, w: Array, b: Array | None = None) -> Array:
        return conv2d_forward(x, w, b, **kw)

    def backward(g: Array, x: Array, w: Array, b: Array | None = None) -> Mapping[str, Array]:
        grads = {
            "x": conv2d_backward_input(g, w, _shape4(x), **kw),
            "w": conv2d_backward_weight(g, x, _shape4(w), **kw),
        }
        if b is not None:
            grads["b"] = conv2d_backward_bias(g)
        return grads

    check_gradients(forward, backward, _inputs(case, rng))


def test_unused_trailing_rows_get_zero_gradient(rng: np.random.Generator) -> None:
    # H = 8, k = 3, stride 2: windows start at 0, 2, 4 and end at row 6, so row 7 is never read.
    w = rng.standard_normal((1, 1, 3, 3))
    g = np.ones((1, 1, 3, 3))
    grad = conv2d_backward_input(g, w, (1, 1, 8, 8), stride=(2, 2))
    assert np.all(grad[..., 7, :] == 0) and np.all(grad[..., :, 7] == 0)
    assert np.any(grad[..., 6, :] != 0)


def test_conv2d_rejects_bad_groups() -> None:
    with pytest.raises(ValueError, match="groups"):
        conv2d_forward(np.zeros((1, 3, 4, 4)), np.zeros((2, 1, 1, 1)), groups=2)
