"""``alloc``: byte offsets for the SRAM buffers of every ``tile.program`` (over ``crane.alloc``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from crane.alloc.assign import Allocation, AllocationError
from crane.alloc.programs import ProgramBuffers, allocate_program, program_buffers
from crane.dialects.hw import machine_of
from crane.dialects.tile import AllocOp, ProgramOp
from crane.hardware.machine import Machine
from crane.ir.attributes import DictAttr, FloatAttr, IntAttr
from crane.ir.core import Operation
from crane.ir.location import UnknownLoc
from crane.ir.types import BufferType
from crane.limits.ranges import PowerOfTwo
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass

ALLOC_ATTR = "crane.alloc"
"""Module attribute with the allocation figures over all tiles."""

Overflowed = tuple[ProgramOp, ProgramBuffers, AllocationError]
"""A program that does not fit, its buffers and the allocator's error."""

NOTED = 8
"""How many live buffers (the largest) get a note of their own in an overflow error."""


def _elements(op: AllocOp) -> int:
    kind = op.buffer.type
    count = 1
    for d in kind.shape if isinstance(kind, BufferType) else ():
        count *= d
    return count


@dataclass(frozen=True)
class Alloc(Pass):
    """Give every ``tile.alloc`` a byte ``offset`` in its tile's SRAM.

    Runs after ``codegen`` (buffers are SSA values codegen creates, so allocation follows
    instruction selection, like register allocation). For each ``tile.program`` the
    buffers' live ranges come from their SSA uses in program order
    (``crane.alloc.programs``); ``crane.alloc.assign`` places them by interval best fit at
    ``alignment``-byte offsets so that no two buffers live at one instruction share a
    byte. With ``double-buffer`` (the default) a buffer filled by a ``tile.load`` is live
    from the compute step before the load, so the load can overlap that compute, and a
    buffer a ``tile.store`` or ``tile.send`` reads last stays live until the next compute
    step, so the store overlaps that compute (``crane.alloc.liveness``); a tile that does
    not fit so keeps the loads' rule alone, and one that fits only without both is
    allocated without them (statistic ``single-buffered-programs``). Every offset is (re)assigned, hand-written
    ones included.

    The capacity is the targeted ``hw.machine``'s ``sram_bytes`` (``edge`` when the module
    names none). When tiles do not fit, one error is reported, at the first such
    ``tile.program``, with notes at the instruction where it fails, at every buffer live
    there (name and bytes) and one counting the other tiles; no offset is changed. (After
    ``segment``'s SRAM account, ``crane.codegen.account``, a lowered plan always fits.)

    The module gets ``crane.alloc = {tiles, peak_bytes_max, peak_bytes_mean,
    fragmentation_max, fragmentation_mean, single_buffered_tiles}`` (peak = highest byte used on a tile;
    fragmentation = 1 - most live bytes / peak). Statistics: ``programs``, ``buffers``,
    ``peak-bytes-max``, ``peak-bytes-mean``, ``fragmentation-max-permille``,
    ``fragmentation-mean-permille``, ``single-buffered-programs``.

    Example: ``crane-opt net.tile.mlir -p 'alloc{alignment=128 double-buffer=false}'``.
    """

    name = "alloc"
    summary = "assign SRAM byte offsets to tile buffers (liveness, alignment, double buffering)"
    anchor = "builtin.module"

    alignment: Annotated[int, PowerOfTwo(2**20)] = 64
    """Byte alignment of every buffer offset."""
    double_buffer: bool = True
    """Start DMA-loaded buffers one compute step early so loads overlap compute."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        body = op.regions[0].blocks[0] if op.regions and op.regions[0].blocks else None
        programs = [p for p in body.ops if isinstance(p, ProgramOp)] if body is not None else []
        machine = machine_of(op) or Machine.edge()
        failed: list[Overflowed] = []
        done = [r for r in (self.allocate(p, machine, failed, ctx) for p in programs) if r]
        if failed:
            self.report(failed, op, machine, ctx)
            return
        if not done:
            return
        results = [allocation for allocation, _ in done]
        peaks = [r.peak_bytes for r in results]
        frags = [r.fragmentation for r in results]
        op.attributes[ALLOC_ATTR] = DictAttr.of({
            "tiles": IntAttr(len(results)), "peak_bytes_max": IntAttr(max(peaks)),
            "peak_bytes_mean": FloatAttr(sum(peaks) / len(peaks)),
            "fragmentation_max": FloatAttr(round(max(frags), 6)),
            "fragmentation_mean": FloatAttr(round(sum(frags) / len(frags), 6)),
            "single_buffered_tiles": IntAttr(sum(1 for _, double in done
                                                 if self.double_buffer and not double)),
        })
        ctx.statistic("peak-bytes-max", max(peaks))
        ctx.statistic("peak-bytes-mean", round(sum(peaks) / len(peaks)))
        ctx.statistic("fragmentation-max-permille", round(1000 * max(frags)))
        ctx.statistic("fragmentation-mean-permille", round(1000 * sum(frags) / len(frags)))

    def allocate(self, program: ProgramOp, machine: Machine, failed: list[Overflowed],
                 ctx: PassContext) -> tuple[Allocation, bool] | None:
        """Allocate one program and write its offsets; None (added to ``failed``) if it
        overflows.

        The flag says whether the program is double-buffered."""
        buffers = program_buffers(program)
        try:
            result, double = allocate_program(buffers, machine.sram_bytes, program.tile,
                                              self.alignment, self.double_buffer)
        except AllocationError as problem:
            failed.append((program, buffers, problem))
            return None
        for alloc_op, offset in zip(buffers.allocs, result.offsets, strict=True):
            alloc_op.attributes["offset"] = IntAttr(offset)
        if self.double_buffer and not double:
            ctx.statistic("single-buffered-programs")
        ctx.statistic("programs")
        ctx.statistic("buffers", len(buffers.allocs))
        return result, double

    @staticmethod
    def report(failed: list[Overflowed], module: Operation, machine: Machine,
               ctx: PassContext) -> None:
        """One overflow error, for the first tile that overflows, with notes at the failing
        instruction and the live buffers, and a last note counting the other tiles.

        Reported at the program, or at the module when the program has no location (IR
        built by a pass). A note gives the live bytes at the machine's element width
        when that differs from the IR's element types (``Machine.data_bytes``)."""
        program, buffers, problem = failed[0]
        where = buffers.instructions[problem.instruction]
        anchor = module if isinstance(program.location, UnknownLoc) else program
        diag = ctx.emit_error(anchor, f"{problem} ('{where.name}')")
        diag.attach_note(f"tile {program.tile} runs out of SRAM here", where.location)
        by_name = {r.name: (r, a) for r, a in zip(buffers.requests, buffers.allocs, strict=True)}
        for (name, nbytes), live in list(zip(problem.live, problem.ranges, strict=True))[:NOTED]:
            alloc_op = by_name[name][1]
            diag.attach_note(f"{name} ({nbytes:,} bytes) is live from instruction "
                             f"{live.start} to {live.stop}", alloc_op.location)
        if len(problem.live) > NOTED:
            rest = problem.live[NOTED:]
            diag.attach_note(f"and {len(rest)} smaller buffers live there "
                             f"({sum(n for _, n in rest):,} bytes)")
        narrow = sum(_elements(by_name[name][1]) * machine.data_bytes for name, _ in problem.live)
        if narrow != problem.live_bytes:
            diag.attach_note(f"at the machine's {machine.data_bytes}-byte elements these buffers "
                             f"would take {narrow:,} bytes; the IR's element types size them here")
        if len(failed) > 1:
            tiles = ", ".join(str(p.tile) for p, _, _ in failed[1:])
            more = "1 more tile runs" if len(failed) == 2 else f"{len(failed) - 1} more tiles run"
            diag.attach_note(f"{more} out of SRAM too ({tiles})")
