"""The instruction emitter: runs the phases of ``crane.codegen.plan`` on a model of the chip.

The emitter walks the items in order and, for every op of an item's layer, divides it over
the item's tiles and emits on each tile: the operand buffers, the ``compute`` and the
bookkeeping of where each result box now lives (a *piece*: tile, buffer, phase). A layer's
main op is divided as the cost model divides it (``crane.codegen.partition``); the ops
merged into it follow its pieces; other ops use the split rules of ``crane.codegen.rules``,
except batchnorms with batch statistics and their gradients, which run on the boxes the
tiles hold and exchange per-channel sums (``crane.codegen.statistics``).

Operands come from ``crane.codegen.fetch`` (the :class:`Fetcher` this class extends),
which knows where every box lives and shares a box several tiles read over the NoC.

A dense conv or linear part that would read and write more than half a tile's SRAM (at the
machine's element width) runs in input-channel chunks whose partial sums the tile adds as
it goes (``steps.reduction_chunks``). A result is stored to DRAM when it is a network
output, feeds a training op of another phase (unless its block or its layer runs again
before that op, see ``crane.codegen.plan``), or feeds a layer that cannot take it from
SRAM (its producer is not fused, it is in another block that the schedule does not keep
it for, or that layer runs again later and needs it then). A recomputation stores
nothing. Partial sums (batch-split weight gradients) are sent to the first tile of the op,
added there (``compute "accumulate"``) and stored once. A forward phase with several columns first
fetches what every column's first op reads (its first step and chunk), so that no column
waits on a tile's in-order NoC queue behind another column's weights.

A result box too big to hold is *streamed*, alone or with the elementwise ops after it
(``crane.codegen.emit_chain``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from crane.codegen.boxes import Box, extent, full, intersect, volume
from crane.codegen.chip import dtype_of
from crane.codegen.context import Context, Piece, is_weight
from crane.codegen.emit_chain import StreamChains
from crane.codegen.partition import PARTITIONED, layer_partition, partition_boxes
from crane.codegen.plan import Home, Item, Phase
from crane.codegen.program import Buffer, Compute, DramTensor, Program
from crane.codegen.rules import (
    ELEMENTWISE,
    NEEDS,
    Part,
    channel_unit,
    forward_op_parts,
    running_statistics,
    shape_of,
    split_training,
)
from crane.codegen.statistics import batch_statistics
from crane.codegen.steps import reduction_chunks, temporal_chunks
from crane.dialects.graph import LayerOp
from crane.dialects.graph_grad import GradOp
from crane.dialects.layers.definition import Lowering
from crane.ir.core import Operation, Value


class Emitter(StreamChains):
    """Emits the programs of all mesh tiles phase by phase (see the module docstring)."""

    def __init__(self, rows: int, cols: int, ctx: Context) -> None:
        super().__init__(rows, cols, ctx)
        self.store_set = self._must_store()
        self.started_backward = False
        self.redone: set[Value] = set()

    @property
    def programs(self) -> list[Program]:
        return self.chip.programs

    @property
    def tensors(self) -> dict[Value, DramTensor]:
        return self.chip.tensors

    def _readers(self, value: Value) -> list[Operation]:
        """The ops reading ``value``, looking through virtual concatenations."""
        readers: list[Operation] = []
        for user in value.users():
            virtual = user.results[0] if user.results and user.results[0] in self.virtual else None
            readers += self._readers(virtual) if virtual is not None else [user]
        return readers

    def _must_store(self) -> set[Value]:
        ctx, found = self.ctx, set(self.ctx.outputs)
        for op, layer in ctx.layer_of.items():
            for result in op.results:
                for user in self._readers(result):
                    if user in ctx.backward or op in ctx.backward:
                        if not _same_phase(ctx, op, user) and not _recomputed_for(ctx, op, user):
                            found.add(result)
                        continue
                    other = ctx.layer_of.get(user)
                    if other is None or other == layer:
                        continue
                    same_block = ctx.block_of[other] == ctx.block_of[layer]
                    if (not same_block and other in ctx.recomputed) or other in ctx.refreshed:
                        found.add(result)  # the reader's recomputation loads it
                        continue
                    on_chip = ctx.fused.get(layer) if same_block else (
                        layer in ctx.kept and ctx.kept_for(ctx.block_of[layer], ctx.block_of[other]))
                    if not on_chip:
                        found.add(result)
        return found

    # ----- ops
    def run_op(self, op: Operation, parts: Sequence[tuple[int, Part]], port: int) -> None:
        """Emit every part of ``op`` (in steps over each tile's output when big, see
        ``steps.temporal_chunks``), reduce partial sums, store what DRAM must hold.

        A part whose output box exceeds ``Context.hold_budget`` is *streamed*: each step's
        output goes to DRAM as it is made and nothing of it stays on chip (its readers load
        it back by their own boxes, after a barrier)."""
        made: list[list[Piece]] = [[] for _ in op.results]
        partial: list[list[Buffer]] = [[] for _ in op.results]
        # All parts stream or none: readers never find a result half on chip, half in DRAM.
        streamed = [any(self._streamed(op, part) for _, part in parts)] * len(parts)
        steps = [self._steps(op, tile, part, streamed[0]) for tile, part in parts]
        stepped = any(len(s) > 1 for s in steps)
        # A part run in steps fills one buffer of its whole output, window by window, so
        # readers see one piece per tile, not one per step.
        whole = {i: (self.chip.alloc(tile, extent(part.outs[0]), op.results[0]), part.outs[0])
                 for i, ((tile, part), s) in enumerate(zip(parts, steps, strict=True))
                 if len(s) > 1 and not streamed[i]}
        for step in range(max((len(s) for s in steps), default=0)):
            active = [i for i, s in enumerate(steps) if step < len(s)]
            now = [(parts[i][0], steps[i][step]) for i in active]
            into = [whole.get(i) for i in active]
            # A step's inputs are dropped after it (only weights stay for later steps), so
            # a tile holds one step of input at a time.
            marks = self.copy_marks(v for v in op.operands if not is_weight(v))
            outputs = self.run_parts(op, now, port, into)
            if stepped:
                self.forget_copies_since(marks)
            for i, (_, part), outs, target in zip(active, now, outputs, into, strict=True):
                if target is None:  # else one piece for the whole part, below
                    self._step_outputs(op, part, outs, streamed[i], (made, partial), port)
        for buffer, box in whole.values():
            made[0].append(self.piece_of(op, box, buffer))
        for k, buffers in enumerate(partial):
            if buffers:
                total = self.chip.reduce(buffers, op.results[k])
                made[k].append(self.piece_of(op, full(shape_of(op.results[k])), total))
        for result, pieces in zip(op.results, made, strict=True):
            self._record(result, pieces, port)
        if any(streamed):
            self.barrier(f"stream:{op.results[0].name_hint or op.name}")

    def _steps(self, op: Operation, tile: int, part: Part, streamed: bool,
               chained: bool = False) -> list[Part]:
        """The steps ``tile`` runs ``part`` in (``steps.temporal_chunks``), or, for
        inference, the part whole when its result stays on chip and every activation it
        reads is already on ``tile``: steps bound the SRAM of what streams in, and cutting
        boxes out of buffers already there only copies them (one vector op per element).
        A training step keeps its steps: run whole, its float32 sums round differently and
        the batchnorm gradients of ResNet-50 (``bench/lowering.py --quick``) drift past
        ``--check``'s 1e-4 (to 1.4e-4, a float32 interpreter's own error 4.6e-5)."""
        ctx = self.ctx
        if not (streamed or ctx.training) and self._on_tile(op, part, tile):
            return [part]
        return temporal_chunks(op, part, ctx.step_budget, ctx.elem_bytes, ctx.chunk_budget,
                               extra_outputs=int(chained))

    def _on_tile(self, op: Operation, part: Part, tile: int) -> bool:
        """Whether every activation box ``part`` reads is held on ``tile`` already."""
        for value, box in zip(op.operands, part.ins, strict=True):
            if box is None or is_weight(value):
                continue
            sources = None if value in self.virtual else self._sources(value, box, tile)
            if sources is None or any(p.buffer.tile != tile for p, _ in sources):
                return False
        return True

    def _step_outputs(self, op: Operation, part: Part, outs: Sequence[Buffer], streamed: bool,
                      into: tuple[list[list[Piece]], list[list[Buffer]]], port: int) -> None:
        """A step's results: partial sums to add up later, straight to DRAM when streamed,
        else pieces on chip (``into`` is the made pieces and partial sums by result)."""
        made, partial = into
        for k, (box, buffer) in enumerate(zip(part.outs, outs, strict=True)):
            if part.partial and part.partial[k]:
                partial[k].append(buffer)
            elif streamed:
                self._stream_out(op.results[k], buffer, box, port)
            else:
                made[k].append(self.piece_of(op, box, buffer))

    def _record_boxes(self, op: Operation, made: Mapping[Value, Sequence[tuple[Box, Buffer]]],
                      port: int) -> None:
        for value, boxes in made.items():
            self._record(value, [self.piece_of(op, box, buffer) for box, buffer in boxes], port)

    def _record(self, result: Value, pieces: list[Piece], port: int) -> None:
        """Note where ``result``'s new pieces live, and store them if DRAM must hold them."""
        if self.recomputing and result not in self.redone:
            # The recomputed pieces replace the forward run's (some of which the schedule
            # may have kept in SRAM), so no box is found twice.
            self.redone.add(result)
            self.pieces[result] = []
        self.pieces.setdefault(result, []).extend(pieces)
        if result in self.store_set and not self.recomputing:
            self.store(result, pieces, port)

    def run_parts(self, op: Operation, parts: Sequence[tuple[int, Part]], port: int,
                  into: Sequence[tuple[Buffer, Box] | None] | None = None) -> list[tuple[Buffer, ...]]:
        """The output buffers of some parts (one per tile): shared operands fetched once,
        parts too big for a tile's SRAM in input-channel chunks whose partial sums each
        tile adds as it goes (chunk ``k`` of every part is fetched together, so a kernel
        slice several tiles read still comes from DRAM once). A part with an ``into``
        (buffer, box it holds) writes its result into that buffer's window."""
        targets = list(into) if into is not None else [None] * len(parts)
        chunked = [reduction_chunks(op, part, self.ctx.chunk_budget, self.ctx.elem_bytes)
                   for _, part in parts]
        totals: list[tuple[Buffer, ...]] = [() for _ in parts]
        for k in range(max((len(c) for c in chunked), default=0)):
            now = [(i, tile, chunks[k]) for i, ((tile, _), chunks) in enumerate(zip(parts, chunked, strict=True))
                   if k < len(chunks)]
            marks = self.copy_marks(op.operands)
            fetched = self.fetch(op, [(tile, chunk) for _, tile, chunk in now], port)
            if len(chunked[0]) > 1:
                # Chunks stream through: their copies are not kept for later steps.
                self.forget_copies_since(marks)
            for (i, tile, chunk), ins in zip(now, fetched, strict=True):
                alone = len(chunked[i]) == 1
                outs = self.compute(op, chunk, tile, ins, targets[i] if alone else None)
                if totals[i]:
                    added = self.chip.alloc(tile, outs[0].shape, op.results[0])
                    self.chip.emit(tile, Compute("accumulate", (added,), (totals[i][0], outs[0])))
                    outs = (added,)
                totals[i] = outs
        for i, ((tile, part), target) in enumerate(zip(parts, targets, strict=True)):
            if target is not None and len(chunked[i]) > 1:
                self.chip.transfer(totals[i][0], part.outs[0], part.outs[0], tile,
                                   op.results[0], into=target)
                totals[i] = (target[0],)
        return totals

    def compute(self, op: Operation, part: Part, tile: int, ins: Sequence[Buffer | None],
                into: tuple[Buffer, Box] | None = None) -> tuple[Buffer, ...]:
        """One part on ``tile`` from its fetched operands: into the window of ``into`` (a
        buffer and the box it holds) if given, else in place over its first operand when
        nothing else reads that (see :meth:`_in_place`), else into new buffers."""
        attrs = {**op.attributes, **part.attrs}
        operands = tuple(b for b in ins if b is not None)
        if into is not None:
            target, holds = into
            window = (tuple(c - a for (a, _), (c, _) in zip(holds, part.outs[0], strict=True)),
                      extent(part.outs[0]))
            self.chip.emit(tile, Compute(_op_name(op), (target,), operands, attrs, window))
            return (target,)
        reuse = self._in_place(op, part, ins)
        outs = (reuse,) if reuse is not None else tuple(
            self.chip.alloc(tile, extent(box), r) for r, box in zip(op.results, part.outs, strict=True))
        self.chip.emit(tile, Compute(_op_name(op), outs, operands, attrs))
        return outs

    def _in_place(self, op: Operation, part: Part, ins: Sequence[Buffer | None]) -> Buffer | None:
        """The first operand's buffer, if an elementwise op may overwrite it: the op is its
        value's only reader and the buffer is that value's own piece of the output's box
        (as after a convolution, its batchnorm and its activation), which halves the SRAM
        the chain needs."""
        if not isinstance(op, LayerOp) or len(op.results) != 1 or not ins or ins[0] is None:
            return None
        elementwise = op.kind.lowering in ELEMENTWISE or (
            op.kind.lowering is Lowering.CHANNEL_NORM and running_statistics(op))
        source, buffer = op.operands[0], ins[0]
        if not elementwise or buffer.shape != extent(part.outs[0]) or any(
                True for user in source.users() if user is not op):
            return None
        own = any(p.buffer is buffer and p.box == part.outs[0] for p in self.pieces.get(source, ()))
        return buffer if own and buffer.dtype == dtype_of(op.results[0]) else None

    def store(self, value: Value, pieces: Sequence[Piece], port: int) -> None:
        for piece in pieces:
            self.chip.store(value, piece.buffer, piece.box, port)
            self.record_store(value, piece.box)

    # ----- splitting forward ops
    def forward_parts(self, op: LayerOp, item: Item) -> list[tuple[int, Part]]:
        """The parts of a forward op: a layer's main op as the cost model splits it, ops
        merged into it on its pieces, the rest by the split rules."""
        tiles = item.home.tiles
        follows = op.kind.lowering in ELEMENTWISE or (
            op.kind.lowering is Lowering.CHANNEL_NORM and running_statistics(op))
        inherited = self._inherit(op, item) if follows else None
        if inherited:
            return inherited
        planned = self._partitioned(op, item)
        if planned is not None:
            return planned
        parts = forward_op_parts(op, item.span, self.ctx.batch, len(tiles), self.ctx.training,
                              self.ctx.budget, self.ctx.elem_bytes)
        return list(zip(tiles, parts, strict=False))

    def _partitioned(self, op: LayerOp, item: Item) -> list[tuple[int, Part]] | None:
        anchors, dims = self.ctx.anchors, self.ctx.dims
        if anchors is None or dims is None or op.kind.lowering not in PARTITIONED:
            return None
        layer = anchors.get(op)
        if layer is None or layer not in dims or not item.home.tiles:
            return None
        out = forward_op_parts(op, item.span, self.ctx.batch, 1, self.ctx.training)[0].outs[0]
        sub = item.span[1] - item.span[0]
        if shape_of(op.results[0])[:1] != (self.ctx.batch,):
            return None
        recorded = item.home.partition if item.home.subbatch == sub else None
        factors = recorded or layer_partition(dims[layer], sub, len(item.home.tiles))
        boxes = partition_boxes(out, factors, channel_unit(op))
        if boxes is None:
            return None
        need = NEEDS[op.kind.lowering]
        parts = []
        for tile, box in zip(item.home.tiles, boxes, strict=False):
            ins, attrs = need(op, box)
            parts.append((tile, Part((box,), ins, attrs, (False,))))
        return parts

    def _inherit(self, op: LayerOp, item: Item) -> list[tuple[int, Part]] | None:
        source, result = op.operands[0], op.results[0]
        if shape_of(source) != shape_of(result):
            return None
        out = forward_op_parts(op, item.span, self.ctx.batch, 1, self.ctx.training)[0].outs[0]
        mine = [p for p in self.pieces.get(source, ()) if p.phase == self.phase
                and p.buffer.tile in item.home.tiles and intersect(p.box, out) == p.box]
        if not mine or sum(volume(p.box) for p in mine) != volume(out):
            return None
        need = NEEDS[op.kind.lowering]
        return [(p.buffer.tile, Part((p.box,), *need(op, p.box), (False,))) for p in mine]

    # ----- phases
    def run_phase(self, phase: Phase, ops_of: Mapping[str, Sequence[Operation]]) -> None:
        backward = bool(phase.ops)
        if (backward or phase.recompute) and not self.started_backward:
            self.started_backward = True
            self.retain_for_backward()
        if backward or phase.block != self.block:
            self.forget_all_copies()
        self.block = -1 if backward else phase.block
        self.recomputing = phase.recompute
        if not backward and len(phase.items) > 1:
            self._prefetch(phase.items, ops_of)
        for item in phase.items:
            if backward:
                if phase.refresh:
                    self._refresh(item, ops_of)
                self.run_backward(phase.ops, item.home)
                continue
            ops = ops_of.get(item.layer, ())
            self._run_ops(list(ops[slice(*item.ops)] if item.ops else ops), item)
        self.barrier(phase.label)
        self.phase += 1

    def _run_ops(self, ops: list[Operation], item: Item) -> None:
        """An item's forward ops in order; a streamed op and the elementwise ops after it
        run as one chain (``_streamed_chain``)."""
        k = 0
        while k < len(ops):
            op = ops[k]
            assert isinstance(op, LayerOp)
            chain = self._streamed_chain(ops, k, item)
            if chain:
                self._run_chain(chain, item)
            elif op.results[0] not in self.virtual:
                self._run_forward(op, item)
            k += max(1, len(chain))

    def _run_forward(self, op: LayerOp, item: Item) -> None:
        made = self.batchnorm_forward(op, item.home.tiles, item.home.port) \
            if batch_statistics(op) else None
        if made is not None:
            self._record_boxes(op, {op.results[0]: made}, item.home.port)
            return
        self.run_op(op, self.forward_parts(op, item), item.home.port)

    def _refresh(self, item: Item, ops_of: Mapping[str, Sequence[Operation]]) -> None:
        """The forward ops of ``item``'s layer again over the whole batch, nothing stored."""
        self.recomputing = True
        for op in ops_of.get(item.layer, ()):
            assert isinstance(op, LayerOp)
            if op.results[0] not in self.virtual:
                self._run_forward(op, item)
        self.recomputing = False

    def _prefetch(self, items: Sequence[Item], ops_of: Mapping[str, Sequence[Operation]]) -> None:
        """Fetch together what the first op of every column's first item reads and the phase
        did not make: weights, inputs from DRAM or kept on chip. Fetched one item at a
        time, a column's transfers would queue behind the previous column's weight
        broadcast on the tiles' in-order NoC queues; fetched together, every column's
        on-chip transfers go first, then all DRAM loads, then all trees, round by round.
        A part run in steps or input-channel chunks has its first one fetched ahead."""
        readers: dict[tuple[Value, Box], list[int]] = {}
        ports: dict[tuple[Value, Box], int] = {}
        taken: set[int] = set()
        for item in items:
            op, chained = self._first_op(item, ops_of)
            if op is None or taken.intersection(item.home.tiles):
                continue
            taken.update(item.home.tiles)
            for tile, part in self._first_steps(op, item, chained):
                for value, box in zip(op.operands, part.ins, strict=True):
                    if box is not None and self._ready(value):
                        readers.setdefault((value, box), []).append(tile)
                        ports.setdefault((value, box), item.home.port)
        keys = list(readers)
        plans = [self._spread(value, box, readers[(value, box)], ports[(value, box)])
                 for value, box in keys]
        for (value, box), spread in zip(keys, self.chip.run(plans), strict=True):
            for buffer in spread.values():
                self._remember(value, box, buffer)

    def _first_op(self, item: Item, ops_of: Mapping[str, Sequence[Operation]]
                  ) -> tuple[LayerOp | None, bool]:
        """The item's first op that runs, and whether it heads a streamed chain."""
        ops = ops_of.get(item.layer, ())
        ops = ops[slice(*item.ops)] if item.ops else ops
        for k, op in enumerate(ops):
            if isinstance(op, LayerOp) and op.results[0] not in self.virtual:
                return op, bool(self._streamed_chain(ops, k, item))
        return None, False

    def _first_steps(self, op: LayerOp, item: Item, chained: bool) -> list[tuple[int, Part]]:
        """The op's parts as its first step and first input-channel chunk (what
        ``run_op`` or ``_run_chain`` fetches first; the rest streams in later)."""
        ctx, first = self.ctx, []
        parts = self.forward_parts(op, item)
        streamed = any(self._streamed(op, part) for _, part in parts)
        for tile, part in parts:
            step = self._steps(op, tile, part, streamed, chained)[0]
            first.append((tile, reduction_chunks(op, step, ctx.chunk_budget, ctx.elem_bytes)[0]))
        return first

    def _summable(self, op: GradOp, home: Home) -> bool:
        """Whether a batchnorm gradient runs on per-channel sums: its output gradient is
        held on ``home``'s tiles, or its batch boxes there fit ``Context.hold_budget``."""
        if self.held_boxes(op.grad_output, home.tiles) is not None:
            return True
        return _fits(shape_of(op.grad_output), len(home.tiles), self.ctx.elem_bytes,
                     self.ctx.hold_budget)

    def run_backward(self, ops: Sequence[Operation], home: Home) -> None:
        done: set[Operation] = set()
        for op in ops:
            if op in done:
                continue
            if isinstance(op, GradOp) and batch_statistics(op) and self._summable(op, home):
                # Both gradients of one batchnorm come from the same sums: run them together
                # on the boxes the tiles hold (by channel, by its rule, when they are too
                # big to hold).
                wanted = [o for o in ops if isinstance(o, GradOp) and o not in done
                          and batch_statistics(o) and o.operands == op.operands]
                self._record_boxes(op, self.batchnorm_backward(op, home.tiles, home.port, wanted),
                                   home.port)
                done.update(wanted)
                continue
            if self.run_training(op, home):
                continue
            parts = split_training(op, self.ctx.batch, len(home.tiles))
            self.run_op(op, list(zip(home.tiles, parts, strict=False)), home.port)


def _fits(shape: tuple[int, ...], tiles: int, elem_bytes: int, budget: int) -> bool:
    """Whether a batch split of ``shape`` over ``tiles`` gives boxes of at most ``budget``."""
    per_sample = elem_bytes * math.prod(shape[1:])
    return per_sample * -(-shape[0] // max(1, min(tiles, shape[0]))) <= budget


def _same_phase(ctx: Context, op: Operation, user: Operation) -> bool:
    """Whether two training ops run in one phase (``user`` then reads ``op``'s result on chip)."""
    phase = ctx.backward_phase.get(op)
    return phase is not None and phase == ctx.backward_phase.get(user)


def _recomputed_for(ctx: Context, op: Operation, user: Operation) -> bool:
    """Whether the training op ``user`` reads the forward op ``op``'s result from a
    recomputation: of ``op``'s block (``user`` belongs to its layers) or of ``op``'s
    layer (``user`` belongs to it)."""
    layer, reader = ctx.layer_of.get(op), ctx.layer_of.get(user)
    if op in ctx.backward or reader is None:
        return False
    if layer in ctx.refreshed:
        return reader == layer
    return layer in ctx.recomputed and ctx.block_of.get(reader) == ctx.block_of[layer]


def _op_name(op: Operation) -> str:
    return op.name.partition(".")[2] or op.name
