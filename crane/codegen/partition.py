"""A layer's output split the way the cost model splits it: SET's factorisation over tiles.

The scheduler prices one sub-batch of a layer on ``T`` tiles with the best
``kb x kk x kh x kw`` factorisation of ``(sub-batch, K, H, W)`` (``crane.cost.utilisation``,
Crane Eq. 16). Codegen divides the layer's main op the same way, so the compute each
tile does (and the data it reads) is what the schedule was costed with. The factors map
to output axes by rank, as ``crane.schedule.from_graph`` builds the extents: NCHW outputs
(convolutions, pools) split N, C, H, W; ``(N, S, D)`` outputs split N, D (K) and S (H);
``(N, D)`` outputs split N and D.

Parts are ordered with the channel factor innermost, so tiles that read the same input
box are neighbours in the region (the fetch shares that box over short NoC hops).
"""

from __future__ import annotations

from crane.codegen.boxes import Box, extent, with_axis
from crane.codegen.rules import aligned_spans
from crane.cost.utilisation import preferred_partition
from crane.cost.workload import Dims
from crane.dialects.layers.definition import Lowering

AXES: dict[int, tuple[int | None, int | None, int | None, int | None]] = {
    4: (0, 1, 2, 3), 3: (0, 2, 1, None), 2: (0, 1, None, None)}
"""Output rank -> the axes of the (batch, K, H, W) factors (None: no such axis)."""

PARTITIONED = frozenset({Lowering.CONV, Lowering.POOL, Lowering.GLOBAL_POOL, Lowering.LINEAR,
                         Lowering.UNARY, Lowering.BINARY})
"""Lowering classes whose parts may be any box of the output (their operand rules allow it)."""


Factors = tuple[int, int, int, int]
"""(batch, K, H, W) split factors."""


def layer_partition(dims: Dims, subbatch: int, tiles: int) -> Factors:
    """The cost model's split of one sub-batch of a layer over ``tiles`` tiles (what the
    ``segment`` pass records as ``partitions`` for the tiles a schedule gives a column)."""
    part = preferred_partition((subbatch, *dims.partitionable), tiles, (dims.c, dims.r, dims.s))
    return (part.kb, part.kk, part.kh, part.kw)


def partition_boxes(out: Box, factors: Factors, unit: int = 1) -> list[Box] | None:
    """``out`` cut by ``factors`` (channel innermost), or None if they do not apply; the
    channel axis (1) in whole multiples of ``unit`` (a grouped convolution's groups)."""
    axes = AXES.get(len(out))
    if axes is None:
        return None
    sizes = extent(out)
    if any(f > 1 and (axis is None or f > sizes[axis] // (unit if axis == 1 else 1))
           for axis, f in zip(axes, factors, strict=True)):
        return None
    order = (0, 2, 3, 1)  # batch, rows, columns, then channels innermost
    boxes = [out]
    for which in order:
        axis, factor = axes[which], factors[which]
        if axis is None or factor == 1:
            continue
        step = unit if axis == 1 else 1
        boxes = [with_axis(b, axis, span) for b in boxes for span in aligned_spans(*b[axis], factor, step)]
    return boxes
