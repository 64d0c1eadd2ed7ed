"""What the pictures read from a module: its functions, schedules, tile programs and machine."""

from __future__ import annotations

from crane.cost.workload import Workload
from crane.dialects.hw import machine_of
from crane.dialects.segment import ScheduleOp
from crane.dialects.tile import ProgramOp
from crane.hardware.machine import Machine
from crane.ir.attributes import StringAttr
from crane.ir.core import Operation
from crane.schedule.from_graph import workload_of


class PictureError(Exception):
    """The module lacks what a picture needs (the message says which pass to add)."""


def top_ops(module: Operation) -> list[Operation]:
    """The ops directly in the module's body."""
    if not module.regions or not module.regions[0].blocks:
        return []
    return list(module.regions[0].blocks[0].ops)


def machine(module: Operation) -> Machine:
    """The machine the module targets (``edge`` when it names none, as the passes assume)."""
    return machine_of(module) or Machine.edge()


def func_name(func: Operation) -> str:
    name = func.attributes.get("sym_name")
    return name.value if isinstance(name, StringAttr) else ""


def funcs(module: Operation) -> list[Operation]:
    """The module's ``graph.func`` ops, in order."""
    return [op for op in top_ops(module) if op.name == "graph.func"]


def schedules(module: Operation) -> list[ScheduleOp]:
    """The module's ``segment.schedule`` ops, in order."""
    return [op for op in top_ops(module) if isinstance(op, ScheduleOp)]


def programs(module: Operation) -> list[ProgramOp]:
    """The module's ``tile.program`` ops, in order."""
    return [op for op in top_ops(module) if isinstance(op, ProgramOp)]


def workloads(module: Operation, target: Machine) -> dict[str, Workload | None]:
    """The scheduler's workload of every ``graph.func`` (None where it cannot be built)."""
    found: dict[str, Workload | None] = {}
    for func in funcs(module):
        try:
            found[func_name(func)] = workload_of(func, target.data_bytes)
        except ValueError:
            found[func_name(func)] = None
    return found


def require_schedules(module: Operation, picture: str) -> list[ScheduleOp]:
    """The schedules, or a ``PictureError`` telling the user to run ``segment``."""
    found = schedules(module)
    if not found:
        raise PictureError(f"the {picture} needs a scheduled module: add the 'segment' pass "
                           "to the pipeline (e.g. -p segment)")
    return found


def snake_tile(index: int, cols: int) -> int:
    """The tile id (row * cols + col) of position ``index`` on the cost model's snake path
    (``crane.cost.placement``: even rows left to right, odd rows right to left)."""
    row, offset = divmod(index, cols)
    col = offset if row % 2 == 0 else cols - 1 - offset
    return row * cols + col
