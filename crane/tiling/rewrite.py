"""Rewrite one segment of a chain into per-patch ``graph`` IR.

For a segment (ops ``[start, stop)`` of a :class:`crane.tiling.chains.Chain`) and a grid
of disjoint output tiles, every tile gets:

* ``graph.slice`` of the segment input along H (axis 2) and W (axis 3): the tile plus the
  halo its chain needs, clipped to the tensor (a slice covering a whole axis is omitted);
* a copy of every op of the segment on that patch, with the ``padding`` attribute set to
  the border padding of :func:`crane.tiling.regions.chain_regions` (zero except at true
  tensor borders; for max-pool, the -inf padding);

then ``graph.concat`` joins the tiles of each grid row along W and the rows along H, and
the result replaces the segment's output. Every patch op carries ``tile = {segment = s,
patch = array<i64: r, c>}`` and, when ``recompute`` is asked, ``recompute = "s<s>.r<r>c<c>"``
(see :mod:`crane.autodiff.recompute`: keep only the segment input, rebuild the patch in
backward). A one-tile grid leaves the ops in place and only marks them (a plain
checkpointed segment).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.autodiff.recompute import RECOMPUTE_ATTR
from crane.dialects.graph import LAYER_OPS, LayerOp
from crane.ir.attributes import Attribute, DenseIntsAttr, DictAttr, IntAttr, StringAttr
from crane.ir.core import Value
from crane.ir.types import TensorType
from crane.tiling.chains import Chain
from crane.tiling.regions import Interval, OpRegion, Rect, chain_regions, live_start

TILE_ATTR = "tile"
"""Per patch op: ``{segment = s, patch = array<i64: r, c>}``; on the joining concats, ``{segment = s}``."""


class TileError(ValueError):
    """A segment cannot be tiled on the requested grid; ``op`` is where to report it."""

    def __init__(self, message: str, op: LayerOp) -> None:
        super().__init__(message)
        self.message = message
        self.op = op


@dataclass(frozen=True)
class SegmentRewrite:
    """What one rewrite did: tiles emitted, ops added, halo pixels recomputed at the input."""

    tiles: int
    ops_added: int
    input_pixels: int
    """Sum over tiles of the segment-input patch area (the input area times the halo factor)."""


def rewrite_segment(chain: Chain, start: int, stop: int, grid: Sequence[Rect], segment: int,
                    recompute: bool) -> SegmentRewrite:
    """Replace ops ``[start, stop)`` of ``chain`` by their per-tile computation on ``grid``.

    Raises :class:`TileError` when a tile would compute an op on an empty region (a grid
    so fine that a border tile's window lies wholly in padding).
    """
    ops, layers = chain.ops[start:stop], chain.layers[start:stop]
    in_hw = chain.hw(start)
    if len(grid) == 1:
        for op in ops:
            _mark(op, segment, (0, 0), recompute)
        return SegmentRewrite(1, 0, in_hw[0] * in_hw[1])
    rows = sorted({tile.rows.start for tile in grid})
    cols = sorted({tile.cols.start for tile in grid})
    last = ops[-1]
    block = last.parent
    assert block is not None
    added: list[LayerOp] = []
    outputs: dict[tuple[int, int], Value] = {}
    pixels = 0
    for tile in grid:
        steps = chain_regions(layers, in_hw, tile)
        place = (rows.index(tile.rows.start), cols.index(tile.cols.start))
        _check_live(steps, ops, place)
        patch_ops = _patch(ops, steps, place, segment, recompute)
        added += patch_ops
        outputs[place] = patch_ops[-1].results[0]
        pixels += steps[0].input.area
    assembled = _assemble(outputs, len(rows), len(cols), last, segment)
    added += assembled
    for op in added:
        block.insert_before(last, op)
    last.results[0].replace_all_uses_with(assembled[-1].results[0])
    for op in reversed(ops):
        op.erase()
    return SegmentRewrite(len(grid), len(added), pixels)


def check_grid(chain: Chain, start: int, stop: int, grid: Sequence[Rect]) -> None:
    """Raise :class:`TileError` if some tile of ``grid`` cannot be emitted (see above)."""
    rows = sorted({tile.rows.start for tile in grid})
    cols = sorted({tile.cols.start for tile in grid})
    for tile in grid:
        steps = chain_regions(chain.layers[start:stop], chain.hw(start), tile)
        _check_live(steps, chain.ops[start:stop], (rows.index(tile.rows.start), cols.index(tile.cols.start)))


def group_name(segment: int, place: tuple[int, int]) -> str:
    """The recompute group of one patch: ``s<segment>.r<row>c<col>``."""
    return f"s{segment}.r{place[0]}c{place[1]}"


def _mark(op: LayerOp, segment: int, place: tuple[int, int], recompute: bool) -> None:
    op.attributes[TILE_ATTR] = DictAttr.of({"segment": IntAttr(segment), "patch": DenseIntsAttr(place)})
    if recompute:
        op.attributes[RECOMPUTE_ATTR] = StringAttr(group_name(segment, place))


def _check_live(steps: Sequence[OpRegion], ops: Sequence[LayerOp], place: tuple[int, int]) -> None:
    first = live_start(steps)
    if first == 0 and steps[0].input.area > 0:
        return
    # Op ``first`` reads only padding for this tile: its input patch would be a zero-sized
    # tensor (the segment input's, or an empty output of the op before), which the IR cannot make.
    raise TileError(f"tile (row {place[0]}, col {place[1]}) would run this op on an empty region "
                    "(its windows read only padding); use a coarser grid", ops[first])


def _patch(ops: Sequence[LayerOp], steps: Sequence[OpRegion], place: tuple[int, int], segment: int,
           recompute: bool) -> list[LayerOp]:
    """The slices and op copies of one tile, in order."""
    source = ops[0].inputs[0]
    suffix = f"r{place[0]}c{place[1]}"
    made: list[LayerOp] = []
    value = source
    for axis, interval in ((2, steps[0].input.rows), (3, steps[0].input.cols)):
        sliced = _slice(value, axis, interval)
        if sliced is not None:
            sliced.results[0].name_hint = f"{source.name_hint or 'x'}.{suffix}{'hw'[axis - 2]}"
            made.append(sliced)
            value = sliced.results[0]
    for op, step in zip(ops, steps, strict=True):
        copy = _copy(op, value, step)
        copy.results[0].name_hint = f"{op.results[0].name_hint or op.kind.name}.{suffix}"
        made.append(copy)
        value = copy.results[0]
    for op in made:
        _mark(op, segment, place, recompute)
    return made


def _slice(value: Value, axis: int, interval: Interval) -> LayerOp | None:
    ttype = value.type
    assert isinstance(ttype, TensorType)
    if interval.start == 0 and interval.stop == ttype.shape[axis]:
        return None
    shape = list(ttype.shape)
    shape[axis] = interval.size
    attrs = {"axis": axis, "start": interval.start, "stop": interval.stop}
    return LAYER_OPS["slice"].build([value], [], attrs, TensorType(tuple(shape), ttype.element))


def _copy(op: LayerOp, patch: Value, step: OpRegion) -> LayerOp:
    """``op`` on ``patch`` with the tile's border padding; result shaped like the tile."""
    attrs = op.layer_attrs
    if "padding" in attrs:
        attrs["padding"] = step.padding
    out = op.results[0].type
    assert isinstance(out, TensorType)
    shape = (out.shape[0], out.shape[1], *step.output.hw)
    copy = LAYER_OPS[op.kind.name].build([patch], op.weights, attrs, TensorType(shape, out.element),
                                         op.location)
    for key, attr in op.attributes.items():
        # Discardable attributes other than the layer's own travel with the copy.
        copy.attributes.setdefault(key, attr)
    return copy


def _assemble(outputs: dict[tuple[int, int], Value], rows: int, cols: int, last: LayerOp,
              segment: int) -> list[LayerOp]:
    """Concats along W within each grid row, then along H; the last op's result is the output."""
    made: list[LayerOp] = []
    row_values: list[Value] = []
    name = last.results[0].name_hint or last.kind.name
    for r in range(rows):
        parts = [outputs[(r, c)] for c in range(cols)]
        if len(parts) == 1:
            row_values.append(parts[0])
            continue
        made.append(_concat(parts, 3, f"{name}.r{r}", segment))
        row_values.append(made[-1].results[0])
    if len(row_values) > 1:
        made.append(_concat(row_values, 2, name, segment))
    made[-1].results[0].name_hint = name
    return made


def _concat(parts: Sequence[Value], axis: int, name: str, segment: int) -> LayerOp:
    types = [p.type for p in parts]
    assert all(isinstance(t, TensorType) for t in types)
    first = types[0]
    assert isinstance(first, TensorType)
    shape = list(first.shape)
    shape[axis] = sum(t.shape[axis] for t in types if isinstance(t, TensorType))
    op = LAYER_OPS["concat"].build(list(parts), [], {"axis": axis}, TensorType(tuple(shape), first.element))
    op.results[0].name_hint = name
    attrs: dict[str, Attribute] = {"segment": IntAttr(segment)}
    op.attributes[TILE_ATTR] = DictAttr.of(attrs)
    return op
