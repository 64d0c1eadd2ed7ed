"""Training rules of the windowed and dense layers: convolution, pools and linear.

A convolution's input gradient is parallel over the input's batch, channels and image
(each part reads the output-gradient window that reaches it); its weight gradient is
parallel over output and input channels and sums over batch and image. Pools are
parallel everywhere; a linear layer's gradients sum over its rows or its outputs.
"""

from __future__ import annotations

from collections.abc import Mapping

from crane.codegen.boxes import Box, extent
from crane.codegen.rules import Part, int_attr, ints_attr, shape_of, window_input
from crane.codegen.training_space import (
    Space,
    TrainingRule,
    flag_of,
    is_partial,
    shape_only,
)
from crane.dialects.graph_grad import GradOp
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr, IntAttr
from crane.ir.core import Operation
from crane.tiling.layers import Window

# ----- convolution

def _window(op: Operation) -> Window:
    kernel = ints_attr(op, "kernel") or (1, 1)
    stride = ints_attr(op, "stride") or kernel
    dilation = ints_attr(op, "dilation") or (1, 1)
    pad = ints_attr(op, "padding") or (0, 0, 0, 0)
    return Window((kernel[0], kernel[1]), (stride[0], stride[1]), (dilation[0], dilation[1]),
                  (pad[0], pad[1], pad[2], pad[3]))


def _groups(op: Operation, channels: int) -> int:
    return channels if flag_of(op, "depthwise") else max(1, int_attr(op, "groups", 1))


def _reach(start: int, stop: int, outputs: int, size: int, stride: int, dilation: int,
           before: int) -> tuple[int, int]:
    """The outputs ``[i0, i1)`` of a window op whose windows touch inputs ``[start, stop)``."""
    span = (size - 1) * dilation
    i0 = max(0, -(-(start + before - span) // stride))
    i1 = min(outputs, (stop - 1 + before) // stride + 1)
    return (i0, max(i1, i0 + 1)) if i0 < outputs else (outputs - 1, outputs)


def _channel_unit(op: Operation, channels: int, inputs: int | None = None) -> int:
    """Channels (of ``channels``) per group of a grouped convolution whose input has
    ``inputs`` channels (default ``channels``), 1 when ungrouped: a channel axis of a space
    counts in these units, so every split keeps whole groups."""
    groups = _groups(op, channels if inputs is None else inputs)
    return channels // groups if groups > 1 else 1


def _conv_input_space(op: Operation) -> Space:
    """(n, input channels in group units, h, w, output channels): the last a reduction."""
    n, c, h, w = shape_of(op.results[0])
    k = shape_of(op.operands[0])[1]
    grouped = _groups(op, c) > 1
    fixed = frozenset({4}) if grouped else frozenset()
    return Space((n, c // _channel_unit(op, c), h, w, k), frozenset({4}), fixed)


def _units(span: tuple[int, int], unit: int) -> tuple[int, int]:
    return span[0] * unit, span[1] * unit


def _conv_input_part(op: Operation, box: Box) -> Part:
    """``dX`` over ``box`` (n, c, h, w, k): the output-gradient rows whose windows touch it,
    the kernel over a virtual input spanning those windows (no padding), cut to the box."""
    assert isinstance(op, GradOp)
    grad = op.operands[0]
    _, c, h, w = shape_of(op.results[0])
    _, k, oh, ow = shape_of(grad)
    win = _window(op)
    (kh, kw), (sh, sw), (dh, dw) = win.kernel, win.stride, win.dilation
    top, _, left, _ = win.padding
    nb, gb, hb, wb, kb = box
    cb = _units(gb, _channel_unit(op, c))
    rows = _reach(*hb, oh, kh, sh, dh, top)
    cols = _reach(*wb, ow, kw, sw, dw, left)
    vh, vw = (rows[1] - rows[0] - 1) * sh + (kh - 1) * dh + 1, (cols[1] - cols[0] - 1) * sw + (kw - 1) * dw + 1
    groups = _groups(op, c)
    attrs: dict[str, Attribute] = {"padding": DenseIntsAttr((0, 0, 0, 0)), "depthwise": BoolAttr(False)}
    if groups == 1:
        w_box: Box = (kb, cb, (0, kh), (0, kw))
        g_box: Box = (nb, kb, rows, cols)
    else:
        cg, og = c // groups, k // groups
        g0, g1 = gb
        w_box = ((g0 * og, g1 * og), (0, cg), (0, kh), (0, kw))
        g_box = (nb, (g0 * og, g1 * og), rows, cols)
        attrs["groups"] = IntAttr(g1 - g0)
        attrs["out"] = IntAttr((g1 - g0) * og)
    virtual = (nb[1] - nb[0], cb[1] - cb[0], vh, vw)
    attrs["crop"] = DenseIntsAttr((0, 0, hb[0] - (rows[0] * sh - top), wb[0] - (cols[0] * sw - left)))
    attrs.update(shape_only({1: virtual, **_bias_placeholder(op, 3, (kb[1] - kb[0],))}))
    ins: list[Box | None] = [g_box, None, w_box]
    ins += [None for _ in op.operands[3:]]
    partial = (kb != (0, k),)
    return Part(((nb, cb, hb, wb),), tuple(ins), attrs, partial)


def _bias_placeholder(op: Operation, index: int, shape: tuple[int, ...]) -> dict[int, tuple[int, ...]]:
    return {index: shape} if len(op.operands) > index else {}


def _conv_weight_space(op: Operation) -> Space:
    """(output channels in group units, n, oh, ow): the last three reductions."""
    n, k, oh, ow = shape_of(op.operands[0])
    return Space((k // _channel_unit(op, k, shape_of(op.operands[1])[1]), n, oh, ow),
                 frozenset({1, 2, 3}))


def _conv_weight_part(op: Operation, box: Box) -> Part:
    """``dW`` (and ``db``) of output channels ``k`` from the gradient's box (n, k, oh, ow) and
    the input window it covers (as the forward part of that output box reads it)."""
    assert isinstance(op, GradOp)
    gb, nb, hb, wb = box
    x = op.forward_inputs[0]
    _, c, h, w = shape_of(x)
    k = shape_of(op.operands[0])[1]
    groups = _groups(op, c)
    kb = _units(gb, _channel_unit(op, k, c))
    o_w = shape_of(op.forward_weights[0])
    rows, cols, padding = window_input(op, _window(op), hb, wb, (h, w))
    attrs: dict[str, Attribute] = {"padding": DenseIntsAttr(padding),
                                   "out": IntAttr(kb[1] - kb[0]), "depthwise": BoolAttr(False)}
    channels = (0, c) if groups == 1 else _units(gb, c // groups)
    if groups > 1:
        attrs["groups"] = IntAttr(gb[1] - gb[0])
    placeholders = {2: (kb[1] - kb[0], *o_w[1:]), **_bias_placeholder(op, 3, (kb[1] - kb[0],))}
    attrs.update(shape_only(placeholders))
    ins: list[Box | None] = [(nb, kb, hb, wb), (nb, channels, rows, cols), None]
    ins += [None for _ in op.operands[3:]]
    space = _conv_weight_space(op)
    partial = is_partial(box, space, (1, 2, 3))
    outs = ((kb, (0, o_w[1]), (0, o_w[2]), (0, o_w[3])), *((kb,) for _ in op.results[1:]))
    return Part(outs, tuple(ins), attrs, (partial,) * len(outs))


# ----- pools

def _pool_space(op: Operation) -> Space:
    return Space(shape_of(op.results[0]))


def _pool_input_part(op: Operation, box: Box) -> Part:
    """``dX`` over ``box`` from the gradient rows whose windows touch it and the input over
    those windows (clipped to the tensor, the rest as padding), cut to the box."""
    assert isinstance(op, GradOp)
    _, _, h, w = shape_of(op.results[0])
    _, _, oh, ow = shape_of(op.operands[0])
    kernel = ints_attr(op, "kernel") or (1, 1)
    stride = ints_attr(op, "stride") or kernel
    pad = ints_attr(op, "padding") or (0, 0, 0, 0)
    nb, cb, hb, wb = box
    rows = _reach(*hb, oh, kernel[0], stride[0], 1, pad[0])
    cols = _reach(*wb, ow, kernel[1], stride[1], 1, pad[2])
    r0, r1 = rows[0] * stride[0] - pad[0], (rows[1] - 1) * stride[0] - pad[0] + kernel[0]
    c0, c1 = cols[0] * stride[1] - pad[2], (cols[1] - 1) * stride[1] - pad[2] + kernel[1]
    x_box: Box = (nb, cb, (max(r0, 0), min(r1, h)), (max(c0, 0), min(c1, w)))
    attrs: dict[str, Attribute] = {
        "padding": DenseIntsAttr((max(0, -r0), max(0, r1 - h), max(0, -c0), max(0, c1 - w))),
        "crop": DenseIntsAttr((0, 0, hb[0] - x_box[2][0], wb[0] - x_box[3][0])),
    }
    if "ceil_mode" in op.attributes:
        attrs["ceil_mode"] = BoolAttr(False)  # the padding above makes the windows exact
    g_box: Box = (nb, cb, rows, cols)
    if op.kind.name == "max_pool2d":
        return Part((box,), (g_box, x_box), attrs, (False,))
    attrs.update(shape_only({1: extent(x_box)}))
    return Part((box,), (g_box, None), attrs, (False,))


def _global_pool_space(op: Operation) -> Space:
    n, c, h, w = shape_of(op.results[0])
    return Space((n, c, h, w), fixed=frozenset({2, 3}))


def _global_pool_part(op: Operation, box: Box) -> Part:
    nb, cb, hb, wb = box
    attrs = shape_only({1: extent(box)})
    return Part((box,), ((nb, cb, (0, 1), (0, 1)), None), attrs, (False,))


# ----- dense layers

def _linear_input_space(op: Operation) -> Space:
    dx = shape_of(op.results[0])
    out = shape_of(op.operands[0])[-1]
    return Space((*dx, out), frozenset({len(dx)}))


def _linear_input_part(op: Operation, box: Box) -> Part:
    """``dX[rows, in] = sum over out of dY[rows, out] W[in, out]``."""
    assert isinstance(op, GradOp)
    rows, inb, outb = box[:-2], box[-2], box[-1]
    out = shape_of(op.operands[0])[-1]
    placeholders = {1: (*extent(rows), inb[1] - inb[0]), **_bias_placeholder(op, 3, (outb[1] - outb[0],))}
    ins: list[Box | None] = [(*rows, outb), None, (inb, outb)]
    ins += [None for _ in op.operands[3:]]
    return Part(((*rows, inb),), tuple(ins), shape_only(placeholders), (outb != (0, out),))


def _linear_weight_space(op: Operation) -> Space:
    grad = shape_of(op.operands[0])
    rows = tuple(range(1, len(grad)))
    return Space((grad[-1], *grad[:-1]), frozenset(rows))


def _linear_weight_part(op: Operation, box: Box) -> Part:
    """``dW[:, out]`` and ``db[out]`` from the rows ``box[1:]`` (partial over them)."""
    assert isinstance(op, GradOp)
    outb, rows = box[0], box[1:]
    inputs = shape_of(op.forward_inputs[0])[-1]
    placeholders = {2: (inputs, outb[1] - outb[0]), **_bias_placeholder(op, 3, (outb[1] - outb[0],))}
    ins: list[Box | None] = [(*rows, outb), (*rows, (0, inputs)), None]
    ins += [None for _ in op.operands[3:]]
    partial = is_partial(box, _linear_weight_space(op), range(1, len(box)))
    outs = (((0, inputs), outb), *((outb,) for _ in op.results[1:]))
    return Part(outs, tuple(ins), shape_only(placeholders), (partial,) * len(outs))


WINDOW_RULES: Mapping[str, TrainingRule] = {
    "conv2d_grad_input": TrainingRule(_conv_input_space, _conv_input_part),
    "conv2d_grad_weight": TrainingRule(_conv_weight_space, _conv_weight_part),
    "max_pool2d_grad_input": TrainingRule(_pool_space, _pool_input_part),
    "avg_pool2d_grad_input": TrainingRule(_pool_space, _pool_input_part),
    "global_avg_pool_grad_input": TrainingRule(_global_pool_space, _global_pool_part),
    "linear_grad_input": TrainingRule(_linear_input_space, _linear_input_part),
    "linear_grad_weight": TrainingRule(_linear_weight_space, _linear_weight_part),
}
"""Gradient op name (without ``graph.``) -> its rule, for the layers above."""
