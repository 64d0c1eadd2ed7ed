"""Sliding-window geometry shared by convolution and pooling.

Both ops are evaluated as a sum (or max) over kernel taps: for tap (i, j) the
input pixels it touches for every output pixel form one strided slice of the
padded input, so each tap is a single vectorised numpy operation.
"""

import numpy as np

from crane.exec.kernels._types import Array, Pad4, Pair


def output_size(
    size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int, dilation: int
) -> int:
    """Output extent of one spatial axis (floor mode); trailing rows that fit no window are unused."""
    span = dilation * (kernel - 1) + 1
    out = (size + pad_lo + pad_hi - span) // stride + 1
    if out < 1:
        raise ValueError(
            f"window of span {span} does not fit input of size {size} padded by ({pad_lo}, {pad_hi})"
        )
    return out


def output_hw(hw: Pair, kernel: Pair, stride: Pair, padding: Pad4, dilation: Pair = (1, 1)) -> Pair:
    """Output (H, W) for an NCHW window op with explicit (top, bottom, left, right) padding."""
    top, bottom, left, right = padding
    oh = output_size(hw[0], kernel[0], stride[0], top, bottom, dilation[0])
    ow = output_size(hw[1], kernel[1], stride[1], left, right, dilation[1])
    return oh, ow


def pad_hw(x: Array, padding: Pad4, value: float = 0.0) -> Array:
    """Pad the last two axes of ``x`` by (top, bottom, left, right) with a constant."""
    _check_padding(padding)
    top, bottom, left, right = padding
    widths = [(0, 0)] * (x.ndim - 2) + [(top, bottom), (left, right)]
    return np.pad(x, widths, mode="constant", constant_values=value)


def crop_hw(x: Array, padding: Pad4) -> Array:
    """Inverse of :func:`pad_hw`: drop the padded border of the last two axes."""
    top, bottom, left, right = padding
    h, w = x.shape[-2], x.shape[-1]
    return x[..., top : h - bottom, left : w - right]


def tap_slices(tap: Pair, stride: Pair, dilation: Pair, out_hw: Pair) -> tuple[slice, slice]:
    """Slices of the padded (H, W) axes read by kernel tap ``tap`` for every output pixel."""
    i, j = tap
    h0, w0 = i * dilation[0], j * dilation[1]
    h_stop = h0 + stride[0] * (out_hw[0] - 1) + 1
    w_stop = w0 + stride[1] * (out_hw[1] - 1) + 1
    return slice(h0, h_stop, stride[0]), slice(w0, w_stop, stride[1])


def _check_padding(padding: Pad4) -> None:
    if len(padding) != 4 or min(padding) < 0:
        raise ValueError(
            f"padding must be four non-negative ints (top, bottom, left, right), got {padding}"
        )
