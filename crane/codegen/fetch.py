"""Where every box of every value lives during codegen, and fetching operands from there.

:class:`Fetcher` keeps the *pieces* (result boxes in SRAM: tile, buffer, phase), the
*copies* (operand boxes already fetched to a tile) and what was stored to DRAM, and puts a
requested box on a tile with the chip's moves (``crane.codegen.chip``).

Operands are fetched for all parts of an op at once (:meth:`Fetcher.fetch`), so that a box
several tiles read is fetched once and shared over the NoC (``Chip.spread``, a tree of
one-hop transfers from the tile holding it): the input of a channel-split layer, a weight
slice of a batch- or space-split one. A box is taken, in this order of preference:

1. from pieces on chip that may still be read: produced in the current phase, held in SRAM
   because the producing layer is fused (its output stays on chip within its block), or
   kept across blocks because the schedule's memory table keeps the producing column's
   output in SRAM after its block. A piece on another tile is cut to the needed box
   (``copy``) and sent over the NoC (``send``/``recv``, unique tags); several pieces are
   joined with ``copy`` into one buffer;
2. from a copy already on chip: a weight slice loaded earlier in the block, or a box of an
   input or a spilled value loaded earlier in the phase;
3. from DRAM (``load`` with the box's offsets), for network inputs, weights, optimizer
   state and values stored in an earlier phase.

A virtual concatenation (one nobody needs as one tensor) is never built: its readers take
the boxes straight from its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from crane.codegen.boxes import (
    Box,
    BoxIndex,
    contains,
    covers,
    extent,
    intersect,
    text,
    volume,
    with_axis,
)
from crane.codegen.chip import Chip, Spread
from crane.codegen.context import Context, Piece, is_resident, is_weight
from crane.codegen.ownership import CodegenError
from crane.codegen.program import Buffer
from crane.codegen.rules import Part, shape_of
from crane.cost.layer import scatter_slabs
from crane.dialects.graph import LayerOp, WeightOp
from crane.dialects.graph_grad import OptimizerStateOp
from crane.ir.core import BlockArgument, Operation, Value


class Fetcher:
    """Pieces and copies on chip, and the operand fetching built on them."""

    def __init__(self, rows: int, cols: int, ctx: Context) -> None:
        self.ctx = ctx
        self.chip = Chip(rows, cols, self._tensor_name, ctx.ports)
        self.pieces: dict[Value, list[Piece]] = {}
        self.copies: dict[Value, list[Piece]] = {}
        self.remembered: dict[int, list[tuple[Value, Piece]]] = {}
        """Per tile, the copies it remembers, oldest first (``_remember``)."""
        self._copied: dict[tuple[Value, int], Piece] = {}
        """Every copy in ``copies`` by its value and buffer (id): whether a buffer holds a
        copy already and whether a tile's queued copy is still there, without scanning the
        lists (a value streamed in thousands of steps has thousands of copies)."""
        self.stored: dict[Value, BoxIndex] = {}
        """Boxes of each value stored to DRAM, tagged with the number of barriers before the
        store (a load may read them once a barrier has followed); indexed by box, as a value
        may be stored in thousands of steps."""
        self.synced = 0
        """Barriers emitted so far (phase ends and mid-phase flushes)."""
        self.phase = 0
        self.block = -1
        self.recomputing = False
        self.virtual = self._virtual_concats()

    def record_store(self, value: Value, box: Box) -> None:
        """``box`` of ``value`` is stored to DRAM now (readable after the next barrier)."""
        self.stored.setdefault(value, BoxIndex()).add(box, self.synced)

    def _in_dram(self, value: Value, box: Box) -> bool:
        """Whether stores before the last barrier hold all of ``box`` of ``value`` (partial
        sums store one box several times)."""
        index = self.stored.get(value)
        ready = [b for b, at in index.meeting(box) if at < self.synced] if index else []
        return covers(ready, box)

    def _tensor_name(self, value: Value) -> tuple[str, str]:
        owner = value.owner_op
        if value in self.ctx.outputs:
            return self.ctx.outputs[value], "output"
        if isinstance(value, BlockArgument):
            return value.name_hint or f"arg{value.index}", "input"
        if isinstance(owner, WeightOp):
            return owner.weight_name, "weight"
        if isinstance(owner, OptimizerStateOp):
            return owner.state_name, "state"
        return value.name_hint or "v", "gradient" if owner in self.ctx.backward else "activation"

    def _virtual_concats(self) -> dict[Value, LayerOp]:
        """Concatenations nobody needs as one tensor: forward concats whose result is no
        network output and feeds only forward layer ops. Their readers gather the boxes
        straight from the inputs' pieces (the cost model treats concat as transparent)."""
        ctx, found = self.ctx, dict[Value, LayerOp]()
        for op in ctx.layer_of:
            if not isinstance(op, LayerOp) or op.kind.name != "concat" or op in ctx.backward:
                continue
            result = op.results[0]
            users = list(result.users())
            if result in ctx.outputs or not users or any(
                    u in ctx.backward or not isinstance(u, LayerOp) for u in users):
                continue
            found[result] = op
        return found

    def piece_of(self, op: Operation, box: Box, buffer: Buffer) -> Piece:
        """A box of ``op``'s result made now in ``buffer``, readable as its layer's schedule
        says: for the rest of the block when the layer is fused (held), by later forward
        blocks when the block keeps it (kept), by the training ops when recomputed."""
        layer = self.ctx.layer_of.get(op, "")
        forward = self.block >= 0 and not self.recomputing
        held = bool(self.ctx.fused.get(layer)) and self.block >= 0
        kept = layer in self.ctx.kept and forward
        return Piece(box, buffer, self.phase, held, self.block, kept, self.recomputing)

    def _usable(self, piece: Piece) -> bool:
        """Whether a piece may be read now: made in this phase, held in its block, kept for
        the forward blocks after it, or recomputed for the training ops."""
        forward = self.block >= 0 and not self.recomputing
        kept = forward and self.ctx.kept_for(piece.block, self.block)
        return (piece.phase == self.phase or (piece.kept and (kept or piece.retained))
                or piece.recomputed or (piece.held and piece.block == self.block))

    def retain_for_backward(self) -> None:
        """When the training ops begin: the kept forward pieces they may read on chip, the
        newest first (backward reads them first) while a tile's total stays within
        ``Context.retain_budget``; the others are read from DRAM, where the training ops'
        readers made them stored."""
        used: dict[int, int] = {}
        kept = [(k, value, piece) for value, pieces in self.pieces.items()
                for k, piece in enumerate(pieces) if piece.kept]
        for k, value, piece in sorted(kept, key=lambda e: -e[2].buffer.id):
            size = self.ctx.elem_bytes * volume(piece.box)
            tile = piece.buffer.tile
            if used.get(tile, 0) + size > self.ctx.retain_budget:
                continue
            used[tile] = used.get(tile, 0) + size
            self.pieces[value][k] = replace(piece, retained=True)

    def _copy_usable(self, piece: Piece, value: Value) -> bool:
        if piece.phase == self.phase:
            return True
        return is_weight(value) and self.block >= 0 and piece.block == self.block

    def copy_marks(self, values: Iterable[Value]) -> dict[Value, int]:
        """How many copies each value has now (``forget_copies_since`` drops the newer)."""
        return {v: len(self.copies.get(v, ())) for v in values}

    def forget_copies_since(self, marks: Mapping[Value, int]) -> None:
        """Forget the copies made after ``marks`` (a step's streamed inputs)."""
        for value, mark in marks.items():
            known = self.copies.get(value)
            if not known:
                continue
            for piece in known[mark:]:
                del self._copied[(value, id(piece.buffer))]
            del known[mark:]

    def forget_all_copies(self) -> None:
        """Forget every copy (a new block or the training ops begin)."""
        self.copies.clear()
        self.remembered.clear()
        self._copied.clear()

    def _remember(self, value: Value, box: Box, buffer: Buffer) -> None:
        """A copy of ``box`` of ``value`` now on ``buffer``'s tile, for other tiles to share
        and later ops to reuse; a tile remembers at most ``Context.copy_budget`` bytes of
        copies, forgetting the oldest (a later reader fetches again instead of keeping a
        buffer alive)."""
        key = (value, id(buffer))
        if key in self._copied:
            return
        piece = Piece(box, buffer, self.phase, False, self.block)
        self.copies.setdefault(value, []).append(piece)
        self._copied[key] = piece
        if not self.ctx.copy_budget:
            return
        alive = self._copied  # a queued copy forgotten since is no longer there
        queue = [(v, p) for v, p in self.remembered.get(buffer.tile, ())
                 if alive.get((v, id(p.buffer))) is p]
        queue.append((value, piece))
        self.remembered[buffer.tile] = queue
        total = sum(self.ctx.elem_bytes * volume(p.box) for _, p in queue)
        while len(queue) > 1 and total > self.ctx.copy_budget:
            old_value, old = queue.pop(0)
            total -= self.ctx.elem_bytes * volume(old.box)
            kept = self.copies.get(old_value, [])
            if old in kept:  # by equality, as list.remove finds it
                gone = kept.pop(kept.index(old))
                del self._copied[(old_value, id(gone.buffer))]

    # ----- fetching operands
    def _sources(self, value: Value, box: Box, tile: int) -> list[tuple[Piece, Box]] | None:
        """Pieces or copies on chip to take ``box`` from, with the cut each gives (None if
        they do not cover it): a copy on ``tile``, else the nearest one holding all of it,
        else the pieces that tile it."""
        # The first axis (the batch) rules most pieces out: a value made in thousands of
        # steps is asked for one step's box at a time, so test it before the whole box
        # (loosely for the pieces: every piece that contains or meets the box passes).
        low, high = box[0] if box else (0, 0)
        copies = [p for p in self.copies.get(value, ()) if (not box or (
            p.box[0][0] <= low and high <= p.box[0][1])) and self._copy_usable(p, value)
                  and contains(p.box, box)]
        mine = [p for p in copies if p.buffer.tile == tile]
        if mine:
            return [(mine[0], box)]
        usable = [p for p in self.pieces.get(value, ()) if (not box or (
            p.box[0][0] <= high and low <= p.box[0][1])) and self._usable(p)]
        whole = [p for p in usable if contains(p.box, box)] + copies
        if whole:
            return [(min(whole, key=lambda p: self.chip.hops(p.buffer.tile, tile)), box)]
        hits = [(p, cut) for p in usable if (cut := intersect(p.box, box)) is not None]
        if not hits or sum(volume(cut) for _, cut in hits) != volume(box):
            return None
        return hits

    def _on_chip(self, value: Value, box: Box, tile: int) -> Buffer | None:
        """``box`` on ``tile`` from usable pieces or copies, or None if they do not cover it."""
        sources = self._sources(value, box, tile)
        if sources is None:
            return None
        if len(sources) == 1:
            piece, _ = sources[0]
            return self.chip.transfer(piece.buffer, piece.box, box, tile, value)
        joined = self.chip.alloc(tile, extent(box), value)
        for piece, cut in sources:
            self.chip.transfer(piece.buffer, piece.box, cut, tile, value, into=(joined, box))
        return joined

    def deliver(self, value: Value, box: Box, tile: int, port: int, into: tuple[Buffer, Box]) -> None:
        """``box`` of ``value`` into its window of ``into`` (a buffer on ``tile`` and the box
        it holds): received straight from the pieces on chip when they hold it (no staging
        buffer, no copy on ``tile``), else fetched as :meth:`get` does and copied in. A
        virtual concatenation delivers each input's cut the same way."""
        concat = self.virtual.get(value)
        if concat is not None:
            buffer, holds = into
            for source, cut, axis, offset in _concat_cuts(concat, box):
                self.deliver(source, _shifted(cut, axis, -offset), tile, port,
                             (buffer, _shifted(holds, axis, -offset)))
            return
        sources = self._sources(value, box, tile)
        if sources is None:
            fetched = self.get(value, box, tile, port)
            self.chip.transfer(fetched, box, box, tile, value, into=into)
            return
        for piece, cut in sources:
            self.chip.transfer(piece.buffer, piece.box, cut, tile, value, into=into)

    def get(self, value: Value, box: Box, tile: int, port: int, share: bool = True) -> Buffer:
        """A buffer on ``tile`` holding ``box`` of ``value`` (see the module docstring)."""
        concat = self.virtual.get(value)
        if concat is not None:
            return self._gather(concat, box, tile, port)
        found = self._on_chip(value, box, tile)
        if found is not None:
            return found
        if not is_resident(value) and not self._in_dram(value, box):
            raise CodegenError(f"codegen bug: {text(box)} of '{value.name_hint}' is neither "
                               f"on chip nor in DRAM in phase {self.phase}", value.owner_op)
        loaded = self.chip.load(value, box, tile, port)
        if share:
            self._remember(value, box, loaded)
        return loaded

    def _gather(self, concat: LayerOp, box: Box, tile: int, port: int) -> Buffer:
        """``box`` of a virtual concatenation on ``tile``, from the boxes of its inputs:
        one input's box as it is fetched, several joined in one buffer, each delivered into
        its window (a piece on ``tile`` copied once, another tile's received, no staging)."""
        cuts = _concat_cuts(concat, box)
        if len(cuts) == 1 and cuts[0][1] == box:
            source, cut, axis, offset = cuts[0]
            return self.get(source, _shifted(cut, axis, -offset), tile, port)
        joined = self.chip.alloc(tile, extent(box), concat.results[0])
        self.deliver(concat.results[0], box, tile, port, (joined, box))
        return joined

    def fetch(self, op: Operation, parts: Sequence[tuple[int, Part]], port: int) -> list[list[Buffer | None]]:
        """Every part's operand buffers; a box several parts read is fetched once and
        broadcast to their tiles."""
        readers: dict[tuple[int, Box], list[int]] = {}
        for tile, part in parts:
            for k, box in enumerate(part.ins):
                if box is not None:
                    readers.setdefault((k, box), []).append(tile)
        got: dict[tuple[int, Box, int], Buffer] = {}
        keys = list(readers)
        plans = [self._spread(op.operands[k], box, readers[(k, box)], port) for k, box in keys]
        for (k, box), spread in zip(keys, self.chip.run(plans), strict=True):
            for tile, buffer in spread.items():
                got[(k, box, tile)] = buffer
                self._remember(op.operands[k], box, buffer)
        return [[None if box is None else got[(k, box, tile)] for k, box in enumerate(part.ins)]
                for tile, part in parts]

    def _local(self, value: Value, box: Box, tile: int) -> Buffer | None:
        """``box`` from a usable copy already on ``tile`` (None if there is none)."""
        for piece in self.copies.get(value, ()):
            if piece.buffer.tile == tile and self._copy_usable(piece, value) and contains(piece.box, box):
                return self.chip.cut(piece.buffer, piece.box, box, value)
        return None

    def _spread(self, value: Value, box: Box, tiles: Sequence[int], port: int) -> Spread:
        """A plan for ``box`` on every tile of ``tiles``: fetched once (now), then broadcast
        over the NoC when the op's plans run."""
        unique = list(dict.fromkeys(tiles))
        local = {t: b for t in unique if (b := self._local(value, box, t)) is not None}
        slabs = scatter_slabs(len(unique), self.elem_bytes_of(box), max(extent(box), default=1))
        if not local and slabs > 1:
            return self.chip.scatter(value, box, unique, slabs,
                                     lambda slab, tile, into: self.deliver(value, slab, tile, port, into))
        source = next(iter(local.values())) if local else self.get(value, box, unique[0], port)
        return self.chip.spread(source, unique, value, local)

    def barrier(self, label: str) -> None:
        """Every tile waits for all the others; DRAM stores before it become readable."""
        self.chip.barrier(label)
        self.synced += 1

    def elem_bytes_of(self, box: Box) -> int:
        return volume(box) * self.ctx.elem_bytes

    def _ready(self, value: Value) -> bool:
        """Whether ``value`` exists before the current phase: in DRAM from the start, made
        in an earlier phase, or a virtual concatenation of such values."""
        concat = self.virtual.get(value)
        if concat is not None:
            return all(self._ready(v) for v in concat.inputs)
        return is_resident(value) or value in self.pieces or value in self.stored


def _concat_cuts(concat: LayerOp, box: Box) -> list[tuple[Value, Box, int, int]]:
    """(input, the cut of ``box`` it holds, the concatenation axis, the input's offset
    along it) for each input of ``concat`` that ``box`` overlaps."""
    axis = int(getattr(concat.attributes.get("axis"), "value", 1)) % len(box)
    cuts, offset = [], 0
    for source in concat.inputs:
        size = shape_of(source)[axis]
        cut = intersect(box, with_axis(box, axis, (offset, offset + size)))
        if cut is not None:
            cuts.append((source, cut, axis, offset))
        offset += size
    return cuts


def _shifted(box: Box, axis: int, by: int) -> Box:
    """``box`` moved by ``by`` along ``axis``."""
    return with_axis(box, axis, (box[axis][0] + by, box[axis][1] + by))
