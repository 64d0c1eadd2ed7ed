"""Streamed results, and chains of ops run on them step by step.

A forward part whose result box is too big to hold (``Context.hold_budget``) is *streamed*:
made step by step and stored as it goes; its readers load it back after a barrier. The
ops after a streamed op that nothing else reads between and that map each step's box of its
result to the same box (its activation, an inference batchnorm, a softmax or a layer norm
whose axes every step holds whole) run on each step's result on chip, so only the chain's
last result goes to DRAM, as the cost model prices a layer with its merged ops.
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.codegen.boxes import Box, volume
from crane.codegen.context import Piece, is_weight
from crane.codegen.emit_training import TrainingEmitter
from crane.codegen.plan import Item
from crane.codegen.program import Buffer
from crane.codegen.rules import NEEDS, Part, running_statistics, shape_of, split_axes
from crane.codegen.statistics import batch_statistics
from crane.codegen.steps import temporal_chunks
from crane.dialects.graph import LayerOp
from crane.dialects.layers.definition import Lowering
from crane.ir.core import Operation, Value


class StreamChains(TrainingEmitter):
    """Streaming of big results and the chains run on them (see the module docstring)."""

    store_set: set[Value]
    """Results DRAM must hold: the emitter's."""

    def forward_parts(self, op: LayerOp, item: Item) -> list[tuple[int, Part]]:
        """The parts of a forward op: the emitter's."""
        raise NotImplementedError

    def run_parts(self, op: Operation, parts: Sequence[tuple[int, Part]], port: int,
                  into: Sequence[tuple[Buffer, Box] | None] | None = None) -> list[tuple[Buffer, ...]]:
        """The output buffers of some parts: the emitter's."""
        raise NotImplementedError

    def _readers(self, value: Value) -> list[Operation]:
        """The ops reading ``value``: the emitter's."""
        raise NotImplementedError

    def _streamed(self, op: Operation, part: Part) -> bool:
        """Whether a forward part's output is too big to hold (it goes to DRAM by steps);
        never during a recomputation, whose results the training ops read on chip."""
        out = self.ctx.elem_bytes * sum(volume(b) for b in part.outs)
        return not self.recomputing and out > self.ctx.hold_budget and len(op.results) == 1

    def _stream_out(self, value: Value, buffer: Buffer, box: Box, port: int) -> None:
        """A step's output straight to DRAM (its readers load it after a barrier)."""
        self.chip.store(value, buffer, box, port)
        self.record_store(value, box)

    def _streamed_chain(self, ops: Sequence[Operation], k: int, item: Item) -> list[LayerOp]:
        """``ops[k]`` and the ops after it that only transform its result element by element
        (an activation, an inference batchnorm), when ``ops[k]``'s result is streamed to
        DRAM and nothing else reads the results in between: [] otherwise. Run step by step,
        each step's result goes through the whole chain on chip and only the last result
        goes to DRAM, as the cost model prices a layer with its merged ops."""
        op = ops[k]
        if not isinstance(op, LayerOp) or batch_statistics(op) or self.recomputing \
                or len(op.results) != 1 or op.results[0] in self.virtual:
            return []
        parts = self.forward_parts(op, item)
        if not any(self._streamed(op, part) for _, part in parts) \
                or any(any(part.partial) for _, part in parts):
            return []
        chain = [op]
        for follower in ops[k + 1:]:
            if not isinstance(follower, LayerOp) or not self._transforms(chain[-1], follower):
                break
            chain.append(follower)
        if len(chain) == 1:
            return []
        # Up to the first follower a step would cut across its axis, or whose whole axes
        # leave the steps too few to fit the step budget.
        free = sum(len(s) for s in self._chain_steps(chain[:1], parts))
        while len(chain) > 1:
            steps = [step for part_steps in self._chain_steps(chain, parts) for step in part_steps]
            served = next((n for n, follower in enumerate(chain[1:], 1) if _needed_whole(follower)
                           and (len(steps) < free or not all(
                               _holds_whole(follower, s.outs[0]) for s in steps))), len(chain))
            if served == len(chain):
                return chain
            chain = chain[:served]
        return []

    def _chain_steps(self, chain: Sequence[LayerOp],
                     parts: Sequence[tuple[int, Part]]) -> list[list[Part]]:
        """The steps of each part of a chain's first op: each step's box also holds one more
        result (the followers'), and spans the axes the followers need whole."""
        ctx = self.ctx
        whole = frozenset(axis for follower in chain[1:] for axis in _needed_whole(follower))
        return [temporal_chunks(chain[0], part, ctx.step_budget, ctx.elem_bytes,
                                ctx.chunk_budget, extra_outputs=1, whole=whole)
                for _, part in parts]

    def _transforms(self, op: LayerOp, follower: LayerOp) -> bool:
        """Whether ``follower`` maps each box of ``op``'s result to the same box of its own
        (element by element, or along axes a box may need whole; its other operands
        weights) and is its only reader, with nothing else needing that result."""
        result = op.results[0]
        elementwise = follower.kind.lowering in BOX_LOCAL or (
            follower.kind.lowering is Lowering.CHANNEL_NORM and running_statistics(follower))
        return (elementwise and len(follower.results) == 1
                and follower.results[0] not in self.virtual and follower.operands[0] is result
                and all(is_weight(v) for v in follower.operands[1:])
                and shape_of(follower.results[0]) == shape_of(result)
                and self._readers(result) == [follower] and result not in self.store_set)

    def _run_chain(self, chain: Sequence[LayerOp], item: Item) -> None:
        """Run a streamed chain: each step of its first op's parts, then the other ops on
        that step's boxes reading the previous result on chip, the last result streamed to
        DRAM; steps are cut so the chain's extra results fit the step budget too."""
        head, port = chain[0], item.home.port
        parts = self.forward_parts(head, item)
        steps = self._chain_steps(chain, parts)
        inputs = [v for op in chain for v in op.operands if not is_weight(v)]
        # The intermediate results live one step at a time: their pieces are the step's.
        earlier: dict[Value, list[Piece]] = {
            op.results[0]: list(self.pieces.get(op.results[0], ())) for op in chain[:-1]}
        stepped = any(len(s) > 1 for s in steps)
        for step in range(max((len(s) for s in steps), default=0)):
            now = [(tile, s[step]) for (tile, _), s in zip(parts, steps, strict=True)
                   if step < len(s)]
            marks = self.copy_marks(inputs)
            buffers = [outs[0] for outs in self.run_parts(head, now, port)]
            boxes = [(tile, part.outs[0]) for tile, part in now]
            for made, op in zip(chain, chain[1:], strict=False):
                self.pieces[made.results[0]] = earlier[made.results[0]] + [
                    self.piece_of(made, box, buffer)
                    for (_, box), buffer in zip(boxes, buffers, strict=True)]
                need = NEEDS[op.kind.lowering]
                buffers = [outs[0] for outs in self.run_parts(
                    op, [(tile, Part((box,), *need(op, box), (False,))) for tile, box in boxes], port)]
            for (_, box), buffer in zip(boxes, buffers, strict=True):
                self._stream_out(chain[-1].results[0], buffer, box, port)
            if stepped:
                self.forget_copies_since(marks)
        self.pieces.update(earlier)
        self._record(chain[-1].results[0], [], port)
        self.barrier(f"stream:{chain[-1].results[0].name_hint or chain[-1].name}")


BOX_LOCAL = frozenset({Lowering.UNARY, Lowering.AXIS_NORM, Lowering.LAST_AXES_NORM})
"""Lowering classes that make a box of their result from the same box of their input (the
normalising ones when the box holds their axes whole: ``_holds_whole``)."""


def _needed_whole(op: LayerOp) -> frozenset[int]:
    """The axes of ``op``'s result it may not be split along (a softmax's axis)."""
    allowed = {axis for split in split_axes(op, True) for axis in split}
    return frozenset(range(len(shape_of(op.results[0])))) - allowed


def _holds_whole(op: LayerOp, box: Box) -> bool:
    """Whether ``box`` of ``op``'s result spans every axis the op may not be split along."""
    shape = shape_of(op.results[0])
    return all(box[axis] == (0, shape[axis]) for axis in _needed_whole(op))
