"""The instruction emitter: runs the phases of ``crane.codegen.plan`` on a model of the chip.

The emitter walks the items in order and, for every op of an item's layer, divides it over
the item's tiles (``crane.codegen.rules``) and emits on each tile: the operand buffers, the
``compute`` and the bookkeeping of where each result box now lives (a *piece*: tile,
buffer, phase). An operand box is obtained, in this order of preference:

1. from pieces on chip that may still be read: produced in the current phase, or held in
   SRAM because the producing layer is fused (its output stays on chip within its block).
   A piece on another tile is cut to the needed box (``compute "slice"``) and sent over the
   NoC (``send``/``recv``, unique tags); several pieces are joined with ``compute
   "concat"`` along the axes that separate them;
2. from DRAM (``load`` with the box's offsets), for network inputs, weights (cached per tile
   within a block), optimizer state and values stored in an earlier phase.

A dense conv or linear part that would read and write more than half a tile's SRAM (at
the machine's element width) runs in input-channel chunks whose partial sums the tile adds
as it goes (``rules.reduction_chunks``). A result is stored to DRAM when it is a network output, feeds a backward op, or feeds a
layer that cannot take it from SRAM (its producer is not fused, or it is in another
block). Partial sums (batch-split weight gradients) are sent to the first tile of the op,
added there (``compute "add"``) and stored once. Every send is emitted right before its
matching receive and every barrier on all tiles at once, so the programs cannot deadlock
whether sends block or not: each blocking instruction waits only for instructions emitted
before it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crane.codegen.boxes import Box, extent, full, intersect, starts, text, volume
from crane.codegen.ownership import CodegenError
from crane.codegen.plan import Home, Item, Phase
from crane.codegen.program import (
    Alloc,
    Barrier,
    Buffer,
    Compute,
    Copy,
    DramTensor,
    Instruction,
    Load,
    Program,
    Recv,
    Send,
    Store,
)
from crane.codegen.rules import (
    ELEMENTWISE,
    Part,
    reduction_chunks,
    running_statistics,
    shape_of,
    split_forward,
    split_training,
)
from crane.dialects.graph import LayerOp, WeightOp
from crane.dialects.graph_grad import OptimizerStateOp
from crane.ir.core import BlockArgument, Operation, Value
from crane.ir.types import TensorType


@dataclass(frozen=True, slots=True)
class Piece:
    """A box of a value held in one SRAM buffer."""

    box: Box
    buffer: Buffer
    phase: int
    held: bool
    block: int


@dataclass(frozen=True)
class Context:
    """What the emitter knows of the network and its schedule."""

    batch: int
    training: bool
    layer_of: Mapping[Operation, str]
    fused: Mapping[str, bool]
    block_of: Mapping[str, int]
    outputs: Mapping[Value, str]
    """Returned values -> their output names (as the reference interpreter names them)."""
    backward: frozenset[Operation]
    budget: int = 0
    """SRAM bytes one part of an op may read and write before another split is tried."""
    elem_bytes: int = 1
    """The machine's element width (what ``budget`` counts)."""
    chunk_budget: int = 0
    """Bytes above which a dense conv or linear part runs in input-channel chunks."""


def _dtype(value: Value) -> str:
    return str(value.type.element) if isinstance(value.type, TensorType) else "f32"


def _resident(value: Value) -> bool:
    """Network inputs, weights and optimizer state live in DRAM from the start."""
    return isinstance(value, BlockArgument) or isinstance(value.owner_op, WeightOp | OptimizerStateOp)


class Emitter:
    """Emits the programs of all mesh tiles phase by phase (see the module docstring)."""

    def __init__(self, rows: int, cols: int, ctx: Context) -> None:
        self.programs = [Program(r * cols + c, r, c) for r in range(rows) for c in range(cols)]
        self.ctx = ctx
        self.pieces: dict[Value, list[Piece]] = {}
        self.stored: dict[Value, list[tuple[Box, int]]] = {}
        self.cache: dict[tuple[int, Value, Box], Buffer] = {}
        self.tensors: dict[Value, DramTensor] = {}
        self.names: set[str] = set()
        self.phase = 0
        self.block = -1
        self.buffers = 0
        self.tags = 0
        self.store_set = self._must_store()

    # ----- bookkeeping
    def _must_store(self) -> set[Value]:
        ctx, found = self.ctx, set(self.ctx.outputs)
        for op, layer in ctx.layer_of.items():
            for result in op.results:
                for user in result.users():
                    if user in ctx.backward or op in ctx.backward:
                        found.add(result)
                        continue
                    other = ctx.layer_of.get(user)
                    if other is None or other == layer:
                        continue
                    if not ctx.fused.get(layer) or ctx.block_of[other] != ctx.block_of[layer]:
                        found.add(result)
        return found

    def emit(self, tile: int, instruction: Instruction) -> None:
        self.programs[tile].body.append(instruction)

    def alloc(self, tile: int, shape: tuple[int, ...], value: Value) -> Buffer:
        self.buffers += 1
        buffer = Buffer(self.buffers, tile, shape, _dtype(value), self.tensor(value).name
                        if value in self.tensors else (value.name_hint or ""))
        self.emit(tile, Alloc(buffer))
        return buffer

    def tensor(self, value: Value) -> DramTensor:
        """The DRAM tensor of ``value`` (declared on first use)."""
        found = self.tensors.get(value)
        if found is not None:
            return found
        owner = value.owner_op
        if value in self.ctx.outputs:
            name, role = self.ctx.outputs[value], "output"
        elif isinstance(value, BlockArgument):
            name, role = value.name_hint or f"arg{value.index}", "input"
        elif isinstance(owner, WeightOp):
            name, role = owner.weight_name, "weight"
        elif isinstance(owner, OptimizerStateOp):
            name, role = owner.state_name, "state"
        else:
            name = self._unique(value.name_hint or "v")
            role = "gradient" if owner in self.ctx.backward else "activation"
        self.names.add(name)
        made = DramTensor(name, shape_of(value), _dtype(value), role)
        self.tensors[value] = made
        return made

    def _unique(self, base: str) -> str:
        name, k = base, 1
        while name in self.names or any(t.name == name for t in self.tensors.values()):
            k += 1
            name = f"{base}#{k}"
        return name

    # ----- moving boxes
    def get(self, value: Value, box: Box, tile: int, port: int, cache: bool = True) -> Buffer:
        """A buffer on ``tile`` holding ``box`` of ``value`` (see the module docstring)."""
        if _resident(value):
            key = (tile, value, box)
            cached = self.cache.get(key) if cache and isinstance(value.owner_op, WeightOp) else None
            if cached is None:
                cached = self.load(value, box, tile, port)
                if cache:
                    self.cache[key] = cached
            return cached
        usable = [p for p in self.pieces.get(value, ())
                  if p.phase == self.phase or (p.held and p.block == self.block)]
        hits = [(cut, p) for p in usable if (cut := intersect(p.box, box)) is not None]
        if hits and sum(volume(cut) for cut, _ in hits) == volume(box):
            parts = [(cut, self.move(self.cut(p.buffer, p.box, cut, value), tile, value))
                     for cut, p in hits]
            return self.join(parts, box, tile, value)
        stored = [b for b, phase in self.stored.get(value, ()) if phase < self.phase]
        covered = sum(volume(c) for b in stored if (c := intersect(b, box)) is not None)
        if covered != volume(box):
            raise CodegenError(f"codegen bug: {text(box)} of '{value.name_hint}' is neither on "
                               f"chip nor in DRAM in phase {self.phase}", value.owner_op)
        return self.load(value, box, tile, port)

    def load(self, value: Value, box: Box, tile: int, port: int) -> Buffer:
        buffer = self.alloc(tile, extent(box), value)
        self.emit(tile, Load(buffer, self.tensor(value).name, starts(box), port))
        return buffer

    def cut(self, buffer: Buffer, have: Box, want: Box, value: Value) -> Buffer:
        """``want`` out of a buffer holding ``have`` (a ``copy`` unless they are equal)."""
        if have == want:
            return buffer
        out = self.alloc(buffer.tile, extent(want), value)
        offsets = tuple(c - a for (a, _), (c, _) in zip(have, want, strict=True))
        self.emit(buffer.tile, Copy(out, buffer, offsets, (0,) * len(want), extent(want)))
        return out

    def move(self, buffer: Buffer, tile: int, value: Value) -> Buffer:
        """``buffer`` sent to ``tile`` (itself when it is already there)."""
        if buffer.tile == tile:
            return buffer
        self.tags += 1
        target = self.alloc(tile, buffer.shape, value)
        self.emit(buffer.tile, Send(buffer, tile, self.tags))
        self.emit(tile, Recv(target, buffer.tile, self.tags))
        return target

    def join(self, parts: Sequence[tuple[Box, Buffer]], box: Box, tile: int, value: Value) -> Buffer:
        """One buffer holding ``box`` from pieces that tile it (a ``copy`` per piece)."""
        if len(parts) == 1:
            return parts[0][1]
        out = self.alloc(tile, extent(box), value)
        for have, buffer in parts:
            offsets = tuple(a - c for (a, _), (c, _) in zip(have, box, strict=True))
            self.emit(tile, Copy(out, buffer, (0,) * len(have), offsets, extent(have)))
        return out

    # ----- ops
    def run_op(self, op: Operation, parts: Sequence[tuple[int, Part]], port: int) -> None:
        """Emit every part of ``op``, reduce partial sums, store what DRAM must hold."""
        held = bool(self.ctx.fused.get(self.ctx.layer_of.get(op, ""))) and self.block >= 0
        made: list[list[Piece]] = [[] for _ in op.results]
        partial: list[list[Buffer]] = [[] for _ in op.results]
        for tile, part in parts:
            outs = self.compute(op, part, tile, port)
            for k, (box, buffer) in enumerate(zip(part.outs, outs, strict=True)):
                if part.partial and part.partial[k]:
                    partial[k].append(buffer)
                else:
                    made[k].append(Piece(box, buffer, self.phase, held, self.block))
        for k, buffers in enumerate(partial):
            if buffers:
                made[k].append(Piece(full(shape_of(op.results[k])), self.reduce(buffers, op.results[k]),
                                     self.phase, held, self.block))
        for result, pieces in zip(op.results, made, strict=True):
            self.pieces.setdefault(result, []).extend(pieces)
            if result in self.store_set:
                self.store(result, pieces, port)

    def compute(self, op: Operation, part: Part, tile: int, port: int) -> tuple[Buffer, ...]:
        """One part on ``tile``: operands, compute (in input-channel chunks if too big)."""
        chunks = reduction_chunks(op, part, self.ctx.chunk_budget, self.ctx.elem_bytes)
        total: tuple[Buffer, ...] = ()
        for chunk in chunks:
            ins = tuple(self.get(v, box, tile, port, cache=len(chunks) == 1)
                        for v, box in zip(op.operands, chunk.ins, strict=True) if box is not None)
            outs = tuple(self.alloc(tile, extent(box), r) for r, box in zip(op.results, chunk.outs, strict=True))
            self.emit(tile, Compute(_op_name(op), outs, ins, {**op.attributes, **chunk.attrs}))
            if total:
                added = self.alloc(tile, outs[0].shape, op.results[0])
                self.emit(tile, Compute("accumulate", (added,), (total[0], outs[0])))
                outs = (added,)
            total = outs
        return total

    def reduce(self, buffers: Sequence[Buffer], value: Value) -> Buffer:
        """Partial sums sent to the first one's tile and added there (``accumulate``)."""
        first = buffers[0]
        if len(buffers) == 1:
            return first
        moved = [first, *(self.move(b, first.tile, value) for b in buffers[1:])]
        out = self.alloc(first.tile, first.shape, value)
        self.emit(first.tile, Compute("accumulate", (out,), tuple(moved)))
        return out

    def store(self, value: Value, pieces: Sequence[Piece], port: int) -> None:
        name = self.tensor(value).name
        for piece in pieces:
            self.emit(piece.buffer.tile, Store(piece.buffer, name, starts(piece.box), port))
            self.stored.setdefault(value, []).append((piece.box, self.phase))

    def forward_parts(self, op: LayerOp, item: Item) -> list[tuple[int, Part]]:
        """The parts of a forward op; elementwise ops follow their input's pieces."""
        tiles = item.home.tiles
        follows = op.kind.name in ELEMENTWISE or (op.kind.name == "batchnorm"
                                                  and running_statistics(op))
        inherited = self._inherit(op, item) if follows else None
        if inherited:
            return inherited
        parts = split_forward(op, item.span, self.ctx.batch, len(tiles), self.ctx.training,
                              self.ctx.budget, self.ctx.elem_bytes)
        return list(zip(tiles, parts, strict=False))

    def _inherit(self, op: LayerOp, item: Item) -> list[tuple[int, Part]] | None:
        source, result = op.operands[0], op.results[0]
        if shape_of(source) != shape_of(result):
            return None
        out = split_forward(op, item.span, self.ctx.batch, 1, self.ctx.training)[0].outs[0]
        mine = [p for p in self.pieces.get(source, ()) if p.phase == self.phase
                and p.buffer.tile in item.home.tiles and intersect(p.box, out) == p.box]
        if not mine or sum(volume(p.box) for p in mine) != volume(out):
            return None
        from crane.codegen.rules import NEEDS
        need = NEEDS[op.kind.name]
        return [(p.buffer.tile, Part((p.box,), need(op, p.box)[0], {}, (False,))) for p in mine]

    # ----- phases
    def run_phase(self, phase: Phase, ops_of: Mapping[str, Sequence[Operation]]) -> None:
        backward = bool(phase.ops)
        if not backward and phase.block != self.block:
            self.cache.clear()
        self.block = -1 if backward else phase.block
        for item in phase.items:
            if backward:
                self.run_backward(phase.ops, item.home)
                continue
            ops = ops_of.get(item.layer, ())
            for op in ops[slice(*item.ops)] if item.ops else ops:
                assert isinstance(op, LayerOp)
                self.run_op(op, self.forward_parts(op, item), item.home.port)
        self.barrier()

    def run_backward(self, ops: Sequence[Operation], home: Home) -> None:
        self.cache.clear()
        for op in ops:
            parts = split_training(op, self.ctx.batch, len(home.tiles))
            self.run_op(op, list(zip(home.tiles, parts, strict=False)), home.port)

    def barrier(self) -> None:
        tiles = tuple(p.tile for p in self.programs)
        for program in self.programs:
            program.body.append(Barrier(self.phase, tiles))
        self.phase += 1


def _op_name(op: Operation) -> str:
    return op.name.partition(".")[2] or op.name
