"""The ``segment`` IR is lossless: each block records how its plan was costed (mix, SRAM
boundary, state latencies, snake regions, partitions), the recorded plan re-costs exactly,
and the pictures and ``map`` read it without searching again."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from crane.dialects import default_context
from crane.dialects.segment import ScheduleOp
from crane.hardware.machine import Machine
from crane.ir.attributes import ArrayAttr, DenseIntsAttr, FloatAttr
from crane.ir.core import VerifyError
from crane.ir.diagnostics import DiagnosticEngine
from crane.passes.context import PassContext
from crane.passes.map import Map
from crane.passes.segment import tile_split
from crane.schedule import evaluate, options, record
from crane.schedule.evaluate import state_latencies, tables_of
from crane.schedule.record import plan_of
from crane.viz.source import PictureError, schedules, workloads
from crane.viz.timeline import timeline

from .support import compiled


@pytest.mark.parametrize("training", [False, True])
def test_every_block_records_a_plan_that_re_costs_exactly(training: bool) -> None:
    module = compiled("segment", training=training)
    target = Machine.edge()
    loads = workloads(module, target)
    blocks = [(s.func_name, op) for s in schedules(module) for op in s.blocks]
    assert blocks
    for func, op in blocks:
        facts = op.plan_facts()
        assert facts is not None
        plan = plan_of(op, loads[func])
        assert plan is not None
        assert state_latencies(plan, target) == facts.state_cycles
        assert record.plan_facts(plan, target) == facts  # regions and partitions too
        rebuilt, stored = tables_of(plan), op.tables()
        assert (rebuilt.sct, rebuilt.met, rebuilt.deps) == (stored.sct, stored.met, stored.deps)
        assert tile_split(plan, target) == op.tile_split()
        assert (plan.block.in_from_sram, plan.block.out_to_sram) == facts.boundary
        counts = tuple(tuple(count for _, count in row) for row in facts.regions)
        assert counts == op.tile_split()  # the regions are the recorded split's tiles


def _no_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the scheduler's split enumeration and state costing fail if anything calls them."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("searched again")

    for module, name in ((options, "state_options"), (evaluate, "state_options"),
                         (record, "state_options"), (evaluate, "state_cost")):
        monkeypatch.setattr(module, name, refuse)


def test_pictures_and_map_read_the_recorded_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    unmapped, module = compiled("segment"), compiled("segment")
    _no_search(monkeypatch)
    drawn = timeline(unmapped)
    assert drawn.blocks and all(state.columns for b in drawn.blocks for state in b.states)

    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass("map")
    Map().run(module, ctx)
    assert not ctx.end_pass()
    assert ctx.statistics["map"]["blocks-placed"] == len(schedules(module)[0].blocks)
    assert timeline(module).mapped


def _first_block(module: Any) -> Any:
    (schedule,) = [op for op in module.walk() if isinstance(op, ScheduleOp)]
    return schedule.blocks[0]


@pytest.mark.parametrize(("change", "message"), [
    (lambda op: op.attributes.pop("mix"), "but not mix"),
    (lambda op: op.attributes.__setitem__("mix", ArrayAttr(())), "'mix' must hold 1 rows"),
    (lambda op: op.attributes.__setitem__("state_cycles", ArrayAttr((FloatAttr(-1.0),))),
     "'state_cycles' must not be negative"),
    (lambda op: op.attributes.__setitem__("state_cycles", ArrayAttr(())), "'state_cycles' must hold 1"),
    (lambda op: op.attributes.__setitem__("boundary", DenseIntsAttr((1, 2))), "'boundary' must be two flags"),
    (lambda op: op.attributes.__setitem__("regions", DenseIntsAttr((0, 1, 2))), "'regions' must hold"),
    (lambda op: op.attributes.__setitem__("partitions", DenseIntsAttr(())), "'partitions' must hold"),
    (lambda op: op.attributes.__setitem__("dram_in", DenseIntsAttr((1, 2, 3, 4, 5))),
     "'dram_in' must hold"),
])
def test_malformed_recorded_facts_fail_the_verifier(change: Callable[[Any], object], message: str) -> None:
    op = _first_block(compiled("segment"))
    op.verify_op()
    change(op)
    with pytest.raises(VerifyError, match=message):
        op.verify_op()


def test_a_block_without_recorded_facts_is_drawn_with_a_hint() -> None:
    module = compiled("segment")
    op = _first_block(module)
    for name in ("mix", "boundary", "state_cycles", "regions", "partitions"):
        del op.attributes[name]
    op.verify_op()  # a hand-written block may record nothing
    with pytest.raises(PictureError, match="records no plan .*'segment' pass"):
        timeline(module)
