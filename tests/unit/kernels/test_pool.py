"""Pooling forward against direct loops, backward against finite differences."""

from collections.abc import Mapping

import numpy as np
import pytest
from kernel_testing import Array, check_gradients, distinct_values

from crane.exec.kernels import (
    avg_pool2d_backward,
    avg_pool2d_forward,
    global_avg_pool2d_backward,
    global_avg_pool2d_forward,
    global_max_pool2d_backward,
    global_max_pool2d_forward,
    max_pool2d_backward,
    max_pool2d_forward,
    output_hw,
)

Pair = tuple[int, int]
Pad4 = tuple[int, int, int, int]

# (name, input shape, kernel, stride, padding): overlapping windows, padding, non-divisible sizes.
POOL_CASES: list[tuple[str, tuple[int, int, int, int], Pair, Pair, Pad4]] = [
    ("k2s2", (2, 2, 4, 6), (2, 2), (2, 2), (0, 0, 0, 0)),
    ("overlap_k3s2_pad1", (2, 3, 7, 6), (3, 3), (2, 2), (1, 1, 1, 1)),
    ("overlap_k3s1", (1, 2, 5, 5), (3, 3), (1, 1), (0, 0, 0, 0)),
    ("rect_asym_pad_nondivisible", (2, 2, 8, 7), (3, 2), (2, 3), (1, 0, 0, 1)),
]


def naive_pool(
    x: Array, kernel: Pair, stride: Pair, padding: Pad4, kind: str, include_pad: bool
) -> Array:
    """Direct definition: reduce each window of the padded input."""
    top, bottom, left, right = padding
    fill = -np.inf if kind == "max" else 0.0
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=fill)
    valid = np.pad(np.ones(x.shape[-2:]), ((top, bottom), (left, right)))
    oh, ow = output_hw((x.shape[-2], x.shape[-1]), kernel, stride, padding)
    out = np.zeros((*x.shape[:2], oh, ow))
    for y, xx in np.ndindex(oh, ow):
        hs = slice(y * stride[0], y * stride[0] + kernel[0])
        ws = slice(xx * stride[1], xx * stride[1] + kernel[1])
        window = xp[:, :, hs, ws]
        if kind == "max":
            out[:, :, y, xx] = window.max(axis=(2, 3))
            continue
        divisor = kernel[0] * kernel[1] if include_pad else valid[hs, ws].sum()
        out[:, :, y, xx] = window.sum(axis=(2, 3)) / divisor
    return out


@pytest.mark.parametrize(("name", "shape", "kernel", "stride", "padding"), POOL_CASES)
def test_max_pool(
    name: str,
    shape: tuple[int, ...],
    kernel: Pair,
    stride: Pair,
    padding: Pad4,
    rng: np.random.Generator,
) -> None:
    x = distinct_values(shape, rng)
    got = max_pool2d_forward(x, kernel=kernel, stride=stride, padding=padding)
    np.testing.assert_array_equal(got, naive_pool(x, kernel, stride, padding, "max", False))

    def forward(x: Array) -> Array:
        return max_pool2d_forward(x, kernel=kernel, stride=stride, padding=padding)

    def backward(g: Array, x: Array) -> Mapping[str, Array]:
        return {"x": max_pool2d_backward(g, x, kernel=kernel, stride=stride, padding=padding)}

    # Values are >= 0.1 apart, so a 1e-6 perturbation never changes the argmax.
    check_gradients(forward, backward, {"x": x})


@pytest.mark.parametrize("include_pad", [False, True])
@pytest.mark.parametrize(("name", "shape", "kernel", "stride", "padding"), POOL_CASES)
def test_avg_pool(
    name: str,
    shape: tuple[int, ...],
    kernel: Pair,
    stride: Pair,
    padding: Pad4,
    include_pad: bool,
    rng: np.random.Generator,
) -> None:
    x = rng.standard_normal(shape)
    got = avg_pool2d_forward(
        x, kernel=kernel, stride=stride, padding=padding, count_include_pad=include_pad
    )
    np.testing.assert_allclose(
        got, naive_pool(x, kernel, stride, padding, "avg", include_pad), rtol=1e-13
    )

    def forward(x: Array) -> Array:
        return avg_pool2d_forward(
            x, kernel=kernel, stride=stride, padding=padding, count_include_pad=include_pad
        )

    def backward(g: Array, x: Array) -> Mapping[str, Array]:
        grad = avg_pool2d_backward(
            g, x.shape, kernel=kernel, stride=stride, padding=padding, count_include_pad=include_pad
        )
        return {"x": grad}

    check_gradients(forward, backward, {"x": x})


def test_max_pool_backward_routes_ties_to_first_max() -> None:
    x = np.array([[[[1.0, 3.0], [3.0, 0.0]]]])
    grad = max_pool2d_backward(np.ones((1, 1, 1, 1)), x, kernel=(2, 2))
    np.testing.assert_array_equal(grad, [[[[0.0, 1.0], [0.0, 0.0]]]])


def test_max_pool_stride_defaults_to_kernel(rng: np.random.Generator) -> None:
    x = rng.standard_normal((1, 1, 4, 4))
    assert max_pool2d_forward(x, kernel=(2, 2)).shape == (1, 1, 2, 2)


def test_global_pools(rng: np.random.Generator) -> None:
    x = distinct_values((2, 3, 4, 5), rng)
    np.testing.assert_allclose(global_avg_pool2d_forward(x)[..., 0, 0], x.mean(axis=(2, 3)))
    np.testing.assert_array_equal(global_max_pool2d_forward(x)[..., 0, 0], x.max(axis=(2, 3)))
    check_gradients(
        global_avg_pool2d_forward,
        lambda g, x: {"x": global_avg_pool2d_backward(g, x.shape)},
        {"x": x},
    )
    check_gradients(
        global_max_pool2d_forward,
        lambda g, x: {"x": global_max_pool2d_backward(g, x)},
        {"x": x},
    )


def test_global_max_ties_go_to_first() -> None:
    x = np.array([[[[2.0, 5.0], [5.0, 1.0]]]])
    grad = global_max_pool2d_backward(np.full((1, 1, 1, 1), 3.0), x)
    np.testing.assert_array_equal(grad, [[[[0.0, 3.0], [0.0, 0.0]]]])
