"""How a training op's work divides over tiles, and over the steps of one tile.

Every training op (a gradient, an accumulation, an optimizer update) runs over an
iteration *space*: axes its work loops over. A box of the space is a *part*. Some axes are
*parallel*: parts that differ on them write disjoint boxes of every result. The others are
*reductions*: parts that differ on them add partial sums into the same box of a result
that lacks the axis (a weight gradient summed over the batch and the image, an input
gradient summed over a convolution's output channels). A :class:`TrainingRule` maps a box
of the space to a :class:`~crane.codegen.rules.Part`: the box of every operand it reads
(None: not read at all), of every result it writes, which results are partial sums, and the
tile-level attributes that make the kernel compute exactly that part:

* ``shape_only``: operands the kernel reads only the shape of (a gradient that needs no
  forward input reads none of it; ``crane.exec.evaluate.SHAPE_ONLY``);
* ``crop``: a window gradient computed over its windows' span, cut to the part;
* ``count``: a loss gradient over some rows, averaged over all of them;
* ``row_offset``: an embedding gradient over a slice of the table's rows;
* ``mask_shape``/``mask_offset``: a dropout gradient's box of the whole mask.

:func:`training_parts` splits an op over tiles (the parallel axes first, a reduction when
it moves less data), :func:`training_steps` cuts one tile's part into steps whose
operands and results fit a byte budget. Ops without a rule run whole on one tile.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from crane.codegen.boxes import Box, extent, full, split_span, volume, with_axis
from crane.codegen.rules import Part, kept_prefix, mask_attrs, shape_of
from crane.dialects.graph_grad import AccumulateOp, FillOp, GradOp, UpdateOp
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr, IntAttr
from crane.ir.core import Operation
from crane.tiling.layers import Window
from crane.tiling.regions import Interval, axis_input


@dataclass(frozen=True, slots=True)
class Space:
    """The iteration space of a training op: extents, and which axes are reductions."""

    extents: tuple[int, ...]
    reductions: frozenset[int] = frozenset()
    fixed: frozenset[int] = frozenset()
    """Axes that are never split (a part always covers them whole)."""

    @property
    def whole(self) -> Box:
        return full(self.extents)

    def splittable(self) -> list[int]:
        """Axes a split may cut, parallel ones first (in axis order), then reductions."""
        axes = [a for a in range(len(self.extents)) if a not in self.fixed and self.extents[a] > 1]
        return sorted(axes, key=lambda a: (a in self.reductions, a))


@dataclass(frozen=True, slots=True)
class TrainingRule:
    """The space of an op and the part a box of it is."""

    space: Callable[[Operation], Space]
    part: Callable[[Operation, Box], Part]


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def _int(op: Operation, name: str, default: int = 0) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else default


def _flag(op: Operation, name: str) -> bool:
    attr = op.attributes.get(name)
    return isinstance(attr, BoolAttr) and attr.value


def shape_only(placeholders: Mapping[int, tuple[int, ...]]) -> dict[str, Attribute]:
    """The ``shape_only`` attribute for operands given by shape (index -> shape)."""
    flat: list[int] = []
    for index in sorted(placeholders):
        shape = placeholders[index]
        flat += [index, len(shape), *shape]
    return {"shape_only": DenseIntsAttr(tuple(flat))} if flat else {}


def _partial(box: Box, space: Space, reduced: Sequence[int]) -> bool:
    """Whether a result summing over the axes ``reduced`` is partial for ``box``."""
    return any(box[a] != (0, space.extents[a]) for a in reduced)


# ----- elementwise: unary gradients, accumulations, optimizer updates, fills

def _broadcast(box: Box, shape: tuple[int, ...]) -> Box:
    tail = box[len(box) - len(shape):] if shape else ()
    return tuple((0, 1) if d == 1 else pair for d, pair in zip(shape, tail, strict=True))


def _result_space(op: Operation) -> Space:
    return Space(shape_of(op.results[0]))


def _elementwise_part(op: Operation, box: Box) -> Part:
    """Every operand and result over the same box (broadcast where smaller)."""
    ins = tuple(_broadcast(box, shape_of(v)) for v in op.operands)
    outs = tuple(_broadcast(box, shape_of(r)) for r in op.results)
    return Part(outs, ins, mask_attrs(op, box), (False,) * len(outs))


def _unary_grad_part(op: Operation, box: Box) -> Part:
    """``(dY, X) -> dX`` elementwise; a dropout's gradient needs its mask, not ``X``."""
    part = _elementwise_part(op, box)
    if not isinstance(op, GradOp) or not op.kind.is_random:
        return part
    x = op.operands[1]
    return Part(part.outs, (part.ins[0], None), {**part.attrs, **shape_only({1: extent(box)})}
                if x is not None else part.attrs, part.partial)


def _fill_part(op: Operation, box: Box) -> Part:
    return Part((box,), (), {}, (False,))


ELEMENTWISE_RULE = TrainingRule(_result_space, _elementwise_part)
UNARY_GRAD_RULE = TrainingRule(_result_space, _unary_grad_part)


# ----- add and mul: broadcast operands whose gradients sum over the broadcast axes

def _binary_space(op: Operation) -> Space:
    grad = shape_of(op.operands[0])
    reduced = {a for r in op.results for a in _reduced_axes(shape_of(r), grad)}
    return Space(grad, frozenset(reduced))


def _reduced_axes(shape: tuple[int, ...], whole: tuple[int, ...]) -> list[int]:
    """Axes of ``whole`` a broadcast operand of ``shape`` sums its gradient over."""
    lead = len(whole) - len(shape)
    return [a for a in range(len(whole))
            if whole[a] > 1 and (a < lead or shape[a - lead] == 1)]


def _binary_part(op: Operation, box: Box) -> Part:
    assert isinstance(op, GradOp)
    space = _binary_space(op)
    grad = space.extents
    inputs = op.forward_inputs
    wrt = op.wrt or tuple(range(len(op.results)))
    outs = tuple(_broadcast(box, shape_of(inputs[i])) for i in wrt)
    partial = tuple(_partial(box, space, _reduced_axes(shape_of(inputs[i]), grad)) for i in wrt)
    boxes = [_broadcast(box, shape_of(v)) for v in inputs]
    if op.kind.name == "mul":
        return Part(outs, (box, *boxes), {}, partial)
    placeholders = {1 + k: extent(b) for k, b in enumerate(boxes)}
    return Part(outs, (box, *(None for _ in boxes)), shape_only(placeholders), partial)


BINARY_RULE = TrainingRule(_binary_space, _binary_part)


# ----- convolution

def _window(op: Operation) -> Window:
    kernel = _ints(op, "kernel") or (1, 1)
    stride = _ints(op, "stride") or kernel
    dilation = _ints(op, "dilation") or (1, 1)
    pad = _ints(op, "padding") or (0, 0, 0, 0)
    return Window((kernel[0], kernel[1]), (stride[0], stride[1]), (dilation[0], dilation[1]),
                  (pad[0], pad[1], pad[2], pad[3]))


def _groups(op: Operation, channels: int) -> int:
    return channels if _flag(op, "depthwise") else max(1, _int(op, "groups", 1))


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
    win = _window(op)
    rows, top, bottom = axis_input(Interval(*hb), h, win, 0)
    cols, left, right = axis_input(Interval(*wb), w, win, 1)
    attrs: dict[str, Attribute] = {"padding": DenseIntsAttr((top, bottom, left, right)),
                                   "out": IntAttr(kb[1] - kb[0]), "depthwise": BoolAttr(False)}
    channels = (0, c) if groups == 1 else _units(gb, c // groups)
    if groups > 1:
        attrs["groups"] = IntAttr(gb[1] - gb[0])
    placeholders = {2: (kb[1] - kb[0], *o_w[1:]), **_bias_placeholder(op, 3, (kb[1] - kb[0],))}
    attrs.update(shape_only(placeholders))
    ins: list[Box | None] = [(nb, kb, hb, wb), (nb, channels, (rows.start, rows.stop), (cols.start, cols.stop)), None]
    ins += [None for _ in op.operands[3:]]
    space = _conv_weight_space(op)
    partial = _partial(box, space, (1, 2, 3))
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
    kernel = _ints(op, "kernel") or (1, 1)
    stride = _ints(op, "stride") or kernel
    pad = _ints(op, "padding") or (0, 0, 0, 0)
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
    partial = _partial(box, _linear_weight_space(op), range(1, len(box)))
    outs = (((0, inputs), outb), *((outb,) for _ in op.results[1:]))
    return Part(outs, tuple(ins), shape_only(placeholders), (partial,) * len(outs))


# ----- rows: norms over the last axis, softmax, cross-entropy

def _row_space(op: Operation) -> Space:
    shape = shape_of(op.results[0])
    return Space(shape, fixed=frozenset({len(shape) - 1}))


def _channel_space(op: Operation) -> Space:
    """A batchnorm's gradient over channel boxes (statistics are per channel)."""
    shape = shape_of(op.operands[0])
    return Space(shape, fixed=frozenset(a for a in range(len(shape)) if a != 1))


def _batchnorm_part(op: Operation, box: Box) -> Part:
    """Some channels of a batchnorm's gradient: their boxes of ``dY`` and ``X`` and their
    scale (the shift by shape); the weight role gives those channels' scale and shift
    gradients."""
    channels = box[1]
    ins: tuple[Box | None, ...] = (box, box, (channels,), None)
    attrs = shape_only({3: (channels[1] - channels[0],)})
    if isinstance(op, GradOp) and op.role == "weight":
        return Part(tuple((channels,) for _ in op.results), ins, attrs, (False,) * len(op.results))
    return Part((box,), ins, attrs, (False,))


def _layernorm_input_part(op: Operation, box: Box) -> Part:
    """``dX`` of some rows: they need their own rows of ``dY`` and ``X`` and all of gamma."""
    gamma = shape_of(op.operands[2])
    ins: tuple[Box | None, ...] = (box, box, full(gamma), None)
    return Part((box,), ins, shape_only({3: gamma}), (False,))


def _layernorm_weight_space(op: Operation) -> Space:
    x = shape_of(op.operands[0])
    return Space(x, frozenset(range(len(x) - 1)), frozenset({len(x) - 1}))


def _layernorm_weight_part(op: Operation, box: Box) -> Part:
    gamma = shape_of(op.operands[2])
    partial = _partial(box, _layernorm_weight_space(op), range(len(box) - 1))
    outs = tuple(full(gamma) for _ in op.results)
    return Part(outs, (box, box, full(gamma), None), shape_only({3: gamma}), (partial,) * len(outs))


def _softmax_space(op: Operation) -> Space:
    shape = shape_of(op.results[0])
    axis = _int(op, "axis", -1) % len(shape)
    return Space(shape, fixed=frozenset({axis}))


def _softmax_part(op: Operation, box: Box) -> Part:
    return Part((box,), (box, box), mask_attrs(op, box), (False,))


def _cross_entropy_space(op: Operation) -> Space:
    return _row_space(op)


def _cross_entropy_part(op: Operation, box: Box) -> Part:
    """``dlogits`` of some rows: the loss gradient scales by one over every position."""
    labels = shape_of(op.operands[2])
    count = math.prod(labels) if labels else 1
    ins: tuple[Box | None, ...] = ((), box, box[:-1])
    return Part((box,), ins, {"count": IntAttr(count)}, (False,))


# ----- data movement: flatten, reshape, concat

def _reshape_space(op: Operation) -> Space:
    """``dX`` over the leading axes the reshape keeps (the rest whole)."""
    shape = shape_of(op.results[0])
    keep = kept_prefix(shape, shape_of(op.operands[0]))
    return Space(shape, fixed=frozenset(range(keep, len(shape))))


def _reshape_part(op: Operation, box: Box) -> Part:
    """``dX`` over a box of the kept axes: that box of ``dY`` reshaped back (``X`` by shape)."""
    grad = shape_of(op.operands[0])
    keep = kept_prefix(shape_of(op.results[0]), grad)
    g_box = (*box[:keep], *full(grad[keep:]))
    return Part((box,), (g_box, None), shape_only({1: extent(box)}), (False,))


def _transpose_part(op: Operation, box: Box) -> Part:
    """``dX`` over ``box``: the permuted box of ``dY`` (``X`` by shape)."""
    perm = _ints(op, "perm")
    g_box = tuple(box[p] for p in perm)
    return Part((box,), (g_box, None), shape_only({1: extent(box)}), (False,))


def _slice_space(op: Operation) -> Space:
    shape = shape_of(op.results[0])
    return Space(shape, fixed=frozenset({_int(op, "axis") % len(shape)}))


def _slice_part(op: Operation, box: Box) -> Part:
    """``dX`` over ``box`` (the sliced axis whole): ``dY`` zero-padded back."""
    axis = _int(op, "axis") % len(box)
    g_box = with_axis(box, axis, (0, shape_of(op.operands[0])[axis]))
    return Part((box,), (g_box, None), shape_only({1: extent(box)}), (False,))


def _matmul_space(op: Operation) -> Space:
    """(*batch, M, N, K): ``dA`` sums over N, ``dB`` over M; batch axes are parallel when
    both operands have them all (else the broadcast one's gradient sums over them)."""
    a, b = shape_of(op.operands[1]), shape_of(op.operands[2])
    grad = shape_of(op.operands[0])
    batch = grad[:-2]
    full_batch = a[:-2] == batch and b[:-2] == batch
    k = a[-1]
    fixed = frozenset() if full_batch else frozenset(range(len(batch)))
    return Space((*grad, k), frozenset({len(batch), len(batch) + 1}), fixed)


def _matmul_part(op: Operation, box: Box) -> Part:
    """``dA = dY B^T`` over (batch, m, k) and ``dB = A^T dY`` over (batch, k, n) from the
    box (batch, m, n, k): partial over n and over m respectively."""
    assert isinstance(op, GradOp)
    lead, (m, n, k) = box[:-3], box[-3:]
    transposed = _flag(op, "transpose_b")
    space = _matmul_space(op)
    a_box: Box = (*lead, m, k)
    b_box: Box = (*lead, n, k) if transposed else (*lead, k, n)
    wrt = op.wrt or (0, 1)
    outs = tuple(a_box if i == 0 else b_box for i in wrt)
    partial = tuple(_partial(box, space, [len(lead) + 1]) if i == 0 else _partial(box, space, [len(lead)])
                    for i in wrt)
    return Part(outs, ((*lead, m, n), a_box, b_box), {}, partial)


def _concat_space(op: Operation) -> Space:
    grad = shape_of(op.operands[0])
    axis = _int(op, "axis") % len(grad)
    return Space(grad, fixed=frozenset({axis}))


def _concat_part(op: Operation, box: Box) -> Part:
    """Every input's gradient over ``box`` (the concatenation axis whole), cut from ``dY``."""
    assert isinstance(op, GradOp)
    axis = _int(op, "axis") % len(box)
    inputs = op.forward_inputs
    boxes = [with_axis(box, axis, (0, shape_of(v)[axis])) for v in inputs]
    wrt = op.wrt or tuple(range(len(op.results)))
    placeholders = {1 + k: extent(b) for k, b in enumerate(boxes)}
    return Part(tuple(boxes[i] for i in wrt), (box, *(None for _ in inputs)), shape_only(placeholders),
                (False,) * len(wrt))


# ----- embedding

def _embedding_space(op: Operation) -> Space:
    table = shape_of(op.results[0])
    ids = shape_of(op.operands[1])
    return Space((*table, *ids), frozenset(range(2, 2 + len(ids))))


def _embedding_part(op: Operation, box: Box) -> Part:
    """Rows ``vocab`` x columns ``dim`` of the table gradient from the tokens ``box[2:]``."""
    vocab, dim, tokens = box[0], box[1], box[2:]
    attrs = {"row_offset": IntAttr(vocab[0]), "vocab": IntAttr(vocab[1] - vocab[0]),
             "dim": IntAttr(dim[1] - dim[0]), **shape_only({2: (vocab[1] - vocab[0], dim[1] - dim[0])})}
    partial = _partial(box, _embedding_space(op), range(2, len(box)))
    return Part(((vocab, dim),), ((*tokens, dim), tokens, None), attrs, (partial,))


RULES: Mapping[str, TrainingRule] = {
    **{f"{kind}_grad_input": UNARY_GRAD_RULE for kind in ("relu", "gelu", "silu", "sigmoid", "tanh", "dropout")},
    "add_grad_input": BINARY_RULE, "mul_grad_input": BINARY_RULE,
    "conv2d_grad_input": TrainingRule(_conv_input_space, _conv_input_part),
    "conv2d_grad_weight": TrainingRule(_conv_weight_space, _conv_weight_part),
    "max_pool2d_grad_input": TrainingRule(_pool_space, _pool_input_part),
    "avg_pool2d_grad_input": TrainingRule(_pool_space, _pool_input_part),
    "global_avg_pool_grad_input": TrainingRule(_global_pool_space, _global_pool_part),
    "linear_grad_input": TrainingRule(_linear_input_space, _linear_input_part),
    "linear_grad_weight": TrainingRule(_linear_weight_space, _linear_weight_part),
    "layernorm_grad_input": TrainingRule(_row_space, _layernorm_input_part),
    "layernorm_grad_weight": TrainingRule(_layernorm_weight_space, _layernorm_weight_part),
    "softmax_grad_input": TrainingRule(_softmax_space, _softmax_part),
    "batchnorm_grad_input": TrainingRule(_channel_space, _batchnorm_part),
    "batchnorm_grad_weight": TrainingRule(_channel_space, _batchnorm_part),
    "cross_entropy_grad_input": TrainingRule(_cross_entropy_space, _cross_entropy_part),
    "flatten_grad_input": TrainingRule(_reshape_space, _reshape_part),
    "reshape_grad_input": TrainingRule(_reshape_space, _reshape_part),
    "transpose_grad_input": TrainingRule(_result_space, _transpose_part),
    "slice_grad_input": TrainingRule(_slice_space, _slice_part),
    "matmul_grad_input": TrainingRule(_matmul_space, _matmul_part),
    "concat_grad_input": TrainingRule(_concat_space, _concat_part),
    "embedding_grad_weight": TrainingRule(_embedding_space, _embedding_part),
}
"""Training op name (without ``graph.``) -> its rule (accumulations, fills and optimizer
updates are elementwise: :func:`rule_of`)."""


def rule_of(op: Operation) -> TrainingRule | None:
    """The rule of a training op, None when it runs whole on one tile."""
    if isinstance(op, AccumulateOp | UpdateOp):
        return ELEMENTWISE_RULE
    if isinstance(op, FillOp):
        return TrainingRule(_result_space, _fill_part)
    if not isinstance(op, GradOp):
        return None
    name = op.name.partition(".")[2]
    if name.startswith("batchnorm") and _flag(op, "running"):
        return None
    return RULES.get(name)


# ----- choosing parts and steps

def footprint(part: Part, elem_bytes: int) -> int:
    """Bytes a part reads and writes (operands given by shape only take none)."""
    return elem_bytes * sum(volume(b) for b in (*part.outs, *part.ins) if b is not None)


def _grid(box: Box, counts: Mapping[int, int], inner: frozenset[int] = frozenset()) -> list[Box]:
    """``box`` cut ``counts[axis]`` ways along each axis, the ``inner`` axes varying fastest
    (so the steps of one window of the parallel axes are consecutive)."""
    boxes = [box]
    for axis, count in sorted(counts.items(), key=lambda item: (item[0] in inner, item[0])):
        boxes = [with_axis(b, axis, span) for b in boxes for span in split_span(*b[axis], count)]
    return boxes


@dataclass(frozen=True, slots=True)
class Division:
    """Boxes of an op's space (one per tile or per step) and their parts."""

    boxes: tuple[Box, ...]
    parts: tuple[Part, ...]


def divide(op: Operation, rule: TrainingRule, box: Box, counts: Mapping[int, int]) -> Division:
    """``box`` of ``op``'s space cut by ``counts``, reductions innermost, and its parts."""
    boxes = tuple(_grid(box, counts, rule.space(op).reductions))
    return Division(boxes, tuple(rule.part(op, b) for b in boxes))


def partial_bytes(part: Part, elem_bytes: int) -> int:
    """Bytes of the part's results that are partial sums (a reduction moves them again)."""
    return elem_bytes * sum(volume(b) for b, flag in zip(part.outs, part.partial, strict=True) if flag)


def training_divisions(op: Operation, tiles: int) -> list[Division]:
    """The candidate divisions of ``op`` over at most ``tiles`` tiles (empty: it has no
    rule): whole, and along each splittable axis alone, keeping those that reach at least
    half as many tiles as the widest."""
    rule = rule_of(op)
    if rule is None:
        return []
    space = rule.space(op)
    whole = space.whole
    options = [divide(op, rule, whole, {})]
    for axis in space.splittable():
        options.append(divide(op, rule, whole, {axis: min(tiles, space.extents[axis])}))
    widest = max(len(o.boxes) for o in options)
    return [o for o in options if len(o.boxes) >= max(1, widest // 2)]


def training_parts(op: Operation, tiles: int, elem_bytes: int) -> Division | None:
    """``op`` divided over at most ``tiles`` tiles (None: it has no rule): the candidate of
    :func:`training_divisions` whose busiest part moves the fewest bytes (its partial sums
    count twice: the reduction moves them again), more parts on ties."""
    options = training_divisions(op, tiles)
    if not options:
        return None
    return min(options, key=lambda o: (max(footprint(p, elem_bytes) + partial_bytes(p, elem_bytes)
                                           for p in o.parts), -len(o.boxes)))


def training_steps(op: Operation, box: Box, budget: int, elem_bytes: int) -> Division:
    """One tile's part (``box`` of the space) cut into steps whose operands and results fit
    ``budget`` bytes: the axis whose halving shrinks the footprint most is cut further,
    until the steps fit or no axis can be cut."""
    rule = rule_of(op)
    assert rule is not None
    space = rule.space(op)
    counts: dict[int, int] = {}
    current = divide(op, rule, box, counts)
    while budget and max(footprint(p, elem_bytes) for p in current.parts) > budget:
        best: tuple[int, Division] | None = None
        for axis in space.splittable():
            size = box[axis][1] - box[axis][0]
            if counts.get(axis, 1) >= size or _second_reduction(op, space, counts, axis):
                continue
            trial = divide(op, rule, box, {**counts, axis: min(size, counts.get(axis, 1) * 2)})
            worst = max(footprint(p, elem_bytes) for p in trial.parts)
            if best is None or worst < best[0]:
                best = (worst, trial)
        if best is None:
            break
        current = best[1]
        counts = _counts_of(current, box)
    return current


def _second_reduction(op: Operation, space: Space, counts: Mapping[int, int], axis: int) -> bool:
    """Whether cutting ``axis`` would split a second reduction axis of an op with several
    results: its results sum over different axes (a matmul's ``dA`` over ``n``, ``dB`` over
    ``m``), so with two of them cut some result's window would come back after closing."""
    if len(op.results) < 2 or axis not in space.reductions:
        return False
    return any(a in space.reductions and a != axis and n > 1 for a, n in counts.items())


def _counts_of(division: Division, box: Box) -> dict[int, int]:
    """How many spans each axis of ``box`` is cut into in ``division``."""
    found: dict[int, int] = {}
    for axis in range(len(box)):
        spans = {b[axis] for b in division.boxes}
        if len(spans) > 1:
            found[axis] = len(spans)
    return found

