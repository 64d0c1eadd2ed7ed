"""Code generation divides a layer as the schedule recorded it (the block's ``partitions``,
``crane.dialects.segment_facts``) wherever it runs the schedule's sub-batch on the
schedule's tiles, instead of working the split out again."""

from __future__ import annotations

from crane.codegen.lower import lower_func
from crane.codegen.plan import placement_of
from crane.codegen.program import Compute, TileModule
from crane.codegen.to_ir import tile_ops
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.exec.tile_sim.check import check
from crane.ir.attributes import DenseIntsAttr

from .support import prepared

ADD = "r1.add"
"""A block of the tiny ResNet on a 4x4 mesh: the first residual sum alone on all 16 tiles,
8 sub-batches of one sample of 16 channels of 32x32 (``r2.add`` sums 32 channels)."""


def _block(schedule: ScheduleOp, layer: str) -> BlockOp:
    return next(b for b in schedule.blocks if b.layer_names == (layer,))


def _sum_parts(made: TileModule) -> set[tuple[int, ...]]:
    """The shapes of the parts of the first residual sum."""
    return {c.outs[0].shape for p in made.programs for c in p.body
            if isinstance(c, Compute) and c.op == "add" and c.outs[0].shape[1] <= 16}


def test_placement_carries_the_recorded_partitions() -> None:
    _, _, schedule, machine = prepared("tiny_resnet", 4, 4, False)
    for block in schedule.blocks:
        facts = block.plan_facts()
        assert facts is not None
        homes, _ = placement_of(block, machine.tiles, len(machine.dram_ports))
        found = [(h.partition, h.subbatch) for row in homes for h in row]
        expected = [(part if h.tiles else None, block.subbatch)
                    for row, parts in zip(homes, facts.partitions, strict=True)
                    for h, part in zip(row, parts, strict=True)]
        assert found == expected


def test_codegen_cuts_a_layer_by_its_recorded_partition() -> None:
    module, func, schedule, machine = prepared("tiny_resnet", 4, 4, False)
    block = _block(schedule, ADD)
    facts = block.plan_facts()
    assert facts is not None and facts.partitions == (((1, 1, 1, 16),),)
    assert _sum_parts(lower_func(func, schedule, machine)) == {(1, 16, 32, 2)}

    block.attributes["partitions"] = DenseIntsAttr((1, 4, 2, 2))  # another split over 16 tiles
    block.verify_op()
    made = lower_func(func, schedule, machine)
    assert _sum_parts(made) == {(1, 4, 16, 16)}
    for op in tile_ops(made):
        module.regions[0].blocks[0].append(op)
    report = check(module)  # the other split computes the same convolution
    assert report.comparisons and report.ok, report.lines()
