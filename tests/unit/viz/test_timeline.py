"""States over time: per-state latencies from the cost model, tiles from the placement."""

from __future__ import annotations

import pytest

from crane.cost.placement import split_regions
from crane.dialects.segment import ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import ArrayAttr, StringAttr
from crane.schedule.evaluate import evaluate, state_cost, state_latencies
from crane.schedule.record import plan_of
from crane.viz.source import PictureError, schedules, snake_tile, workloads
from crane.viz.timeline import timeline

from .support import compiled


def test_state_latencies_add_up_to_evaluate() -> None:
    module = compiled("segment")
    target = Machine.edge()
    loads = workloads(module, target)
    assert schedules(module) and all(s.blocks for s in schedules(module))
    for schedule in schedules(module):
        for op in schedule.blocks:
            plan = plan_of(op, loads[schedule.func_name])
            assert plan is not None
            latencies = state_latencies(plan, target)
            assert sum(latencies) == pytest.approx(evaluate(plan, target).latency_cycles,
                                                   rel=1e-12)
            # The rebuilt plan reproduces what the segment pass recorded.
            assert sum(latencies) == pytest.approx(op.latency_cycles, rel=1e-9)
            for i, count in enumerate(plan.workloads):
                assert (state_cost(plan, i, target).latency_cycles > 0) == (count > 0)


def test_timeline_of_an_inference_schedule() -> None:
    module = compiled("segment,map")
    found = timeline(module)
    (schedule,) = schedules(module)
    assert len(found.blocks) == len(schedule.blocks)
    assert found.mapped and not found.steps
    assert found.total_cycles == pytest.approx(float(schedule.attributes["latency_cycles"].value))
    for span, op in zip(found.blocks, schedule.blocks, strict=True):
        assert span.stretch == pytest.approx(1.0)
        assert span.layers == op.layer_names
        n = len(op.layer_names)
        placement = op.attributes["placement"]
        assert isinstance(placement, ArrayAttr)
        workloads_row = list(op.attributes["workloads"])
        assert [s.state for s in span.states] == [i for i, w in enumerate(workloads_row) if w]
        for state in span.states:
            for run in state.columns:
                assert run.tiles == tuple(list(placement)[state.state * n + run.column])
                assert run.layer == op.layer_names[run.column]
        starts = [s.start for s in span.states]
        assert starts == sorted(starts) and span.states[0].start == pytest.approx(span.start)
        assert span.states[-1].stop == pytest.approx(span.stop)


def test_unmapped_blocks_use_the_cost_models_snake_regions() -> None:
    module = compiled("segment")
    found = timeline(module)
    assert not found.mapped
    (schedule,) = schedules(module)
    for span, op in zip(found.blocks, schedule.blocks, strict=True):
        split = op.tile_split()
        for state in span.states:
            counts = tuple(split[state.state][j] for j in range(len(span.layers)))
            active = [j for j in range(len(counts)) if counts[j]]
            regions = split_regions(0, tuple(counts[j] for j in active))
            for run in state.columns:
                region = regions[active.index(run.column)]
                assert run.tiles == tuple(snake_tile(k, 4) for k in range(region.start, region.stop))


def test_training_step_has_phases_and_the_optimizer_update() -> None:
    module = compiled("segment", training=True)
    found = timeline(module)
    (schedule,) = schedules(module)
    assert {b.phase for b in found.blocks} == {"forward", "bw1", "bw2"}
    assert [s.label for s in found.steps] == ["optimizer update"]
    assert found.total_cycles == pytest.approx(float(schedule.attributes["latency_cycles"].value))
    for span in found.blocks:
        # Only forward blocks that save activations may take longer than their states.
        assert span.stretch == pytest.approx(1.0) or (span.phase == "forward" and span.stretch > 1)


def test_snake_order() -> None:
    assert [snake_tile(k, 4) for k in range(8)] == [0, 1, 2, 3, 7, 6, 5, 4]


def test_unscheduled_module_is_an_error() -> None:
    with pytest.raises(PictureError, match="add the 'segment' pass"):
        timeline(compiled(""))


def test_block_of_unknown_layers_is_an_error() -> None:
    module = compiled("segment")
    (schedule,) = [op for op in module.walk() if isinstance(op, ScheduleOp)]
    block = schedule.blocks[0]
    names = block.attributes["layers"]
    assert isinstance(names, ArrayAttr)
    block.attributes["layers"] = ArrayAttr(tuple(StringAttr(f"nope{k}") for k in range(len(names))))
    with pytest.raises(PictureError, match="cannot cost block 'nope0"):
        timeline(module)
