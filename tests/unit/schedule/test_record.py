"""``crane.schedule.record``: the scheduler's block of a recorded block's layers, and the
plan a recorded block stands for."""

from __future__ import annotations

from pathlib import Path

from crane.cost.workload import Workload
from crane.dialects import default_context
from crane.dialects.graph import FuncOp
from crane.dialects.segment import ScheduleOp
from crane.dialects.segment_facts import FACT_ATTRS
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.passes.context import PassContext
from crane.passes.segment import Segment
from crane.schedule.block import Block, gradient_block
from crane.schedule.from_graph import workload_of
from crane.schedule.record import block_of, plan_of
from crane.tools.inputs import translate

NET = Path(__file__).resolve().parents[3] / "examples" / "tiny_resnet.crn"


def _module() -> Operation:
    return translate("crn", NET.read_text(), str(NET), default_context())


def _workload(module: Operation | None = None) -> Workload:
    func = next(op for op in (module or _module()).walk() if isinstance(op, FuncOp))
    found = workload_of(func, 1)
    assert len(found) > 3
    return found


def test_block_of_contiguous_layers_is_the_schedulers_block() -> None:
    workload = _workload()
    names = [layer.name for layer in workload.layers[1:4]]
    assert block_of(workload, names) == Block.of(workload, 1, 4)


def test_gradient_columns_are_the_gradient_block_of_their_forward_layers() -> None:
    workload = _workload()
    names = [f"{layer.name}.grad" for layer in reversed(workload.layers[1:3])]
    assert block_of(workload, names) == gradient_block(Block.of(workload, 1, 3))


def test_layers_that_are_not_a_block_have_none() -> None:
    workload = _workload()
    first, second, third = (layer.name for layer in workload.layers[:3])
    assert block_of(workload, [first, third]) is None  # not contiguous
    assert block_of(workload, [second, first]) is None  # out of order
    assert block_of(workload, [f"{first}.grad", second]) is None  # forward and gradient mixed
    assert block_of(workload, ["nowhere"]) is None
    assert block_of(workload, []) is None
    assert block_of(None, [first]) is None


def test_a_block_recording_no_facts_stands_for_no_plan() -> None:
    module = _module()
    workload = _workload(module)
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass("segment")
    Segment(max_block=2, time_limit=0.02).run(module, ctx)
    (schedule,) = [op for op in module.walk() if isinstance(op, ScheduleOp)]
    block = schedule.blocks[0]
    assert plan_of(block, workload) is not None
    for name in FACT_ATTRS:
        del block.attributes[name]
    assert plan_of(block, workload) is None
