"""2-D max and average pooling (windowed and global), forward and backward.

Layout NCHW. Windows use ``kernel``, ``stride`` and explicit per-edge
``padding`` (top, bottom, left, right); output sizes use floor mode
(``ceil_mode=False``), so trailing rows that fit no window are unused.

Max pooling pads with -inf, so padding never wins; its backward routes each
output gradient to the first maximal tap in row-major window order (ties go to
the earliest tap, matching ``numpy.argmax``).

Average pooling divides by the number of *real* input pixels in the window by
default (``count_include_pad=False``, the ONNX default); with
``count_include_pad=True`` it divides by KH * KW (the PyTorch default).
"""

import numpy as np

from crane.exec.kernels._types import Array, IntArray, Pad4, Pair
from crane.exec.kernels._window import crop_hw, output_hw, pad_hw, tap_slices


def max_pool2d_forward(
    x: Array, *, kernel: Pair, stride: Pair | None = None, padding: Pad4 = (0, 0, 0, 0)
) -> Array:
    """Max over each window; ``stride`` defaults to ``kernel``. Returns (N, C, OH, OW)."""
    taps = _stack_taps(x, kernel, stride or kernel, padding, -np.inf)
    return taps.max(axis=0)


def max_pool2d_argmax(
    x: Array, *, kernel: Pair, stride: Pair | None = None, padding: Pad4 = (0, 0, 0, 0)
) -> IntArray:
    """Index ``i * KW + j`` of the first maximal tap of each window, shape (N, C, OH, OW)."""
    taps = _stack_taps(x, kernel, stride or kernel, padding, -np.inf)
    return taps.argmax(axis=0)


def max_pool2d_backward(
    grad_out: Array,
    x: Array,
    *,
    kernel: Pair,
    stride: Pair | None = None,
    padding: Pad4 = (0, 0, 0, 0),
) -> Array:
    """Gradient wrt ``x``: each output gradient is added to its window's argmax pixel."""
    stride = stride or kernel
    argmax = max_pool2d_argmax(x, kernel=kernel, stride=stride, padding=padding)
    out_hw = (grad_out.shape[-2], grad_out.shape[-1])
    grad_pad = np.zeros_like(pad_hw(x, padding), dtype=np.result_type(grad_out, x))
    for tap in range(kernel[0] * kernel[1]):
        hs, ws = tap_slices(divmod(tap, kernel[1]), stride, (1, 1), out_hw)
        # Overlapping windows may pick the same pixel, hence accumulate.
        grad_pad[..., hs, ws] += np.where(argmax == tap, grad_out, 0.0)
    return crop_hw(grad_pad, padding)


def avg_pool2d_forward(
    x: Array,
    *,
    kernel: Pair,
    stride: Pair | None = None,
    padding: Pad4 = (0, 0, 0, 0),
    count_include_pad: bool = False,
) -> Array:
    """Mean over each window (divisor per ``count_include_pad``). Returns (N, C, OH, OW)."""
    stride = stride or kernel
    total = _stack_taps(x, kernel, stride, padding, 0.0).sum(axis=0)
    divisor = _avg_divisor(x.shape[-2:], kernel, stride, padding, count_include_pad)
    return (total / divisor).astype(x.dtype, copy=False)


def avg_pool2d_backward(
    grad_out: Array,
    input_shape: tuple[int, ...],
    *,
    kernel: Pair,
    stride: Pair | None = None,
    padding: Pad4 = (0, 0, 0, 0),
    count_include_pad: bool = False,
) -> Array:
    """Gradient wrt the input of shape ``input_shape``: each window spreads grad / divisor."""
    stride = stride or kernel
    top, bottom, left, right = padding
    h, w = input_shape[-2], input_shape[-1]
    divisor = _avg_divisor((h, w), kernel, stride, padding, count_include_pad)
    scaled = (grad_out / divisor).astype(grad_out.dtype, copy=False)
    padded_shape = (*input_shape[:-2], h + top + bottom, w + left + right)
    grad_pad = np.zeros(padded_shape, dtype=grad_out.dtype)
    out_hw = (grad_out.shape[-2], grad_out.shape[-1])
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            hs, ws = tap_slices((i, j), stride, (1, 1), out_hw)
            grad_pad[..., hs, ws] += scaled
    return crop_hw(grad_pad, padding)


def global_avg_pool2d_forward(x: Array) -> Array:
    """Mean over H and W, keeping them: (N, C, H, W) -> (N, C, 1, 1)."""
    return x.mean(axis=(-2, -1), keepdims=True)


def global_avg_pool2d_backward(grad_out: Array, input_shape: tuple[int, ...]) -> Array:
    """Gradient wrt the input: ``grad_out`` (N, C, 1, 1) spread evenly over H * W."""
    h, w = input_shape[-2], input_shape[-1]
    return np.broadcast_to(grad_out / (h * w), input_shape).copy()


def global_max_pool2d_forward(x: Array) -> Array:
    """Max over H and W, keeping them: (N, C, H, W) -> (N, C, 1, 1)."""
    return x.max(axis=(-2, -1), keepdims=True)


def global_max_pool2d_backward(grad_out: Array, x: Array) -> Array:
    """Gradient wrt ``x``: routed to the first (row-major) maximum of each channel plane."""
    flat = x.reshape(*x.shape[:-2], -1)
    first = flat.argmax(axis=-1)[..., None]
    hit = np.arange(flat.shape[-1]) == first
    grad = np.where(hit, grad_out.reshape(*x.shape[:-2], 1), 0.0)
    return grad.reshape(x.shape)


def _stack_taps(x: Array, kernel: Pair, stride: Pair, padding: Pad4, fill: float) -> Array:
    """All window taps stacked on a new leading axis: (KH * KW, N, C, OH, OW)."""
    out_hw = output_hw((x.shape[-2], x.shape[-1]), kernel, stride, padding)
    xp = pad_hw(x, padding, fill)
    taps = [
        xp[(..., *tap_slices((i, j), stride, (1, 1), out_hw))]
        for i in range(kernel[0])
        for j in range(kernel[1])
    ]
    return np.stack(taps, axis=0)


def _avg_divisor(
    hw: tuple[int, ...], kernel: Pair, stride: Pair, padding: Pad4, count_include_pad: bool
) -> Array | float:
    if count_include_pad:
        return float(kernel[0] * kernel[1])
    # Pool an all-ones image padded with zeros to count the real pixels per window.
    ones = np.ones((hw[0], hw[1]))
    return _stack_taps(ones, kernel, stride, padding, 0.0).sum(axis=0)
