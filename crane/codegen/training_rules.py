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

:mod:`crane.codegen.training_division` chooses the parts: over tiles, and over the steps
of one tile. Ops without a rule run whole on one tile.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from crane.codegen.boxes import Box, extent, full, with_axis
from crane.codegen.rules import Part, int_attr, ints_attr, kept_prefix, mask_attrs, shape_of
from crane.codegen.training_space import (
    Space,
    TrainingRule,
    flag_of,
    is_partial,
    shape_only,
)
from crane.codegen.training_window_rules import WINDOW_RULES
from crane.dialects.graph_grad import AccumulateOp, FillOp, GradOp, UpdateOp
from crane.ir.attributes import IntAttr
from crane.ir.core import Operation

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
    partial = tuple(is_partial(box, space, _reduced_axes(shape_of(inputs[i]), grad)) for i in wrt)
    boxes = [_broadcast(box, shape_of(v)) for v in inputs]
    if op.kind.name == "mul":
        return Part(outs, (box, *boxes), {}, partial)
    placeholders = {1 + k: extent(b) for k, b in enumerate(boxes)}
    return Part(outs, (box, *(None for _ in boxes)), shape_only(placeholders), partial)


BINARY_RULE = TrainingRule(_binary_space, _binary_part)


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
    partial = is_partial(box, _layernorm_weight_space(op), range(len(box) - 1))
    outs = tuple(full(gamma) for _ in op.results)
    return Part(outs, (box, box, full(gamma), None), shape_only({3: gamma}), (partial,) * len(outs))


def _softmax_space(op: Operation) -> Space:
    shape = shape_of(op.results[0])
    axis = int_attr(op, "axis", -1) % len(shape)
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
    perm = ints_attr(op, "perm")
    g_box = tuple(box[p] for p in perm)
    return Part((box,), (g_box, None), shape_only({1: extent(box)}), (False,))


def _slice_space(op: Operation) -> Space:
    shape = shape_of(op.results[0])
    return Space(shape, fixed=frozenset({int_attr(op, "axis") % len(shape)}))


def _slice_part(op: Operation, box: Box) -> Part:
    """``dX`` over ``box`` (the sliced axis whole): ``dY`` zero-padded back."""
    axis = int_attr(op, "axis") % len(box)
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
    transposed = flag_of(op, "transpose_b")
    space = _matmul_space(op)
    a_box: Box = (*lead, m, k)
    b_box: Box = (*lead, n, k) if transposed else (*lead, k, n)
    wrt = op.wrt or (0, 1)
    outs = tuple(a_box if i == 0 else b_box for i in wrt)
    partial = tuple(is_partial(box, space, [len(lead) + 1]) if i == 0 else is_partial(box, space, [len(lead)])
                    for i in wrt)
    return Part(outs, ((*lead, m, n), a_box, b_box), {}, partial)


def _concat_space(op: Operation) -> Space:
    grad = shape_of(op.operands[0])
    axis = int_attr(op, "axis") % len(grad)
    return Space(grad, fixed=frozenset({axis}))


def _concat_part(op: Operation, box: Box) -> Part:
    """Every input's gradient over ``box`` (the concatenation axis whole), cut from ``dY``."""
    assert isinstance(op, GradOp)
    axis = int_attr(op, "axis") % len(box)
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
    partial = is_partial(box, _embedding_space(op), range(2, len(box)))
    return Part(((vocab, dim),), ((*tokens, dim), tokens, None), attrs, (partial,))


RULES: Mapping[str, TrainingRule] = {
    **{f"{kind}_grad_input": UNARY_GRAD_RULE for kind in ("relu", "gelu", "silu", "sigmoid", "tanh", "dropout")},
    "add_grad_input": BINARY_RULE, "mul_grad_input": BINARY_RULE,
    **WINDOW_RULES,
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
    if name.startswith("batchnorm") and flag_of(op, "running"):
        return None
    return RULES.get(name)
