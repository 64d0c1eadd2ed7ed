"""Batchnorm with batch statistics where the batch already is: per-channel sums, not re-layout.

A batchnorm normalising with the statistics of the whole batch needs, per channel, sums over
every sample and position. Splitting it by channel (as ``crane.codegen.rules`` does for
whole-batch ops) makes every tile send almost all of its box of a batch- or space-split
input to the other tiles, and back for the next layer: an all-to-all per batchnorm. Here
each tile keeps its boxes instead and the mesh exchanges per-channel sums only, as
distributed training does (``crane.exec.kernels.norm_parts`` holds the arithmetic):

* forward, on the boxes of the input made in the phase: ``batchnorm_sum`` then
  ``batchnorm_sqdev`` totals (two rounds, so the variance is a sum of squared deviations
  from the final mean), then ``batchnorm_apply`` on every box;
* backward, on the boxes of the result's gradient: the same two rounds on the input, a
  ``batchnorm_grad_sums`` round whose totals are the scale and shift gradients, then
  ``batchnorm_grad_apply`` on every box. The ``_grad_input`` and ``_grad_weight`` ops of
  one batchnorm run together when they share a phase.

A round's *totals*: every box's per-channel partial sums, added up first on each tile,
then on one tile per channel range (``accumulate``), and sent back along a broadcast tree
to every tile holding a box of that range.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from crane.codegen.boxes import (
    Box,
    contains,
    extent,
    full,
    intersect,
    split_span,
    volume,
    with_axis,
)
from crane.codegen.context import Context, Piece
from crane.codegen.fetch import Fetcher
from crane.codegen.program import Buffer, Compute
from crane.codegen.rules import running_statistics, shape_of
from crane.dialects.graph import LayerOp
from crane.dialects.graph_grad import GradOp
from crane.ir.attributes import Attribute, FloatAttr, IntAttr
from crane.ir.core import Operation, Value

Held = tuple[Box, tuple[Buffer, ...]]
"""A box of the batch and the buffers one tile reads for it (the box's data first)."""


def batch_statistics(op: Operation) -> bool:
    """A batchnorm (or its gradient) normalising with the statistics of the whole batch."""
    if not isinstance(op, LayerOp | GradOp) or not op.kind.has_batch_statistics:
        return False
    return not running_statistics(op)


def _attrs(op: Operation, x: Value) -> dict[str, Attribute]:
    shape = shape_of(x)
    eps = op.attributes.get("eps")
    return {"count": IntAttr(volume(full(shape)) // shape[1]),
            "eps": eps if isinstance(eps, FloatAttr) else FloatAttr(1e-5)}


Moment = tuple[Buffer, Buffer]
"""The batch's per-channel sum and sum of squared deviations for one channel range, on one tile."""
Moments = list[Moment]
"""Per box: its channels' moments, on the box's tile."""


class Made(NamedTuple):
    """Moments and when they were made."""

    moment: Moment
    phase: int
    recomputed: bool


class Statistics(Fetcher):
    """Batchnorm over the boxes the tiles hold (see the module docstring)."""

    def __init__(self, rows: int, cols: int, ctx: Context) -> None:
        super().__init__(rows, cols, ctx)
        self.moments: dict[Value, dict[tuple[tuple[int, int], int], Made]] = {}
        """The moments made of each input, by channel range and tile. They are totals over
        the whole batch, so they serve any box of the same channels on the same tile,
        however the boxes cut the batch and space: a gradient takes them from its phase (which
        ran the batchnorm again, a refresh) or from the recomputation before it, instead of
        two more rounds."""

    def totals(self, step: str, held: Sequence[Held], value: Value, attrs: Mapping[str, Attribute],
               outputs: int = 1) -> list[tuple[Buffer, ...]]:
        """Per box, on its tile: the totals over all boxes of ``step``'s per-channel results."""
        partial = []
        for box, ins in held:
            tile = ins[0].tile
            outs = tuple(self.chip.alloc(tile, (extent(box)[1],), value) for _ in range(outputs))
            self.chip.emit(tile, Compute(step, outs, ins, dict(attrs)))
            partial.append(outs)
        ranges: dict[tuple[int, int], list[int]] = {}
        for k, (box, _) in enumerate(held):
            ranges.setdefault(box[1], []).append(k)
        found: dict[int, tuple[Buffer, ...]] = {}
        for members in ranges.values():
            tiles = list(dict.fromkeys(held[k][1][0].tile for k in members))
            summed = [self._summed([partial[k][o] for k in members], value) for o in range(outputs)]
            spread = self.chip.run([self.chip.spread(total, tiles, value) for total in summed])
            for k in members:
                found[k] = tuple(copies[held[k][1][0].tile] for copies in spread)
        return [found[k] for k in range(len(held))]

    def _summed(self, buffers: Sequence[Buffer], value: Value) -> Buffer:
        """The sum of per-channel buffers: each tile's own first, then on the first tile."""
        by_tile: dict[int, list[Buffer]] = {}
        for buffer in buffers:
            by_tile.setdefault(buffer.tile, []).append(buffer)
        return self.chip.reduce([self.chip.reduce(group, value) for group in by_tile.values()], value)

    def _moments(self, op: Operation, xs: Sequence[Held], x: Value) -> Moments:
        """Per box: the batch's per-channel sum and sum of squared deviations (made once
        per phase for one set of boxes of ``x``)."""
        known = self.moments.setdefault(x, {})
        wanted = [(box[1], ins[0].tile) for box, ins in xs]
        usable = [known[place] for place in wanted if place in known]
        if len(usable) == len(wanted) and all(self._usable_moment(m) for m in usable):
            return [m.moment for m in usable]
        attrs = _attrs(op, x)
        sums = self.totals("batchnorm_sum", xs, x, attrs)
        deviations = self.totals("batchnorm_sqdev", [(box, (ins[0], s[0]))
                                                     for (box, ins), s in zip(xs, sums, strict=True)],
                                 x, attrs)
        made = [(s[0], q[0]) for s, q in zip(sums, deviations, strict=True)]
        known.update((place, Made(m, self.phase, self.recomputing))
                     for place, m in zip(wanted, made, strict=True))
        return made

    def _usable_moment(self, made: Made) -> bool:
        """Moments made in this phase, or by the recomputation for the training ops."""
        return made.phase == self.phase or (made.recomputed and not self.recomputing)

    def _channels(self, weight: Value, box: Box, tile: int, port: int) -> Buffer:
        return self.get(weight, (box[1],), tile, port)

    def held_boxes(self, value: Value, tiles: Sequence[int]) -> list[Piece] | None:
        """The pieces of ``value`` made in this phase on ``tiles`` if they tile all of it
        and their channel ranges are equal or disjoint (so each range's boxes hold every
        value of its channels)."""
        pieces = [p for p in self.pieces.get(value, ()) if p.phase == self.phase
                  and p.buffer.tile in tiles and p.buffer.shape == extent(p.box)]
        whole = full(shape_of(value))
        if not pieces or sum(volume(p.box) for p in pieces) != volume(whole):
            return None
        overlap = any(intersect(a.box, b.box) is not None
                      for k, a in enumerate(pieces) for b in pieces[k + 1:])
        ranges = sorted({p.box[1] for p in pieces})
        nested = any(a[1] > b[0] for a, b in zip(ranges, ranges[1:], strict=False))
        if overlap or nested or not all(contains(whole, p.box) for p in pieces):
            return None
        return pieces

    def batchnorm_forward(self, op: LayerOp, tiles: Sequence[int], port: int) -> list[tuple[Box, Buffer]] | None:
        """The normalised boxes of ``op``'s input where they are (None: the input is not
        held in this phase on ``tiles``)."""
        x, gamma, beta = op.operands[0], op.operands[1], op.operands[2]
        pieces = self.held_boxes(x, tiles)
        if pieces is None:
            return None
        xs = [(p.box, (p.buffer,)) for p in pieces]
        attrs = _attrs(op, x)
        made = []
        for (box, (data,)), (s, q) in zip(xs, self._moments(op, xs, x), strict=True):
            tile = data.tile
            scale, shift = (self._channels(w, box, tile, port) for w in (gamma, beta))
            out = self.chip.alloc(tile, extent(box), op.results[0])
            self.chip.emit(tile, Compute("batchnorm_apply", (out,), (data, s, q, scale, shift), attrs))
            made.append((box, out))
        return made

    def batchnorm_backward(self, op: GradOp, tiles: Sequence[int], port: int,
                           wanted: Sequence[GradOp]) -> dict[Value, list[tuple[Box, Buffer]]]:
        """The results of the batchnorm gradient ops ``wanted`` (``op`` and its sibling of
        the other role reading the same operands), as boxes by value."""
        grad, x, gamma = op.grad_output, op.forward_operands[0], op.forward_operands[1]
        pieces = self.held_boxes(grad, tiles)
        boxes = ([(p.box, p.buffer.tile) for p in pieces] if pieces is not None
                 else _batch_boxes(shape_of(grad), tiles))
        xs = [(box, (self.get(grad, box, tile, port), self.get(x, box, tile, port)))
              for box, tile in boxes]
        moments = self._moments(op, [(box, (ins[1],)) for box, ins in xs], x)
        attrs = _attrs(op, x)
        sums = self.totals("batchnorm_grad_sums", [(box, (*ins, s, q)) for (box, ins), (s, q)
                                                  in zip(xs, moments, strict=True)], x, attrs, 2)
        made: dict[Value, list[tuple[Box, Buffer]]] = {}
        for target in wanted:
            if target.role == "weight":
                made |= _weight_grads(target, xs, sums)
                continue
            made[target.results[0]] = []
            for (box, (g, data)), (s, q), (dscale, dshift) in zip(xs, moments, sums, strict=True):
                tile = data.tile
                scale = self._channels(gamma, box, tile, port)
                out = self.chip.alloc(tile, extent(box), target.results[0])
                self.chip.emit(tile, Compute("batchnorm_grad_apply", (out,),
                                             (g, data, s, q, dscale, dshift, scale), attrs))
                made[target.results[0]].append((box, out))
        return made


def _batch_boxes(shape: tuple[int, ...], tiles: Sequence[int]) -> list[tuple[Box, int]]:
    """The whole tensor split by batch over ``tiles``."""
    whole = full(shape)
    spans = split_span(0, shape[0], len(tiles))
    return [(with_axis(whole, 0, span), tile) for span, tile in zip(spans, tiles, strict=False)]


def _weight_grads(op: GradOp, xs: Sequence[Held], sums: Sequence[tuple[Buffer, ...]]
                  ) -> dict[Value, list[tuple[Box, Buffer]]]:
    """The scale and shift gradients: one copy of the totals per channel range."""
    made: dict[Value, list[tuple[Box, Buffer]]] = {r: [] for r in op.results}
    seen: set[tuple[int, int]] = set()
    for (box, _), totals in zip(xs, sums, strict=True):
        if box[1] in seen:
            continue
        seen.add(box[1])
        for result, total in zip(op.results, totals, strict=True):
            made[result].append(((box[1],), total))
    return made
