"""Whether a machine's SRAM is big enough for ``codegen`` to lower a network at all.

Codegen runs an op in steps that each use at most :data:`crane.cost.layer.STREAM_SHARE` of
a tile's SRAM, so the smaller the SRAM, the more steps, and the program grows without a
useful bound (ResNet-50 on 2 KiB tiles ran for minutes and gigabytes before alloc found it
could not fit). Two cheap checks run before any code is generated:

- the *minimal working set*: the smallest step of an op (one output element, the window it
  reads of one input channel, and the weights of that window) must fit a step's share;
- the *step count*: the bytes every op reads and writes, divided by a step's share, must
  stay under :data:`MAX_STEPS` (about 1.5 million instructions; the bundled networks on
  their machines need at most about 350,000 steps).

Each failure names the SRAM the network would need.
"""

from __future__ import annotations

import math

from crane.cost.layer import STREAM_SHARE
from crane.dialects.graph import FuncOp, LayerOp
from crane.dialects.graph_batch import graph_batch
from crane.dialects.graph_grad import GradOp
from crane.hardware.machine import Machine
from crane.ir.attributes import IntAttr
from crane.ir.core import Operation
from crane.ir.types import TensorType
from crane.limits import show_quantity

MAX_STEPS = 500_000
"""The most steps (operand and result bytes over a step's share of SRAM) codegen takes on."""
SHARE = f"1/{round(1 / STREAM_SHARE)}"
WINDOWED = frozenset({"conv2d", "max_pool2d", "avg_pool2d"})


def schedule_problem(func: FuncOp, schedule: Operation,
                     machine: Machine) -> tuple[Operation, str] | None:
    """:func:`sram_problem` of ``func`` at the batch ``schedule`` runs (what ``codegen`` and
    ``segment``'s SRAM account check before lowering)."""
    batch = schedule.attributes.get("batch")
    factor = max(1, batch.value // graph_batch(func)) if isinstance(batch, IntAttr) else 1
    return sram_problem(func, machine, factor)


def sram_problem(func: FuncOp, machine: Machine, factor: int) -> tuple[Operation, str] | None:
    """The op to blame (or ``func``) and why, if ``machine``'s SRAM is too small to lower
    ``func`` run at ``factor`` times its batch; None if codegen can take it on."""
    step = max(1, int(STREAM_SHARE * machine.sram_bytes))
    total = 0
    for op in func.body.ops:
        least = _least_step_bytes(op, machine.data_bytes)
        if least > step:
            return op, _too_small(machine, least / STREAM_SHARE, (
                f"the smallest step of this op needs {least} bytes (one output element, the "
                f"window of one input channel it reads and that window's weights) and a step "
                f"may use {SHARE} of the SRAM"))
        total += _bytes(op, machine.data_bytes) * factor
    steps = -(-total // step)
    if steps <= MAX_STEPS:
        return None
    return func, _too_small(machine, total / MAX_STEPS / STREAM_SHARE, (
        f"its ops read and write {show_quantity(total, 'bytes')}, about {steps:,} steps of "
        f"{step} bytes ({SHARE} of the SRAM), and codegen takes at most {MAX_STEPS:,}"))


def _too_small(machine: Machine, need: float, why: str) -> str:
    # SRAMs come in powers of two; the next one up is a size the user can write.
    at_least = 1 << math.ceil(math.log2(max(need, 1.0)))
    return (f"the tile SRAM of '{machine.name}' ({show_quantity(machine.sram_bytes, 'bytes')}) is "
            f"too small to lower this network: {why}; a tile needs at least "
            f"{show_quantity(at_least, 'bytes')}")


def _least_step_bytes(op: Operation, data_bytes: int) -> int:
    if not isinstance(op, LayerOp | GradOp):
        return 0
    window = 1
    kernel = op.layer_attrs.get("kernel") if op.kind.name in WINDOWED else None
    if isinstance(kernel, tuple) and len(kernel) == 2:
        window = kernel[0] * kernel[1]
    weights = window if op.kind.name == "conv2d" else 0
    return (1 + window + weights) * data_bytes


def _bytes(op: Operation, data_bytes: int) -> int:
    values = (*op.operands, *op.results)
    return sum(v.type.num_elements for v in values if isinstance(v.type, TensorType)) * data_bytes
