"""Joins of a concatenation's pieces: codegen copies them into one buffer for a reader, and
the cost model counts those copies (``LayerWork.joined_input_bytes``, ``joined_bytes``)."""

from __future__ import annotations

from crane.codegen.boxes import volume
from crane.codegen.lower import lower_func
from crane.codegen.program import Copy
from crane.cost.layer import joined_bytes
from crane.cost.utilisation import Partition
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp
from crane.dialects.segment import ScheduleOp
from crane.hardware.machine import Machine
from crane.passes.segment import Segment
from crane.schedule.from_graph import workload_of
from crane.tools.inputs import translate

from .support import body, run_pass, simple_placement

BRANCHES = """
network branches {
  machine gpu11;
  input x: f32[batch, 8, 16, 16];
  a = conv2d(x, out=8, kernel=1);
  b = conv2d(x, out=24, kernel=3, padding=1);
  y = conv2d(concat(a, b, axis=1), out=16, kernel=1);
  output y;
}
"""


def _lowered(batch: int) -> tuple[FuncOp, int]:
    """The network's function and the elements its one-tile program copies."""
    module = translate("crn", BRANCHES, "branches.crn", default_context())
    assert isinstance(module, ModuleOp)
    run_pass(module, Segment(time_limit=0.01, batch=batch, mode="inference"))
    simple_placement(module)
    func = next(o for o in body(module) if isinstance(o, FuncOp))
    schedule = next(o for o in body(module) if isinstance(o, ScheduleOp))
    made = lower_func(func, schedule, Machine.gpu11())
    copied = sum(volume(tuple((0, n) for n in ins.shape)) for program in made.programs
                 for ins in program.body if isinstance(ins, Copy))
    return func, copied


def test_the_model_counts_the_copies_that_join_a_concatenation() -> None:
    machine = Machine.gpu11()
    for batch in (1, 2):
        func, copied = _lowered(batch)
        workload = workload_of(func, machine.data_bytes)
        y = workload.layer("y")
        assert y.joined_input_bytes == (8 + 24) * 16 * 16 * machine.data_bytes
        assert all(not layer.joined_input_bytes for layer in workload.layers if layer is not y)
        model = joined_bytes(y, batch, Partition(1, 1, 1, 1, 1.0)) / machine.data_bytes
        assert copied == model > 0
