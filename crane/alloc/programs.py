"""Allocation requests of a ``tile.program``: buffers and live ranges from SSA uses.

Instructions are numbered by their position in the program (``tile.alloc`` ops included).
A buffer (a ``tile.alloc`` result) is live from its first use to its last use, in program
order; a buffer nobody uses is live at its ``tile.alloc`` only. It is a DMA target when its
first use is a ``tile.load`` or ``tile.recv``, a DMA source when its last use is a
``tile.store`` or ``tile.send``. Compute steps (what double buffering moves loads ahead of
and draining moves stores past) are the ``tile.compute`` and ``tile.copy`` instructions,
the work of the compute unit. A tile that does not fit with both rules is allocated with
double buffering only, and one that does not fit that either without both.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.alloc.assign import Allocation, AllocationError, allocate
from crane.alloc.liveness import BufferRequest
from crane.dialects.tile import (
    AllocOp,
    ComputeOp,
    CopyOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.ir.core import Operation


@dataclass(frozen=True)
class ProgramBuffers:
    """The buffers of one program with the ops they come from, ready for :func:`allocate`."""

    allocs: tuple[AllocOp, ...]
    requests: tuple[BufferRequest, ...]
    compute_steps: tuple[int, ...]
    instructions: tuple[Operation, ...]


def buffer_name(op: AllocOp, k: int) -> str:
    """How messages name a buffer: its SSA name (``%x``), else ``buffer #k``."""
    hint = op.buffer.name_hint
    return f"%{hint}" if hint else f"buffer #{k}"


def program_buffers(program: ProgramOp) -> ProgramBuffers:
    """The allocation requests of ``program`` (see the module docstring)."""
    instructions = tuple(program.instructions)
    position = {id(op): i for i, op in enumerate(instructions)}
    allocs: list[AllocOp] = []
    requests: list[BufferRequest] = []
    names: set[str] = set()
    for i, op in enumerate(instructions):
        if not isinstance(op, AllocOp):
            continue
        name = buffer_name(op, len(allocs))
        name = name if name not in names else f"{name}#{len(allocs)}"
        names.add(name)
        users = sorted({position[id(u)] for u in op.buffer.users() if id(u) in position})
        first, last = (users[0], users[-1]) if users else (i, i)
        loaded = bool(users) and isinstance(instructions[first], LoadOp | RecvOp)
        drained = bool(users) and isinstance(instructions[last], StoreOp | SendOp)
        requests.append(BufferRequest(name, op.byte_size, first, last,
                                      dma_target=loaded, dma_source=drained))
        allocs.append(op)
    steps = tuple(i for i, op in enumerate(instructions) if isinstance(op, ComputeOp | CopyOp))
    return ProgramBuffers(tuple(allocs), tuple(requests), steps, instructions)


def allocate_program(buffers: ProgramBuffers, capacity: int, tile: int, alignment: int,
                     double_buffer: bool) -> tuple[Allocation, bool]:
    """Offsets for ``buffers`` and whether they are double-buffered.

    With ``double_buffer``, a tile whose buffers fit only without double buffering falls
    back to single buffering (its loads then wait for the compute before them) rather than
    fail. Raises ``AllocationError`` naming ``tile`` when even that does not fit; the error
    then describes the single-buffered allocation, the tile's real capacity problem.
    """
    def attempt(double: bool, drain: bool) -> Allocation:
        return allocate(buffers.requests, capacity, compute_steps=buffers.compute_steps,
                        alignment=alignment, double_buffer=double, drain=drain, tile=tile)

    if not double_buffer:
        return attempt(False, False), False
    for drain in (True, False):
        try:
            return attempt(True, drain), True
        except AllocationError:
            pass
    return attempt(False, False), False
