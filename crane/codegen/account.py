"""The SRAM account of a schedule: what each tile's SRAM holds once the plan is lowered.

    account = sram_account(func, schedule, machine)
    account.peak_bytes, account.peaks, account.overflows

One account serves ``segment`` and ``alloc``: it places every block as ``map``'s heuristic
does (blocks already placed keep their placement), lowers the function as ``codegen`` does
(:func:`crane.codegen.lower.lower_func`) and allocates each tile's buffers with the
allocator ``alloc`` runs (:func:`crane.alloc.programs.allocate_program` over the same
:func:`~crane.alloc.programs.program_buffers`). So a plan ``segment`` accepts allocates,
and the peak it reports is the peak ``alloc`` places (with ``alloc``'s default alignment
and double buffering, and the heuristic placement; ``map{search=z3}`` may move a few
transfers and so a few bytes).

A tile that does not fit is an :class:`Overflow`: the tile, the phase (block and state, or
backward phase) it overflows in, the bytes live there and the graph values they hold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crane.alloc.assign import DEFAULT_ALIGNMENT, AllocationError
from crane.alloc.liveness import BufferRequest
from crane.alloc.programs import allocate_program, program_buffers
from crane.codegen.lower import lower_func
from crane.codegen.program import Alloc, Barrier, Program
from crane.codegen.to_ir import program_op
from crane.dialects.graph import FuncOp
from crane.dialects.segment import ScheduleOp
from crane.hardware.machine import Machine
from crane.mapping.from_schedule import mapping_attributes, problem_of
from crane.mapping.heuristic import place
from crane.schedule.from_graph import workload_of

NAMED = 4
"""How many of the largest live values an overflow names."""


@dataclass(frozen=True)
class Overflow:
    """One tile whose buffers do not fit its SRAM."""

    tile: int
    phase: str
    """Label of the phase the tile overflows in (``<block>:state<i>`` or a backward phase)."""
    needed: int
    """Bytes live where the allocation fails."""
    capacity: int
    values: tuple[tuple[str, int], ...]
    """(graph value, bytes) of the largest buffers live there."""
    reason: str

    def describe(self) -> str:
        held = ", ".join(f"{name} ({nbytes:,} B)" for name, nbytes in self.values)
        return (f"tile {self.tile} needs {self.needed:,} bytes of SRAM in phase '{self.phase}' "
                f"(it has {self.capacity:,}; {self.reason}); largest live values: {held}")


@dataclass(frozen=True)
class SramAccount:
    """Allocated peak bytes of every tile's program, and the tiles that overflow."""

    peaks: tuple[int, ...]
    overflows: tuple[Overflow, ...]

    @property
    def peak_bytes(self) -> int:
        """The busiest tile's peak (what ``alloc`` reports as ``peak_bytes_max``)."""
        return max(self.peaks, default=0)

    @property
    def fits(self) -> bool:
        return not self.overflows


def placed(func: FuncOp, schedule: ScheduleOp, machine: Machine) -> ScheduleOp:
    """A copy of ``schedule`` with every unplaced block placed by ``map``'s heuristic.

    Raises ``ValueError`` when a state asks for more tiles than the mesh has."""
    copy = schedule.clone()
    assert isinstance(copy, ScheduleOp)
    workload = workload_of(func, machine.data_bytes)
    for block in copy.blocks:
        if block.mapping() is None:
            block.attributes.update(mapping_attributes(place(problem_of(block, machine, workload))))
    return copy


def sram_account(func: FuncOp, schedule: ScheduleOp, machine: Machine,
                 alignment: int = DEFAULT_ALIGNMENT, double_buffer: bool = True) -> SramAccount:
    """The account of ``schedule`` for ``func`` on ``machine`` (see the module docstring).

    Raises ``crane.codegen.ownership.CodegenError`` when the plan cannot be lowered at all."""
    made = lower_func(func, placed(func, schedule, machine), machine)
    peaks: list[int] = []
    overflows: list[Overflow] = []
    for program in made.programs:
        peak, overflow = _tile_account(program, machine, alignment, double_buffer)
        peaks.append(peak)
        overflows += [overflow] if overflow is not None else []
    return SramAccount(tuple(peaks), tuple(overflows))


def _tile_account(program: Program, machine: Machine, alignment: int,
                  double_buffer: bool) -> tuple[int, Overflow | None]:
    """Allocated peak bytes of one program, or its overflow."""
    buffers = program_buffers(program_op(program, machine.data_bytes))
    try:
        allocation, _ = allocate_program(buffers, machine.sram_bytes, program.tile, alignment,
                                         double_buffer)
    except AllocationError as problem:
        return problem.live_bytes, _overflow(program, buffers.requests, problem, machine)
    return allocation.peak_bytes, None


def _overflow(program: Program, requests: Sequence[BufferRequest], problem: AllocationError,
              machine: Machine) -> Overflow:
    """The overflow of ``program``, naming graph values instead of buffer numbers."""
    allocs = [ins for ins in program.body if isinstance(ins, Alloc)]
    value_of = {r.name: allocs[k].buffer.value or r.name for k, r in enumerate(requests)}
    values = tuple((value_of.get(name, name), nbytes) for name, nbytes in problem.live[:NAMED])
    return Overflow(program.tile, phase_at(program, problem.instruction), problem.live_bytes,
                    machine.sram_bytes, values, problem.reason)


def phase_at(program: Program, instruction: int) -> str:
    """Label of the phase instruction ``instruction`` of ``program`` belongs to (the
    barrier ending it), or ``"the end"`` after the last barrier."""
    for ins in program.body[instruction:]:
        if isinstance(ins, Barrier):
            return ins.label or f"barrier {ins.id}"
    return "the end"
