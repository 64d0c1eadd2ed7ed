"""When a tile program is done with its buffers and DRAM tensors (the functional simulator
frees each after its last use, so a run holds only what is live)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from crane.dialects.tile import LoadOp, StoreOp
from crane.ir.core import Operation, Value
from crane.ir.types import BufferType


def last_uses(ops: Sequence[Operation]) -> dict[int, list[Value]]:
    """Index of an instruction -> the buffers it is the last of ``ops`` to define or use."""
    last: dict[Value, int] = {}
    for index, op in enumerate(ops):
        for value in (*op.operands, *op.results):
            if isinstance(value.type, BufferType):
                last[value] = index
    dead: dict[int, list[Value]] = {}
    for value, index in last.items():
        dead.setdefault(index, []).append(value)
    return dead


def accesses(programs: Iterable[Sequence[Operation]], names: frozenset[str]) -> dict[str, int]:
    """How many loads and stores of ``programs`` name each of ``names`` (every instruction
    runs once)."""
    count = dict.fromkeys(names, 0)
    for ops in programs:
        for op in ops:
            if isinstance(op, LoadOp | StoreOp) and op.tensor in count:
                count[op.tensor] += 1
    return count
