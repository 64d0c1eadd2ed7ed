"""Groups on the tiles: a run of blocks with their own sub-batch size runs on the first
slice of the batch, then again on the next slice, and the tile programs still compute
what the reference interpreter computes.

The machine is a 2x2 mesh with 32 KiB of SRAM per tile, so that a batch of 8 of the
network's activations cannot stay on chip between blocks but a slice of 2 can.
"""

from __future__ import annotations

import pytest

from crane.codegen.lower import lower_func
from crane.codegen.ownership import CodegenError
from crane.codegen.plan import forward_phases, placement_of
from crane.codegen.to_ir import tile_ops
from crane.cost.bounds import lower_bounds
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp
from crane.dialects.segment import ScheduleOp
from crane.exec.tile_sim.check import check
from crane.hardware.machine import Machine
from crane.ir.attributes import StringAttr
from crane.passes.segment import Segment, schedule_op
from crane.schedule.block import Block
from crane.schedule.evaluate import BlockCost
from crane.schedule.from_graph import workload_of
from crane.schedule.objective import Objective
from crane.schedule.policies import crane_solver
from crane.schedule.search import BlockChoice, Schedule
from crane.tools.inputs import translate
from crane.viz.timeline import timeline

from .support import body, run_pass, set_mesh, simple_placement

NET = """
block cbr(x, c, k=3) {
  return relu(batchnorm(conv2d(x, out=c, kernel=k, padding=same, bias=false)));
}
network wide {
  machine edge;
  batch 8;
  input image: f32[batch, 3, 32, 32];
  a = cbr(image, 16);
  b = cbr(a, 16);
  c = cbr(b, 16);
  d = cbr(max_pool2d(c, kernel=2, stride=2), 32);
  logits = linear(flatten(global_avg_pool(d)), out=5);
  output logits;
}
"""


def _scheduled(groups: bool) -> tuple[ModuleOp, Machine, ScheduleOp]:
    module = translate("crn", NET, "wide.crn", default_context())
    assert isinstance(module, ModuleOp)
    machine = set_mesh(module, 2, 2, sram_bytes=32 * 1024)
    run_pass(module, Segment(time_limit=0.01, max_block=4, groups=groups))
    simple_placement(module)
    schedule = next(op for op in body(module) if isinstance(op, ScheduleOp))
    return module, machine, schedule


def test_grouped_schedule_runs_slice_by_slice_and_matches_the_reference() -> None:
    module, machine, schedule = _scheduled(groups=True)
    grouped = [b for b in schedule.blocks if b.group is not None]
    assert grouped and grouped[0].samples < 8
    func = next(op for op in body(module) if isinstance(op, FuncOp))
    made = lower_func(func, schedule, machine)
    block = module.regions[0].blocks[0]
    for op in tile_ops(made):
        block.append(op)
    report = check(module)
    assert report.comparisons and all(c.ok for c in report.comparisons)


def test_group_phases_cover_the_batch_one_slice_after_another() -> None:
    _, machine, schedule = _scheduled(groups=True)
    placed = [(b, placement_of(b, machine.tiles, len(machine.dram_ports))[0], None)
              for b in schedule.blocks]
    grouped = [b for b in schedule.blocks if b.group is not None]
    size = grouped[0].samples
    phases = forward_phases(placed, 8)
    first = grouped[0].layer_names[0]
    spans = [item.span for phase in phases for item in phase.items if item.layer == first]
    assert sorted(spans) == spans and spans[0][0] == 0 and spans[-1][1] == 8
    runs = [phase.label for phase in phases if phase.label.endswith(f"@{size}")]
    assert runs  # the second slice's phases are marked with their offset
    last = grouped[-1].layer_names[-1]
    order = [item.layer for phase in phases for item in phase.items]
    # the group's last layer finishes the first slice before its first layer starts the next
    assert order.index(last) < max(i for i, name in enumerate(order) if name == first)


def test_flat_schedule_has_no_groups() -> None:
    _, _, schedule = _scheduled(groups=False)
    assert all(b.group is None for b in schedule.blocks)


def test_group_with_a_whole_batch_op_is_refused() -> None:
    _, _, schedule = _scheduled(groups=True)
    grouped = next(b for b in schedule.blocks if b.group is not None)
    runs = {grouped.layer_names[0]: [(0, 1, True)]}
    with pytest.raises(CodegenError, match="whole-batch op"):
        forward_phases([(grouped, [[]], runs)], 8)


def test_timeline_draws_a_grouped_block_once_stretched_over_its_runs() -> None:
    module, _, schedule = _scheduled(groups=True)
    runs = {b.label: 8 // b.samples for b in schedule.blocks if b.group is not None}
    spans = [b for b in timeline(module).blocks if b.label in runs]
    assert spans and all(abs(b.stretch - runs[b.label]) < 1e-6 for b in spans)


RESIDUAL = """
block conv_bn(x, c) {
  return batchnorm(conv2d(x, out=c, kernel=3, padding=same, bias=false));
}
network residual {
  machine gpu11;
  input image: f32[batch, 64, 112, 112];
  x = max_pool2d(image, kernel=3, stride=2, padding=1);
  a = relu(conv_bn(x, 64));
  y = relu(add(conv_bn(a, 64), x));
  output y;
}
"""


def _stem_grouped_before_its_shortcut(func: FuncOp, machine: Machine) -> ScheduleOp:
    """RESIDUAL's schedule with the max pool and the first convolution in a group of one
    sample, left through DRAM, and the rest whole-batch: the pool's output, kept on chip
    for the convolution, is also stored (``dram_out``) for the shortcut add after the
    group, which reads it from DRAM (``dram_in``). Built by hand: whether the search picks
    it depends on the cost model's prices, and the test is about codegen."""
    workload = workload_of(func, 1)
    solve = crane_solver(None)
    far = frozenset({"x"})
    parts = [(0, 1, 1, dict(out_to_sram=True, to_dram=far)),
             (1, 2, 1, dict(in_from_sram=True)),
             (2, 3, 8, {}), (3, 4, 8, dict(from_dram=far))]
    choices = []
    for start, stop, samples, how in parts:
        block = Block.of(workload, start, stop, **how)  # type: ignore[arg-type]
        plan, cost = solve(block, samples, machine, Objective(), 0.0)[0]
        choices.append(BlockChoice(start, stop, plan, cost.repeated(8 // samples), 8 // samples,
                                   opens=start == 0))
    total = BlockCost.zero()
    for choice in choices:
        total = total.then(choice.cost)
    found = Schedule(workload.name, 8, "crane", tuple(choices), total,
                     lower_bounds(workload, 8, machine), 0.0)
    return schedule_op(_name(func), found, "edp", machine)


def _name(func: FuncOp) -> str:
    name = func.attributes["sym_name"]
    assert isinstance(name, StringAttr)
    return name.value


def test_output_kept_in_a_group_is_stored_for_a_reader_after_it() -> None:
    # ResNet-18's stem on gpu11 at batch 8: the max pool and the first convolution form a
    # group of one sample, whose memory table keeps the pool's output in SRAM for the
    # convolution; the shortcut add reads it after the group. Kept on chip for the add,
    # the eight samples' outputs (802,816 bytes each) overflowed the 6 MiB SRAM; the
    # group is left through DRAM, so the add loads them.
    module = translate("crn", RESIDUAL, "residual.crn", default_context())
    assert isinstance(module, ModuleOp)
    machine = Machine.gpu11()
    func = next(op for op in body(module) if isinstance(op, FuncOp))
    schedule = _stem_grouped_before_its_shortcut(func, machine)
    Segment.replace_schedule(func, _name(func), schedule)
    group = {name: b.group for b in schedule.blocks for name in b.layer_names}
    assert group["x"] is not None and group["add"] != group["x"], group
    simple_placement(module)
    made = lower_func(func, schedule, machine)
    assert any(t.name == "x" for t in made.tensors)
    block = module.regions[0].blocks[0]
    for op in tile_ops(made):
        block.append(op)
    report = check(module)
    assert report.comparisons and all(c.ok for c in report.comparisons)
