"""Program records as ``tile`` dialect ops (``crane.dialects.tile``).

``tile_ops(tile_module)`` returns the module-level ops to insert beside the ``graph.func``:
one ``tile.dram`` per DRAM tensor, then one ``tile.program`` per mesh tile. Buffers become
the results of their ``tile.alloc`` (offset -1: the ``alloc`` pass places them).
"""

from __future__ import annotations

from crane.codegen.program import (
    Alloc,
    Barrier,
    Compute,
    Copy,
    Instruction,
    Load,
    Program,
    Recv,
    Send,
    Store,
    TileModule,
)
from crane.dialects.tile import (
    AllocOp,
    BarrierOp,
    ComputeOp,
    CopyOp,
    DramOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.ir.core import Operation, Value


def tile_ops(module: TileModule, data_bytes: int | None = None) -> list[Operation]:
    """``tile.dram`` declarations then ``tile.program`` ops, in tile order.

    With ``data_bytes`` (the machine's element width) every ``tile.alloc`` gets a ``bytes``
    footprint of its elements at that width, what the schedule counted, so ``alloc`` packs
    SRAM as the machine would while the simulator still computes in the IR's float32.
    """
    ops: list[Operation] = [DramOp.build(t.name, t.shape, t.role, t.dtype) for t in module.tensors]
    ops += [program_op(p, data_bytes) for p in module.programs]
    return ops


def program_op(program: Program, data_bytes: int | None = None) -> ProgramOp:
    op = ProgramOp.build(program.tile, program.row, program.col)
    values: dict[int, Value] = {}
    body = op.body
    for instruction in program.body:
        body.append(_instruction(instruction, values, data_bytes))
    return op


def _instruction(ins: Instruction, values: dict[int, Value], data_bytes: int | None) -> Operation:
    if isinstance(ins, Alloc):
        count = 1
        for d in ins.buffer.shape:
            count *= d
        nbytes = count * data_bytes if data_bytes is not None else None
        made = AllocOp.build(ins.buffer.shape, ins.buffer.dtype, nbytes=nbytes)
        values[ins.buffer.id] = made.results[0]
        return made
    if isinstance(ins, Load):
        return LoadOp.build(values[ins.buffer.id], ins.tensor, ins.offsets, ins.port)
    if isinstance(ins, Store):
        return StoreOp.build(values[ins.buffer.id], ins.tensor, ins.offsets, ins.port, ins.accumulate)
    if isinstance(ins, Send):
        return SendOp.build(values[ins.buffer.id], ins.peer, ins.tag, window=ins.window)
    if isinstance(ins, Recv):
        return RecvOp.build(values[ins.buffer.id], ins.peer, ins.tag, window=ins.window)
    if isinstance(ins, Copy):
        return CopyOp.build(values[ins.dst.id], values[ins.src.id], ins.src_offsets,
                            ins.dst_offsets, ins.shape)
    if isinstance(ins, Compute):
        return ComputeOp.build(ins.op, [values[b.id] for b in ins.outs],
                               [values[b.id] for b in ins.ins], dict(ins.attrs), window=ins.window,
                               in_windows=ins.in_windows)
    assert isinstance(ins, Barrier)
    return BarrierOp.build(ins.id, ins.tiles, label=ins.label)
