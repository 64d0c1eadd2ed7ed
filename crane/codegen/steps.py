"""One tile's part of a forward op, cut into steps that fit its SRAM budget.

:func:`temporal_chunks` cuts a part whose activations exceed the budget along its output
(weights that do not fit first, along the output channels); :func:`reduction_chunks` cuts
a dense conv or linear part whose kernel slice does not fit along its input channels into
partial sums, and an embedding's table along its rows. The tile runs the steps one after
another; ``crane.codegen.emit`` emits them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import permutations

from crane.codegen.boxes import Box, extent, split_span, volume, with_axis
from crane.codegen.rules import NEEDS, Need, Part, aligned_spans, channel_unit, int_attr, split_axes
from crane.dialects.graph import LayerOp
from crane.dialects.layers.definition import Lowering
from crane.ir.attributes import BoolAttr, IntAttr
from crane.ir.core import Operation

STREAM_AXES: Mapping[Lowering, tuple[int, ...]] = {
    Lowering.CONV: (2, 0, 3), Lowering.POOL: (2, 0, 3), Lowering.GLOBAL_POOL: (1, 0),
    Lowering.LINEAR: (-2, 0, -1), Lowering.BINARY: (-2, 0, -1), Lowering.UNARY: (1, 0, -1),
    Lowering.CHANNEL_NORM: (1,), Lowering.MATMUL: (-2, 0, 1, -1), Lowering.AXIS_NORM: (-2, 0, 1),
    Lowering.LAST_AXES_NORM: (-2, 0, 1), Lowering.PERMUTE: (0, 1, 2, -1),
    Lowering.RESHAPE: (0, 1, 2), Lowering.GATHER: (-1, 0, 1), Lowering.ALONG_AXIS: (0, 1, 2, -1)}
"""Lowering classes a tile may run in steps over its output, and the axes it cuts (best
first, only those the op may be split along); the other classes run each part in one step."""
WEIGHT_AXES: Mapping[Lowering, tuple[int, ...]] = {
    Lowering.CONV: (1,), Lowering.LINEAR: (-1,), Lowering.GATHER: (-1,)}
"""Output axes that cut a layer's weights: stepping along them when the weights are the
bigger operand streams each weight slice once instead of once per step (an embedding's
table by its columns: cut by its tokens, every step would stream the whole table)."""


def _activation_bytes(op: Operation, part: Part, elem_bytes: int) -> int:
    """Bytes of the part's output and its non-weight operands."""
    weights = set(op.weights) if isinstance(op, LayerOp) else set()
    boxes = [*part.outs, *(b for v, b in zip(op.operands, part.ins, strict=True)
                           if b is not None and v not in weights)]
    return elem_bytes * sum(volume(b) for b in boxes)


def _weight_bytes(op: Operation, part: Part, elem_bytes: int) -> int:
    """Bytes of the part's weights (0 for an op without any)."""
    if not isinstance(op, LayerOp) or len(part.ins) < 2:
        return 0
    weights = set(op.weights)
    return elem_bytes * sum(volume(b) for v, b in zip(op.operands, part.ins, strict=True)
                            if b is not None and v in weights)


def _weight_slices(op: LayerOp, part: Part, elem_bytes: int, budget: int) -> list[Part]:
    """The part cut along its weights' output channels into the fewest slices whose weights
    each fit ``budget`` (rounding the channels up can leave a slice of the first guess
    just over it: a slice that does not fit is cut again into input-channel chunks, whose
    copies are not kept, so the slice would stream in again for every step)."""
    axes = WEIGHT_AXES.get(op.kind.lowering, ())
    count = -(-_weight_bytes(op, part, elem_bytes) // budget)
    while True:
        slices = _cut(op, part, axes, count)
        if len(slices) < count or all(_weight_bytes(op, s, elem_bytes) <= budget for s in slices):
            return slices
        count += 1


def _unsliceable(op: LayerOp, part: Part, elem_bytes: int, budget: int) -> bool:
    """Whether even one output channel's weights of a dense conv or linear part exceed
    ``budget``: no weight slice could be kept while the steps of a slice reuse it, so the
    part runs whole in input-channel chunks (``reduction_chunks``), each weight and input
    chunk read once, instead of streaming every weight slice again for every step of its
    samples (``crane.cost.layer.input_passes`` reads the input once too)."""
    axes = WEIGHT_AXES.get(op.kind.lowering, ())
    if not axes or not _dense(op):
        return False
    channels = extent(part.outs[0])[axes[0]]
    return _weight_bytes(op, part, elem_bytes) > budget * max(1, channels)


def _dense(op: Operation) -> bool:
    """A linear, or a convolution whose every output channel reads every input channel."""
    lowering = op.kind.lowering if isinstance(op, LayerOp) else None
    return lowering is Lowering.LINEAR or (
        lowering is Lowering.CONV and int_attr(op, "groups", 1) == 1
        and not getattr(op.attributes.get("depthwise"), "value", False))


def temporal_chunks(op: Operation, part: Part, budget: int, elem_bytes: int,
                    weight_budget: int = 0, extra_outputs: int = 0,
                    whole: frozenset[int] = frozenset()) -> list[Part]:
    """A part whose activations exceed ``budget`` bytes as steps over cuts of its output.

    The tile runs the steps one after another, so the next step's operands arrive while it
    computes the current one (DMA and NoC overlap compute, as the cost model assumes) and
    only one step's operands need SRAM at a time; weights that fit ``weight_budget`` are
    fetched once and shared. Weights that do not are cut first, along the output channels,
    so each weight slice streams in once; each such step is then cut further (``_cut``) if
    its activations are still too big (the input is read again for every weight slice: the
    loop over weights is outside; ``crane.cost.layer.input_passes`` counts the slices). A
    dense part whose one output channel's weights already pass ``weight_budget`` is cut by
    its output alone (``_unsliceable``: its input-channel chunks bound the rest).
    ``extra_outputs``: output-sized buffers a step also holds (the results of ops chained
    on it, ``Emitter._run_chain``); ``whole``: output axes no step may cut (a softmax
    chained on it needs its axis whole).
    """
    lowering = op.kind.lowering if isinstance(op, LayerOp) else None
    axes = STREAM_AXES.get(lowering) if lowering is not None else None
    if not budget or lowering is None or axes is None or len(part.outs) != 1:
        return [part]
    rank = len(part.outs[0])
    axes = tuple(a for a in axes if a % rank not in whole)
    steps = [part]
    if weight_budget and isinstance(op, LayerOp) \
            and _weight_bytes(op, part, elem_bytes) > weight_budget:
        if _unsliceable(op, part, elem_bytes, weight_budget):
            return _cut(op, part, axes, -(-(1 + extra_outputs) * elem_bytes * volume(part.outs[0])
                                          // budget))
        steps = _weight_slices(op, part, elem_bytes, weight_budget)
    return [piece for step in steps for piece in _cut(
        op, step, axes, -(-(_activation_bytes(op, step, elem_bytes)
                            + extra_outputs * elem_bytes * volume(step.outs[0])) // budget))]


def _cut(op: Operation, part: Part, axes: Sequence[int], count: int) -> list[Part]:
    """``part`` cut into about ``count`` steps along ``axes`` (only axes the op may be split
    along; channels in whole groups of a grouped convolution), the cut whose steps read the
    fewest input bytes (ties: the earlier candidate). Candidates take the axes in each order,
    the first one cut into at most a few pieces (``FIRST_PIECES``, or about the square root
    of ``count``) or as many as it allows,
    the next ones as many as still wanted (a cut short of ``count`` only when none reaches
    it, then the one with the most pieces): cutting a convolution's rows finely reads each
    input row again for every window overlapping a cut, while cutting its batch, or its
    rows and columns into squarer patches, reads far fewer twice."""
    out = part.outs[0]
    order = tuple(dict.fromkeys(a % len(out) for a in axes))
    square = math.isqrt(count)  # the squarest patches, where many steps are wanted
    cuts = [c for first in permutations(order) for cap in (count, *FIRST_PIECES, square, square + 1)
            if cap <= count for squarer in (False, True)
            for c in [_counts(op, out, first, count, cap, squarer)] if c]
    if not cuts:
        return [part]
    assert isinstance(op, LayerOp)
    need = NEEDS[op.kind.lowering]
    best = min(dict.fromkeys(tuple(c.items()) for c in cuts),
               key=lambda c: _rank(op, need, out, dict(c), count))
    steps = []
    for box in _boxes(op, out, dict(best)):
        ins, attrs = need(op, box)
        steps.append(Part((box,), ins, attrs, part.partial))
    return steps


FIRST_PIECES = (2, 3, 4, 6, 8, 12, 16)
"""Pieces the first axis of a candidate cut may stop at (beside as many as it allows)."""


def _counts(op: Operation, out: Box, order: Sequence[int], count: int,
            cap: int, squarer: bool = False) -> dict[int, int]:
    """Pieces per axis when ``out`` is cut into about ``count`` along ``order``, the first
    axis cut into at most ``cap``; ``squarer``: the second into about the square root of
    what the first leaves (a batch cut first, then square patches)."""
    sizes = extent(out)
    allowed = {a for split in split_axes(op, True) for a in split}
    counts: dict[int, int] = {}
    wanted = count
    for axis in order:
        unit = channel_unit(op) if axis == 1 else 1
        room = sizes[axis] // unit
        if wanted <= 1 or axis not in allowed or room < 2:
            continue
        counts[axis] = min(wanted, room, _most_pieces(len(counts), wanted, cap, squarer))
        wanted = -(-wanted // counts[axis])
    return counts


def _most_pieces(cut_axes: int, wanted: int, cap: int, squarer: bool) -> int:
    """At most how many pieces the next axis of a candidate takes after ``cut_axes`` axes."""
    if not cut_axes:
        return cap
    if squarer and cut_axes == 1:
        return max(1, math.isqrt(wanted))
    return wanted


def _boxes(op: Operation, out: Box, counts: dict[int, int]) -> list[Box]:
    boxes = [out]
    for axis, pieces in counts.items():
        unit = channel_unit(op) if axis == 1 else 1
        boxes = [with_axis(b, axis, span) for b in boxes for span in aligned_spans(*b[axis], pieces, unit)]
    return boxes


def _rank(op: Operation, need: Need, out: Box, counts: dict[int, int],
          count: int) -> tuple[int, float]:
    """A cut's rank: short of ``count`` steps last, then the activation elements all its
    steps read. An op's input box along one output axis depends on that axis alone, so the total
    is a middle step's input times, per cut axis, the sum over its pieces of the input they
    read relative to the middle piece's (pieces may differ: 4 samples in 3 steps are 1, 1
    and 2, and a piece at an edge of a padded image reads less)."""
    spans = {axis: aligned_spans(*out[axis], pieces, channel_unit(op) if axis == 1 else 1)
             for axis, pieces in counts.items()}
    middle = out
    for axis, pieces in spans.items():
        middle = with_axis(middle, axis, pieces[len(pieces) // 2])
    base = _input_volume(op, need, middle)
    if not base:
        return -min(count, math.prod(counts.values())), 0.0
    total = float(base)
    for axis, pieces in spans.items():
        total *= sum(_input_volume(op, need, with_axis(middle, axis, span)) for span in pieces) / base
    return -min(count, math.prod(counts.values())), total


def _input_volume(op: Operation, need: Need, box: Box) -> int:
    """Elements of the activations a step of output ``box`` reads (weights, fetched once
    and shared by the steps, do not count)."""
    ins, _ = need(op, box)
    weights = set(op.weights) if isinstance(op, LayerOp) else set()
    return sum(volume(b) for v, b in zip(op.operands, ins, strict=False)
               if b is not None and v not in weights)


def reduction_chunks(op: Operation, part: Part, budget: int, elem_bytes: int) -> list[Part]:
    """A dense conv or linear part whose kernel slice exceeds ``budget`` bytes (it does not
    fit the weights' share of SRAM) as chunks of its input channels.

    Each chunk reads a slice of the input channels and the matching kernel slice and
    yields a partial sum of the part's output (the bias only in the first chunk); the
    tile adds them up one after another, so it holds one kernel chunk at a time. Such
    weights stream through (the cost model re-reads weights that do not fit for every
    sub-batch); weights that fit are fetched once and kept.
    """
    lowering = op.kind.lowering if isinstance(op, LayerOp) else None
    if lowering is Lowering.GATHER:
        return _table_chunks(part, budget, elem_bytes)
    if not budget or lowering not in (Lowering.CONV, Lowering.LINEAR) or len(part.ins) < 2:
        return [part]
    x_box, w_box = part.ins[0], part.ins[1]
    if not _dense(op) or x_box is None or w_box is None or elem_bytes * volume(w_box) <= budget:
        return [part]
    x_axis, w_axis = (1, 1) if lowering is Lowering.CONV else (len(x_box) - 1, 0)
    low, high = x_box[x_axis]
    # Neither a chunk's weights nor its input slice may pass the budget: a part run whole
    # (``_unsliceable``) holds all its samples' inputs, bigger than its weights when it has
    # more samples than channels.
    count = min(high - low, -(-elem_bytes * max(volume(w_box), volume(x_box)) // budget))
    if count <= 1:
        return [part]
    chunks = []
    for k, span in enumerate(split_span(low, high, count)):
        rest = part.ins[2:] if k == 0 else (None,) * len(part.ins[2:])
        ins = (with_axis(x_box, x_axis, span), with_axis(w_box, w_axis, span), *rest)
        attrs = dict(part.attrs) if k == 0 or not rest else {**part.attrs, "bias": BoolAttr(False)}
        chunks.append(Part(part.outs, ins, attrs, part.partial))
    return chunks


def _table_chunks(part: Part, budget: int, elem_bytes: int) -> list[Part]:
    """An embedding part whose table columns exceed ``budget`` bytes as chunks of the
    table's rows: each looks up the ids in its rows (``row_offset``), zero for the others,
    and the chunks add up to the lookup."""
    ids, table = part.ins[0], part.ins[1]
    if not budget or table is None or elem_bytes * volume(table) <= budget:
        return [part]
    rows = table[0]
    count = min(rows[1] - rows[0], -(-elem_bytes * volume(table) // budget))
    return [Part(part.outs, (ids, with_axis(table, 0, span)),
                 {**part.attrs, "row_offset": IntAttr(span[0]), "vocab": IntAttr(span[1] - span[0])},
                 part.partial)
            for span in split_span(*rows, count)]
