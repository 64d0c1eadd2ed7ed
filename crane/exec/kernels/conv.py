"""2-D convolution (cross-correlation), forward and backward.

Layouts: input NCHW, weight OIHW with shape (O, C // groups, KH, KW), bias (O,),
output (N, O, OH, OW). Padding is explicit per edge (top, bottom, left, right)
and may be asymmetric. Output sizes use floor division, so when
``H + top + bottom - dilated_KH`` is not a multiple of the stride the trailing
input rows/columns are never read and receive zero gradient.

Each kernel tap is one strided slice of the padded input contracted with the
tap's weights over the group's input channels, so the cost is KH * KW einsums.
"""

import numpy as np

from crane.exec.kernels._types import Array, Pad4, Pair
from crane.exec.kernels._window import crop_hw, output_hw, pad_hw, tap_slices


def conv2d_output_shape(
    input_shape: tuple[int, int, int, int],
    weight_shape: tuple[int, int, int, int],
    *,
    stride: Pair = (1, 1),
    padding: Pad4 = (0, 0, 0, 0),
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> tuple[int, int, int, int]:
    """Return the NCHW output shape (N, O, OH, OW) of :func:`conv2d_forward`."""
    n, c, h, w = input_shape
    o, cg, kh, kw = weight_shape
    _check_groups(c, o, cg, groups)
    oh, ow = output_hw((h, w), (kh, kw), stride, padding, dilation)
    return n, o, oh, ow


def conv2d_forward(
    x: Array,
    weight: Array,
    bias: Array | None = None,
    *,
    stride: Pair = (1, 1),
    padding: Pad4 = (0, 0, 0, 0),
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> Array:
    """Grouped, strided, dilated 2-D cross-correlation.

    ``out[n, o, y, x] = bias[o] + sum_{c, i, j} w[o, c, i, j] *
    xpad[n, g(o) * Cg + c, y * sh + i * dh, x * sw + j * dw]``.
    Depthwise convolution is ``groups == C`` with weight (C * m, 1, KH, KW).
    """
    n, o, oh, ow = conv2d_output_shape(
        _shape4(x),
        _shape4(weight),
        stride=stride,
        padding=padding,
        dilation=dilation,
        groups=groups,
    )
    xg = _group_input(pad_hw(x, padding), groups)
    wg = _group_weight(weight, groups)
    out = np.zeros((n, groups, o // groups, oh, ow), dtype=np.result_type(x, weight))
    for i in range(weight.shape[2]):
        for j in range(weight.shape[3]):
            hs, ws = tap_slices((i, j), stride, dilation, (oh, ow))
            out += np.einsum("ngchw,goc->ngohw", xg[..., hs, ws], wg[..., i, j])
    out = out.reshape(n, o, oh, ow)
    if bias is None:
        return out
    return out + bias.reshape(1, o, 1, 1)


def conv2d_backward_input(
    grad_out: Array,
    weight: Array,
    input_shape: tuple[int, int, int, int],
    *,
    stride: Pair = (1, 1),
    padding: Pad4 = (0, 0, 0, 0),
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> Array:
    """Gradient of the loss wrt the NCHW input, shape ``input_shape``."""
    n, c, h, w = input_shape
    _, o, oh, ow = grad_out.shape
    top, bottom, left, right = padding
    gg = grad_out.reshape(n, groups, o // groups, oh, ow)
    wg = _group_weight(weight, groups)
    dtype = np.result_type(grad_out, weight)
    grad_pad = np.zeros((n, groups, c // groups, h + top + bottom, w + left + right), dtype=dtype)
    for i in range(weight.shape[2]):
        for j in range(weight.shape[3]):
            hs, ws = tap_slices((i, j), stride, dilation, (oh, ow))
            grad_pad[..., hs, ws] += np.einsum("ngohw,goc->ngchw", gg, wg[..., i, j])
    return crop_hw(grad_pad.reshape(n, c, grad_pad.shape[-2], grad_pad.shape[-1]), padding)


def conv2d_backward_weight(
    grad_out: Array,
    x: Array,
    weight_shape: tuple[int, int, int, int],
    *,
    stride: Pair = (1, 1),
    padding: Pad4 = (0, 0, 0, 0),
    dilation: Pair = (1, 1),
    groups: int = 1,
) -> Array:
    """Gradient of the loss wrt the OIHW weight, shape ``weight_shape``."""
    o, cg, kh, kw = weight_shape
    n, _, oh, ow = grad_out.shape
    xg = _group_input(pad_hw(x, padding), groups)
    gg = grad_out.reshape(n, groups, o // groups, oh, ow)
    grad_w = np.zeros((groups, o // groups, cg, kh, kw), dtype=np.result_type(grad_out, x))
    for i in range(kh):
        for j in range(kw):
            hs, ws = tap_slices((i, j), stride, dilation, (oh, ow))
            grad_w[..., i, j] = np.einsum("ngohw,ngchw->goc", gg, xg[..., hs, ws])
    return grad_w.reshape(o, cg, kh, kw)


def conv2d_backward_bias(grad_out: Array) -> Array:
    """Gradient of the loss wrt the bias (O,): ``grad_out`` summed over N, OH, OW."""
    return grad_out.sum(axis=(0, 2, 3))


def _group_input(x: Array, groups: int) -> Array:
    n, c, h, w = x.shape
    return x.reshape(n, groups, c // groups, h, w)


def _group_weight(weight: Array, groups: int) -> Array:
    o, cg, kh, kw = weight.shape
    return weight.reshape(groups, o // groups, cg, kh, kw)


def _shape4(a: Array) -> tuple[int, int, int, int]:
    if a.ndim != 4:
        raise ValueError(f"expected a 4-D array, got shape {a.shape}")
    n, c, h, w = a.shape
    return n, c, h, w


def _check_groups(c: int, o: int, cg: int, groups: int) -> None:
    if groups < 1 or c % groups or o % groups:
        raise ValueError(f"groups={groups} must divide input channels {c} and output channels {o}")
    if c // groups != cg:
        raise ValueError(f"weight expects {cg} input channels per group, input gives {c // groups}")
