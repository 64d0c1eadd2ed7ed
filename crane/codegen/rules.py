"""How one graph op's work divides over tiles: the boxes each part reads and writes.

:func:`forward_op_parts` divides an op's output (for one item: a batch span of the graph tensors)
over ``n`` tiles along the first dimension that gives every tile work, in the order the
op allows: the batch, then the output channel, then space (conv-like ops take a
rows x cols grid from :func:`crane.tiling.cores.spatial_grid`); when none reaches ``n``
parts it takes the one with the most, and an op that cannot be split is one part (run on
the first tile). Each :class:`Part` says which box of every operand it reads (a window op
reads its halo; a channel-split dense conv reads every input channel and its slice of the
kernel) and the tile-level attributes it runs with (border padding, the local ``out``).

``linear`` and ``matmul`` split their rows (batch, then tokens) before their output
columns: numpy rounds a column slice of a product differently from the whole product,
a slice of several rows identically (a single row goes through a vector kernel and may
round differently), and the simulator is checked against the unsplit reference.

Whole-batch ops (batchnorm's batch statistics, losses) are split by channel only, or not at
all (a batchnorm with running statistics splits like an
elementwise op); batchnorm's gradients by channel too. (The emitter runs batch-statistics
batchnorms on the boxes the tiles already hold instead, ``crane.codegen.statistics``;
these splits remain for a forward batchnorm whose input is not on chip in its phase.) Other gradients
split by batch; their results that are not per sample (weight gradients) are partial
sums (``Part.partial``) which codegen reduces.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from crane.codegen.boxes import Box, extent, full, split_span, volume, with_axis
from crane.codegen.ownership import CodegenError
from crane.dialects.graph import LayerOp
from crane.dialects.graph_grad import AccumulateOp, GradOp, UpdateOp
from crane.dialects.layers.definition import Lowering
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr, IntAttr
from crane.ir.core import Operation, Value
from crane.ir.types import TensorType
from crane.tiling.cores import spatial_grid
from crane.tiling.layers import Window
from crane.tiling.regions import Interval, axis_input

ELEMENTWISE = frozenset({Lowering.UNARY, Lowering.BINARY})
"""Lowering classes whose parts read their own box of every operand."""
WINDOW = frozenset({Lowering.CONV, Lowering.POOL})
WHOLE_WEIGHT_GRADIENT = frozenset({Lowering.ATTENTION})
"""Classes whose weight gradient is not split by batch: attention's key-bias gradient is zero
in exact arithmetic (softmax ignores a constant shift), so partial sums added in another
order than the reference change its rounding noise, which Adam's normalisation amplifies."""


@dataclass(frozen=True, slots=True)
class Part:
    """One tile's share of an op: the boxes it writes and reads, and its attributes."""

    outs: tuple[Box, ...]
    ins: tuple[Box | None, ...]
    """Per operand the box read (None: the operand is not read, e.g. a later chunk's bias)."""
    attrs: Mapping[str, Attribute] = field(default_factory=dict)
    partial: tuple[bool, ...] = ()
    """Per result: a partial sum over the batch that must be added to the other parts'."""


Need = Callable[[Operation, Box], tuple[tuple[Box, ...], dict[str, Attribute]]]


def shape_of(value: Value) -> tuple[int, ...]:
    return tuple(value.type.shape) if isinstance(value.type, TensorType) else ()


def whole_batch(op: Operation, training: bool) -> bool:
    """Whether the op needs every sample at once (so a block holding it cannot pipeline)."""
    return isinstance(op, LayerOp) and op.needs_whole_batch


def mask_attrs(op: Operation, out: Box) -> dict[str, Attribute]:
    """What an op run on the box ``out`` of its tensor needs to know of the box's place: a
    random op (dropout, or its gradient) draws that box of the whole tensor's mask
    (``crane.exec.forward.dropout_keep``); a causal softmax masks by the rows' query
    index; other ops need nothing."""
    shape = shape_of(op.results[0]) if op.results else ()
    if not isinstance(op, LayerOp | GradOp) or not out or out == full(shape):
        return {}
    if op.kind.is_random:
        return {"mask_shape": DenseIntsAttr(shape),
                "mask_offset": DenseIntsAttr(tuple(a for a, _ in out))}
    causal = op.attributes.get("causal")
    if isinstance(causal, BoolAttr) and causal.value and len(out) >= 2:
        return {"query_offset": IntAttr(out[-2][0])}
    return {}


def running_statistics(op: Operation) -> bool:
    """A batchnorm (or its gradient) normalising with its running statistics (per sample,
    like an affine op)."""
    flag = op.attributes.get("running")
    return isinstance(flag, BoolAttr) and flag.value


def span_box(value: Value, span: tuple[int, int], batch: int) -> Box:
    """The part of ``value`` an item over batch ``span`` touches (all of a non-batch value)."""
    shape = shape_of(value)
    box = full(shape)
    return with_axis(box, 0, span) if shape and shape[0] == batch else box


def _broadcast(out: Box, shape: tuple[int, ...]) -> Box:
    """The box of an operand of ``shape`` a numpy-broadcasting op reads for ``out``."""
    tail = out[len(out) - len(shape):] if shape else ()
    return tuple((0, 1) if d == 1 else pair for d, pair in zip(shape, tail, strict=True))


def _elementwise(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    return tuple(_broadcast(out, shape_of(v)) for v in op.operands), mask_attrs(op, out)


def ints_attr(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def int_attr(op: Operation, name: str, default: int = 0) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else default


def _window(op: Operation) -> Window:
    kernel = ints_attr(op, "kernel") or (1, 1)
    return Window((kernel[0], kernel[1]), _pair(op, "stride"), _pair(op, "dilation"),
                  _pad(op))


def _pair(op: Operation, name: str) -> tuple[int, int]:
    values = ints_attr(op, name) or (1, 1)
    return values[0], values[1]


def _pad(op: Operation) -> tuple[int, int, int, int]:
    values = ints_attr(op, "padding") or (0, 0, 0, 0)
    return values[0], values[1], values[2], values[3]


def _spatial(op: Operation, out: Box) -> tuple[tuple[int, int], tuple[int, int], dict[str, Attribute]]:
    """Input rows and cols (clipped) and the border padding of a window op's output box."""
    rows, cols, padding = window_input(op, _window(op), out[2], out[3], shape_of(op.operands[0])[2:4])
    return rows, cols, {"padding": DenseIntsAttr(padding)}


def window_input(op: Operation, window: Window, out_rows: tuple[int, int], out_cols: tuple[int, int],
                 size: tuple[int, ...]) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int, int, int]]:
    """The input rows and cols (clipped to ``size``) that the outputs over ``out_rows`` x
    ``out_cols`` of ``op``'s ``window`` read, and the border padding (top, bottom, left,
    right) they see; a ``CodegenError`` at the op when those windows read only padding."""
    rows, top, bottom = axis_input(Interval(*out_rows), size[0], window, 0)
    cols, left, right = axis_input(Interval(*out_cols), size[1], window, 1)
    if rows.stop <= rows.start or cols.stop <= cols.start:
        # A tile would load an empty input buffer; spatial-tile refuses such grids the same way.
        raise CodegenError(f"the part of this op over output rows {out_rows[0]}..{out_rows[1] - 1}, cols "
                           f"{out_cols[0]}..{out_cols[1] - 1} reads only padding (its windows see no input); "
                           f"codegen cannot run it: use padding below the kernel extent", op)
    return (rows.start, rows.stop), (cols.start, cols.stop), (top, bottom, left, right)


def conv_groups(op: Operation) -> int:
    """The group count of a convolution (a depthwise one has one group per input channel)."""
    if bool(getattr(op.attributes.get("depthwise"), "value", False)):
        return shape_of(op.operands[0])[1]
    return max(1, int_attr(op, "groups", 1))


def channel_unit(op: Operation) -> int:
    """Output channels per group of a grouped convolution (1 otherwise): a part's output
    channels must be whole groups, which then read their own input channels only."""
    groups = conv_groups(op) if isinstance(op, LayerOp) and op.kind.lowering is Lowering.CONV else 1
    return shape_of(op.results[0])[1] // groups if groups > 1 else 1


def _conv(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """A box of a convolution's output: for a grouped one (whole groups of output
    channels, see :func:`channel_unit`) the input channels of those groups and their count."""
    x, w = shape_of(op.operands[0]), shape_of(op.operands[1])
    rows, cols, attrs = _spatial(op, out)
    groups, unit = conv_groups(op), channel_unit(op)
    k0, k1 = out[1]
    if groups > 1 and (k0 % unit or k1 % unit):
        raise ValueError(f"output channels {k0}:{k1} of a convolution with {groups} groups "
                         f"of {unit} are not whole groups")
    per_group = x[1] // groups
    channels = (0, x[1]) if groups == 1 else (k0 // unit * per_group, k1 // unit * per_group)
    ins: list[Box] = [(out[0], channels, rows, cols), (out[1], (0, w[1]), (0, w[2]), (0, w[3]))]
    ins += [(out[1],) for _ in op.operands[2:]]
    attrs["out"] = IntAttr(k1 - k0)
    if groups > 1:  # a part is a convolution over its own groups
        attrs["groups"] = IntAttr((k1 - k0) // unit)
        attrs["depthwise"] = BoolAttr(False)
    return tuple(ins), attrs


def aligned_spans(start: int, stop: int, parts: int, unit: int = 1) -> list[tuple[int, int]]:
    """``split_span`` in whole multiples of ``unit`` (``start`` and ``stop`` being ones)."""
    if unit <= 1:
        return split_span(start, stop, parts)
    return [(a * unit, b * unit) for a, b in split_span(start // unit, stop // unit, parts)]


def _pool(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    rows, cols, attrs = _spatial(op, out)
    if "ceil_mode" in op.attributes:
        attrs["ceil_mode"] = BoolAttr(False)  # the patch is padded to exactly its windows
    return ((out[0], out[1], rows, cols),), attrs


def _global_pool(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    x = shape_of(op.operands[0])
    return ((out[0], out[1], *full(x[2:])),), {}


def _channel_norm(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    return (out, *((out[1],) for _ in op.operands[1:])), {}


def _same_weights_full(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    return (out, *(full(shape_of(v)) for v in op.operands[1:])), mask_attrs(op, out)


def _linear(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    x, w = shape_of(op.operands[0]), shape_of(op.operands[1])
    ins: list[Box] = [(*out[:-1], (0, x[-1])), ((0, w[0]), out[-1])]
    ins += [(out[-1],) for _ in op.operands[2:]]
    return tuple(ins), {"out": IntAttr(out[-1][1] - out[-1][0])}


def _matmul(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    a, b = shape_of(op.operands[0]), shape_of(op.operands[1])
    transposed = bool(getattr(op.attributes.get("transpose_b"), "value", False))
    lead = out[:-2]
    a_box = (*_broadcast(lead, a[:-2]), out[-2], (0, a[-1]))
    n_box, k_box = out[-1], (0, b[-1] if transposed else b[-2])
    b_tail = (n_box, k_box) if transposed else (k_box, n_box)
    return (a_box, (*_broadcast(lead, b[:-2]), *b_tail)), {}


def _batch_only(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """Inputs read whole except their batch axis (attention, reshape, flatten)."""
    inputs = op.inputs if isinstance(op, LayerOp) else op.operands
    batch = shape_of(op.results[0])[0] if shape_of(op.results[0]) else 0
    boxes = []
    for v in op.operands:
        shape = shape_of(v)
        per_sample = v in inputs and shape and shape[0] == batch
        boxes.append(with_axis(full(shape), 0, out[0]) if per_sample else full(shape))
    return tuple(boxes), {}


def kept_prefix(before: tuple[int, ...], after: tuple[int, ...]) -> int:
    """How many leading axes a reshape keeps (equal sizes): a box over them is the same
    elements before and after it (row-major order)."""
    count = 0
    for a, b in zip(before, after, strict=False):
        if a != b:
            break
        count += 1
    return min(count, len(before) - 1, len(after) - 1)


def _reshape(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """A box over the kept leading axes: the same box of the input, whole beyond them."""
    x = shape_of(op.operands[0])
    keep = kept_prefix(x, shape_of(op.results[0]))
    box = (*out[:keep], *full(x[keep:]))
    attrs: dict[str, Attribute] = {"shape": DenseIntsAttr(extent(out))} if "shape" in op.attributes else {}
    return (box, *(full(shape_of(v)) for v in op.operands[1:])), attrs


def _embedding(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """Ids of the box's tokens and the table's columns of its dims (every row: which rows
    the ids pick is known only when the program runs)."""
    vocab = shape_of(op.operands[1])[0]
    return (out[:-1], ((0, vocab), out[-1])), {"dim": IntAttr(out[-1][1] - out[-1][0])}


def _transpose(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    perm = ints_attr(op, "perm")
    box = [(0, 0)] * len(out)
    for i, p in enumerate(perm):
        box[p] = out[i]
    return (tuple(box),), {}


def _along(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """slice and concat: every input whole along ``axis``, the out box elsewhere."""
    axis = int_attr(op, "axis") % len(out)
    return tuple(with_axis(out, axis, (0, shape_of(v)[axis])) for v in op.operands), {}


def _whole(op: Operation, out: Box) -> tuple[tuple[Box, ...], dict[str, Attribute]]:
    """Every operand whole (an op run as one part)."""
    return tuple(full(shape_of(v)) for v in op.operands), {}


NEEDS: Mapping[Lowering, Need] = {
    Lowering.UNARY: _elementwise, Lowering.BINARY: _elementwise,
    Lowering.CONV: _conv, Lowering.POOL: _pool, Lowering.GLOBAL_POOL: _global_pool,
    Lowering.CHANNEL_NORM: _channel_norm, Lowering.LAST_AXES_NORM: _same_weights_full,
    Lowering.AXIS_NORM: _same_weights_full, Lowering.LINEAR: _linear,
    Lowering.MATMUL: _matmul, Lowering.ATTENTION: _batch_only, Lowering.RESHAPE: _reshape,
    Lowering.GATHER: _embedding, Lowering.PERMUTE: _transpose, Lowering.ALONG_AXIS: _along,
    Lowering.WHOLE: _whole,
}
"""What a part of an op of each lowering class reads, given the box it writes."""


def split_axes(op: Operation, training: bool) -> tuple[tuple[int, ...], ...]:
    """Candidate splits of a forward op's output, best first: one axis, or a spatial grid."""
    rank = len(shape_of(op.results[0])) if op.results else 0
    if not isinstance(op, LayerOp):
        return tuple((a,) for a in range(rank))
    lowering = op.kind.lowering
    if whole_batch(op, training):
        return ((1,),) if lowering is Lowering.CHANNEL_NORM else ()
    if lowering in ELEMENTWISE or lowering in (Lowering.PERMUTE, Lowering.CHANNEL_NORM):
        return tuple((a,) for a in range(rank))
    if lowering in WINDOW:
        return ((0,), (1,), (2, 3))
    if lowering is Lowering.GLOBAL_POOL:
        return ((0,), (1,))
    return _other_axes(op, lowering, rank)


def _other_axes(op: Operation, lowering: Lowering, rank: int) -> tuple[tuple[int, ...], ...]:
    if lowering is Lowering.LAST_AXES_NORM:
        weight_rank = len(shape_of(op.operands[1])) if len(op.operands) > 1 else 1
        return tuple((a,) for a in range(rank - weight_rank))
    if lowering in (Lowering.AXIS_NORM, Lowering.ALONG_AXIS):
        axis = int_attr(op, "axis", -1) % rank
        return tuple((a,) for a in range(rank) if a != axis)
    if lowering in (Lowering.LINEAR, Lowering.MATMUL):
        return (*((a,) for a in range(rank - 1)), (rank - 1,))
    if lowering is Lowering.GATHER:  # by the table's columns first: read once in all
        return ((rank - 1,), *((a,) for a in range(rank - 1)))
    if lowering is Lowering.ATTENTION:
        return ((0,),)
    if lowering is Lowering.RESHAPE:
        keep = kept_prefix(shape_of(op.operands[0]), shape_of(op.results[0]))
        return tuple((a,) for a in range(keep))
    assert lowering is Lowering.WHOLE, f"no split axes for {lowering}"
    return ()


def _parts_along(out: Box, axes: tuple[int, ...], n: int, unit: int = 1) -> list[Box]:
    if len(axes) == 1:
        step = unit if axes[0] == 1 else 1
        return [with_axis(out, axes[0], s) for s in aligned_spans(*out[axes[0]], n, step)]
    hw = extent(out)[2:4]
    rows, cols = spatial_grid((hw[0], hw[1]), n)
    return [with_axis(with_axis(out, 2, r), 3, c)
            for r in split_span(*out[2], rows) for c in split_span(*out[3], cols)]


def _capacity(out: Box, axes: tuple[int, ...], n: int, unit: int = 1) -> int:
    if len(axes) == 1:
        return extent(out)[axes[0]] // (unit if axes[0] == 1 else 1)
    hw = extent(out)[2:4]
    try:
        spatial_grid((hw[0], hw[1]), n)
    except ValueError:
        return 1
    return n


def choose(out: Box, candidates: Sequence[tuple[int, ...]], n: int, unit: int = 1) -> list[Box]:
    """Output boxes of the first candidate split reaching ``n`` parts (else the widest);
    channel (axis 1) splits in whole multiples of ``unit``."""
    if n <= 1 or not candidates:
        return [out]
    widths = [min(n, _capacity(out, axes, n, unit)) for axes in candidates]
    best = next((k for k, w in enumerate(widths) if w >= n), widths.index(max(widths)))
    if widths[best] <= 1:
        return [out]
    return _parts_along(out, candidates[best], widths[best], unit)


def footprint(part: Part, elem_bytes: int = 4) -> int:
    """Bytes of the boxes one part reads and writes."""
    return elem_bytes * sum(volume(b) for b in (*part.outs, *part.ins) if b is not None)


def forward_op_parts(op: LayerOp, span: tuple[int, int], batch: int, n: int,
                  training: bool, budget: int = 0, elem_bytes: int = 4) -> list[Part]:
    """The parts of a forward layer op over ``n`` tiles for the item over ``span``.

    With a ``budget`` (bytes), a split whose largest part reads and writes more than that
    gives way to the next candidate (in the usual order) whose parts fit, else to the one
    with the smallest parts.
    """
    out = span_box(op.results[0], span, batch)
    if op.kind.is_loss and n > 1:
        return loss_parts(op, n)
    if op.kind.lowering is Lowering.WHOLE:
        ins = tuple(span_box(v, span, batch) for v in op.operands)
        return [Part((out,), ins, {}, (False,))]
    need = NEEDS[op.kind.lowering]
    candidates = split_axes(op, training)
    unit = channel_unit(op)
    options = [choose(out, candidates[k:k + 1], n, unit) for k in range(len(candidates))]
    preferred = choose(out, candidates, n, unit)
    made = [[_part(op, need, box) for box in boxes] for boxes in [preferred, *options]]
    def worst(parts: list[Part]) -> int:
        return max(footprint(p, elem_bytes) for p in parts)

    if not budget or worst(made[0]) <= budget:
        return made[0]
    fitting = [m for m in made[1:] if len(m) >= len(made[0]) and worst(m) <= budget]
    return fitting[0] if fitting else min(made, key=worst)


def loss_parts(op: LayerOp, n: int) -> list[Part]:
    """A loss over ``n`` tiles, split along its positions (the second operand's axes:
    cross-entropy's labels, mse's target): each part's loss is its positions' share of the
    mean over all ``count`` of them, a partial sum that codegen adds up to the loss. No
    tile then holds the whole prediction (GPT-2's logits are 1 MiB)."""
    positions = shape_of(op.operands[1])
    if not positions:
        return [Part(((),), tuple(full(shape_of(v)) for v in op.operands), {}, (False,))]
    classes = full(shape_of(op.operands[0])[len(positions):])
    boxes = choose(full(positions), tuple((a,) for a in range(len(positions))), n)
    count = {"count": IntAttr(math.prod(positions))}
    return [Part(((),), ((*box, *classes), box), count, (True,)) for box in boxes]


def _part(op: LayerOp, need: Need, box: Box) -> Part:
    boxes, attrs = need(op, box)
    return Part((box,), boxes, attrs, (False,))


def split_training(op: Operation, batch: int, n: int) -> list[Part]:
    """The parts of a training op (whole batch) over ``n`` tiles.

    Accumulations and optimizer updates are elementwise and split along their first axis;
    gradient ops of per-sample kinds split by batch (results that are not per sample, such
    as weight gradients, become partial sums); everything else is one part.
    """
    outs = tuple(full(shape_of(r)) for r in op.results)
    whole = Part(outs, tuple(full(shape_of(v)) for v in op.operands), {}, (False,) * len(outs))
    if isinstance(op, AccumulateOp | UpdateOp):
        first = outs[0]
        if not first:
            return [whole]
        return [Part((box,) * len(outs), tuple(_broadcast(box, shape_of(v)) for v in op.operands),
                     {}, (False,) * len(outs))
                for box in choose(first, ((0,),), n)]
    if isinstance(op, GradOp) and op.kind.lowering is Lowering.CHANNEL_NORM:
        return _channel_grad_parts(op, n) or [whole]
    if not isinstance(op, GradOp) or op.kind.is_loss or op.kind.has_batch_statistics \
            or op.kind.is_random:  # needs the whole batch: statistics, full-tensor masks
        return [whole]
    if op.role == "weight" and op.kind.lowering in WHOLE_WEIGHT_GRADIENT:
        return [whole]
    return _grad_parts(op, batch, n) or [whole]


def _channel_grad_parts(op: GradOp, n: int) -> list[Part]:
    """Batchnorm's gradients per channel slice: statistics are per channel."""
    channels = shape_of(op.grad_output)[1]
    spans = split_span(0, channels, n)
    if len(spans) <= 1:
        return []
    parts = []
    for span in spans:
        def cut(value: Value, span: tuple[int, int] = span) -> Box:
            shape = shape_of(value)
            return with_axis(full(shape), 1, span) if len(shape) > 1 else (span,)
        parts.append(Part(tuple(cut(r) for r in op.results), tuple(cut(v) for v in op.operands),
                          {}, (False,) * len(op.results)))
    return parts


def _grad_parts(op: GradOp, batch: int, n: int) -> list[Part]:
    per_sample = {op.grad_output, *op.forward_inputs}
    spans = split_span(0, batch, n)
    if len(spans) <= 1:
        return []
    parts = []
    for span in spans:
        ins = tuple(span_box(v, span, batch) if v in per_sample else full(shape_of(v))
                    for v in op.operands)
        sampled = [op.role == "input" and shape_of(r)[:1] == (batch,) for r in op.results]
        outs = tuple(span_box(r, span, batch) if s else full(shape_of(r))
                     for r, s in zip(op.results, sampled, strict=True))
        parts.append(Part(outs, ins, {}, tuple(not s for s in sampled)))
    return parts
