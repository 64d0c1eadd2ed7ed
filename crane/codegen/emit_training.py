"""Training ops on the tiles of their phase, by their rules (``crane.codegen.training_rules``).

An op with a rule is divided over the phase's tiles (:func:`training_parts`); each tile
runs its part in steps that fit ``Context.training_budget`` (:func:`training_steps`,
reduction axes innermost). Step ``k`` of every part is fetched together, so a box several
tiles read arrives once and is shared over the NoC. The steps of one window of a part's
parallel axes add up in an accumulator (``accumulate``, in place); the window then goes
into the part's result buffer (a ``copy``, or the step computes straight into its window),
or, when a result box is larger than ``Context.hold_budget``, straight to DRAM.

Partial sums across tiles (a split along a reduction axis) are added where they lie: a
small result on the first tile, a larger one *reduce-scattered*, each tile summing one slab
of it from the others (so no tile holds more than its own partial and one slab of each
peer's). Results flushed to DRAM as partial sums are stored with ``accumulate``. When a
flushed result is read again in the same phase, a barrier follows, so the load sees the
stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from crane.codegen.boxes import Box, extent, intersect, split_span, volume, with_axis
from crane.codegen.context import Piece, is_weight
from crane.codegen.plan import Home
from crane.codegen.program import Buffer, Compute, Copy
from crane.codegen.rules import Part
from crane.codegen.statistics import Statistics
from crane.codegen.training_division import (
    Division,
    partial_bytes,
    training_divisions,
    training_steps,
)
from crane.dialects.graph_grad import UpdateOp
from crane.ir.attributes import Attribute
from crane.ir.core import Operation, Value

SMALL_REDUCTION = 4096
"""Bytes of the other tiles' partial sums (all of them) below which they are added on one
tile rather than reduce-scattered: a gather lands every partial on one tile's links and
vector unit, a reduce-scatter spreads both over the tiles."""


@dataclass
class _Run:
    """One tile's part of a training op while its steps are emitted."""

    tile: int
    part: Part
    steps: Division
    held: tuple[bool, ...]
    port: int
    results: list[Buffer | None] = field(default_factory=list)
    window: list[Box | None] = field(default_factory=list)
    """Per result, the box its accumulator holds (a multi-result op's results move on at
    different steps: ``dA`` of a matmul with every ``m`` step, ``dB`` only with ``k``)."""
    acc: list[Buffer | None] = field(default_factory=list)


class TrainingEmitter(Statistics):
    """Emits training ops by their rules (see the module docstring)."""

    def _record(self, result: Value, pieces: list[Piece], port: int) -> None:
        """Note where ``result``'s new pieces live (and store them): the emitter's."""
        raise NotImplementedError

    def run_training(self, op: Operation, home: Home) -> bool:
        """Emit ``op`` on ``home``'s tiles by its rule; False when it has none."""
        options = training_divisions(op, len(home.tiles))
        if not options:
            return False
        division = min(options, key=lambda o: self._division_rank(op, o, home.tiles))
        held = self._held(division.parts)
        runs = [self._run_of(op, tile, box, part, held, home.port)
                for tile, box, part in zip(home.tiles, division.boxes, division.parts, strict=False)]
        for k in range(max(len(r.steps.parts) for r in runs)):
            now = [r for r in runs if k < len(r.steps.parts)]
            marks = self.copy_marks(v for v in op.operands if not is_weight(v))
            fetched = self.fetch(op, [(r.tile, r.steps.parts[k]) for r in now], home.port)
            for run, ins in zip(now, fetched, strict=True):
                self._step(op, run, run.steps.parts[k], ins)
            self.forget_copies_since(marks)
        for run in runs:
            for k in range(len(run.acc)):
                self._close(op, run, k)
        self._finish(op, runs, home.port)
        return True

    def _division_rank(self, op: Operation, division: Division,
                       tiles: Sequence[int]) -> tuple[int, int, int]:
        """Smaller is better: the fewest bytes the busiest tile receives, then the fewest
        in all, then the most tiles. (The busiest tile, not the total: the whole of a
        row-wise loss gradient on one tile receives as many bytes as its two halves do on
        two, and then computes alone for twice as long.) An optimizer update takes the
        most tiles first: its weight and state come from DRAM and go back (six copies of
        its box for Adam), which a split spreads over the tiles' ports and vector units,
        against at most its gradient box received over the NoC."""
        arrivals = self._arrivals(op, division, tiles)
        if isinstance(op, UpdateOp):
            return -len(division.boxes), max(arrivals, default=0), sum(arrivals)
        return max(arrivals, default=0), sum(arrivals), -len(division.boxes)

    def _arrivals(self, op: Operation, division: Division, tiles: Sequence[int]) -> list[int]:
        """Per tile of ``division``, the bytes it must receive (operand boxes it does not
        hold yet) plus its partial sums: the division that keeps data where it is wins."""
        found = []
        for tile, part in zip(tiles, division.parts, strict=False):
            total = partial_bytes(part, self.ctx.elem_bytes)
            for value, box in zip(op.operands, part.ins, strict=True):
                if box is not None:
                    total += self.ctx.elem_bytes * (volume(box) - self._held_here(value, box, tile))
            found.append(total)
        return found

    def _held_here(self, value: Value, box: Box, tile: int) -> int:
        """Elements of ``box`` that usable pieces of ``value`` on ``tile`` hold."""
        return sum(volume(cut) for p in self.pieces.get(value, ())
                   if p.buffer.tile == tile and self._usable(p) and (cut := intersect(p.box, box)))

    def _held(self, parts: Sequence[Part]) -> tuple[bool, ...]:
        """Per result, whether every part's box of it fits ``Context.hold_budget`` (then all
        stay on chip; else all go to DRAM, so readers never find a result half in each)."""
        count = max((len(p.outs) for p in parts), default=0)
        return tuple(all(self.ctx.elem_bytes * volume(p.outs[k]) <= self.ctx.hold_budget
                         for p in parts if k < len(p.outs)) for k in range(count))

    def _run_of(self, op: Operation, tile: int, box: Box, part: Part, held: tuple[bool, ...],
                port: int) -> _Run:
        steps = training_steps(op, box, self.ctx.training_budget, self.ctx.elem_bytes)
        count = len(part.outs)
        return _Run(tile, part, steps, held[:count], port, [None] * count, [None] * count,
                    [None] * count)

    # ----- steps
    def _step(self, op: Operation, run: _Run, step: Part, ins: Sequence[Buffer | None]) -> None:
        """One step: a new window closes the last one; its first step computes into an
        accumulator (or straight into the result's window), the next ones add to it."""
        fresh = [k for k, box in enumerate(step.outs) if run.window[k] != box]
        for k in fresh:
            self._close(op, run, k)
            run.window[k] = step.outs[k]
        direct = self._direct(op, run, step) if fresh else None
        if direct is not None:
            self.chip.emit(run.tile, Compute(_name(op), (direct[0],), _present(ins),
                                             _attrs(op, step), direct[1]))
            return
        added = self._compute(op, run.tile, step, ins)
        for k, more in enumerate(added):
            total = run.acc[k]
            if k in fresh or total is None:
                run.acc[k] = more
            else:
                self.chip.emit(run.tile, Compute("accumulate", (total,), (total, more)))

    def _direct(self, op: Operation, run: _Run, step: Part) -> tuple[Buffer, tuple[tuple[int, ...], tuple[int, ...]]] | None:
        """(result buffer, window) when a single-result step with no reduction steps after
        it may compute straight into the held result's window."""
        if len(step.outs) != 1 or not run.held[0] or step.outs == run.part.outs:
            return None
        later = [s for s in run.steps.parts if s.outs == step.outs]
        if len(later) > 1:
            return None
        whole = self._result(op, run, 0)
        box = run.part.outs[0]
        offsets = tuple(a - c for (a, _), (c, _) in zip(step.outs[0], box, strict=True))
        return whole, (offsets, extent(step.outs[0]))

    def _compute(self, op: Operation, tile: int, step: Part, ins: Sequence[Buffer | None]) -> tuple[Buffer, ...]:
        outs = tuple(self.chip.alloc(tile, extent(box), r) for r, box in zip(op.results, step.outs, strict=True))
        self.chip.emit(tile, Compute(_name(op), outs, _present(ins), _attrs(op, step)))
        return outs

    def _result(self, op: Operation, run: _Run, k: int) -> Buffer:
        found = run.results[k]
        if found is None:
            found = self.chip.alloc(run.tile, extent(run.part.outs[k]), op.results[k])
            run.results[k] = found
        return found

    def _close(self, op: Operation, run: _Run, k: int) -> None:
        """Put result ``k``'s accumulated window where it goes: the held result (adopted
        when it is the whole part, else copied into its window) or DRAM."""
        box, acc = run.window[k], run.acc[k]
        run.acc[k] = None
        if box is None or acc is None:
            return
        if not run.held[k]:
            self._flush(op.results[k], acc, box, run.part.partial[k], run.port)
            return
        whole = run.part.outs[k]
        if box == whole and run.results[k] is None:
            run.results[k] = acc
            return
        target = self._result(op, run, k)
        offsets = tuple(a - c for (a, _), (c, _) in zip(box, whole, strict=True))
        self.chip.emit(run.tile, Copy(target, acc, (0,) * len(box), offsets, extent(box)))

    def _flush(self, value: Value, buffer: Buffer, box: Box, partial: bool, port: int) -> None:
        self.chip.store(value, buffer, box, port, accumulate=partial)
        self.record_store(value, box)

    # ----- results
    def _finish(self, op: Operation, runs: Sequence[_Run], port: int) -> None:
        """Reduce partial sums across tiles and record where every held result lives; a
        barrier follows when a flushed result is read again in this phase."""
        for k, result in enumerate(op.results):
            if not all(r.held[k] for r in runs):
                continue
            buffers = [(r.part.outs[k], b) for r in runs if (b := r.results[k]) is not None]
            if any(r.part.partial[k] for r in runs):
                pieces = self._reduce(result, buffers)
            else:
                pieces = buffers
            self._record(result, [self.piece_of(op, box, buf) for box, buf in pieces], port)
        if any(not all(r.held[k] for r in runs) and self._read_here(v) for k, v in enumerate(op.results)):
            self.barrier(f"flush:{op.name}")

    def _read_here(self, value: Value) -> bool:
        """Whether a training op of the current phase reads ``value``."""
        here = self.ctx.backward_phase
        phase = next((here[u] for u in value.users() if u in here), None)
        owner = value.owner_op
        return phase is not None and owner is not None and here.get(owner) == phase

    def _reduce(self, value: Value, buffers: Sequence[tuple[Box, Buffer]]) -> list[tuple[Box, Buffer]]:
        """Partial sums of one box, one per tile, added: on the first tile when the others'
        partials are small together, else one slab per tile (each tile receives its slab of
        every other partial)."""
        box = buffers[0][0]
        if len(buffers) == 1:
            return list(buffers)
        if gathered(self.ctx.elem_bytes * volume(box), len(buffers)):
            return [(box, self.chip.reduce([b for _, b in buffers], value))]
        axis = max(range(len(box)), key=lambda a: box[a][1] - box[a][0])
        spans = split_span(*box[axis], len(buffers))
        found = []
        for span, (_, owner) in zip(spans, buffers, strict=False):
            slab = with_axis(box, axis, span)
            parts = [self.chip.transfer(b, box, slab, owner.tile, value) for _, b in buffers]
            total = self.chip.alloc(owner.tile, extent(slab), value)
            self.chip.emit(owner.tile, Compute("accumulate", (total,), tuple(parts)))
            found.append((slab, total))
        return found


def gathered(box_bytes: int, partials: int) -> bool:
    """Whether ``partials`` partial sums of ``box_bytes`` each are added on one tile (the
    others' partials together at most ``SMALL_REDUCTION`` bytes) rather than reduce-scattered."""
    return box_bytes * (partials - 1) <= SMALL_REDUCTION


def _present(ins: Sequence[Buffer | None]) -> tuple[Buffer, ...]:
    return tuple(b for b in ins if b is not None)


def _attrs(op: Operation, part: Part) -> dict[str, Attribute]:
    return {**op.attributes, **part.attrs}


def _name(op: Operation) -> str:
    return op.name.partition(".")[2] or op.name


