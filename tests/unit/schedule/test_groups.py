"""Groups: runs of blocks with their own sub-batch size, repeated over the batch.

A bottleneck at batch 16 on ``edge`` has activations too large to stay in SRAM for the
whole batch between blocks; in groups of 4 samples they fit, so the grouped search keeps
them on chip and wins, at the price of reading the weights once per group.
"""

from __future__ import annotations

import math

from crane.hardware.machine import Machine
from crane.schedule.builders import chain, residual_block
from crane.schedule.evaluate import evaluate
from crane.schedule.policies import schedule
from crane.schedule.search import group_sizes, reevaluate

EDGE = Machine.edge()
NET = residual_block(64, 56)


def test_group_sizes_are_the_proper_divisors_of_the_batch() -> None:
    assert group_sizes(1) == ()
    assert group_sizes(8) == (1, 2, 4)
    assert group_sizes(12) == (1, 2, 3, 4, 6)


def test_groups_keep_large_activations_on_chip_and_win() -> None:
    flat = schedule(NET, 16, EDGE, "set", grouped=False)
    grouped = schedule(NET, 16, EDGE, "set")
    assert grouped.edp < flat.edp / 1.2
    assert grouped.cost.traffic.dram_bytes < flat.cost.traffic.dram_bytes
    grouped_blocks = [c for c in grouped.blocks if c.repeat > 1]
    assert grouped_blocks and grouped_blocks[0].opens
    assert all(c.samples * c.repeat == 16 for c in grouped.blocks)
    inside = [c.plan.block.in_from_sram for c in grouped_blocks[1:]]
    assert inside and all(inside)  # the cuts inside the group stay in SRAM


def test_a_group_is_entered_and_left_through_dram() -> None:
    grouped = schedule(NET, 16, EDGE, "set")
    blocks = grouped.blocks
    assert any(c.opens for c in blocks)  # the schedule has a group to enter and leave
    for before, after in zip((None, *blocks), (*blocks, None), strict=True):
        if after is not None and after.opens:
            assert not after.plan.block.in_from_sram
            assert before is None or not before.plan.block.out_to_sram
        if before is not None and before.repeat > 1 and (after is None or after.repeat != before.repeat):
            assert not before.plan.block.out_to_sram


def test_group_cost_is_its_runs_added_up() -> None:
    grouped = schedule(NET, 16, EDGE, "crane")
    choice = next(c for c in grouped.blocks if c.repeat > 1)
    once = evaluate(choice.plan, EDGE)
    assert math.isclose(choice.cost.latency_cycles, once.latency_cycles * choice.repeat)
    assert math.isclose(choice.cost.energy_pj, once.energy_pj * choice.repeat)
    again = reevaluate(grouped, EDGE)
    assert math.isclose(again.latency_cycles, grouped.cost.latency_cycles)
    assert math.isclose(again.energy_pj, grouped.cost.energy_pj)


def test_grouping_never_loses_and_batch_one_has_no_groups() -> None:
    for net, batch in ((chain(4), 4), (NET, 8), (NET, 16)):
        for policy in ("crane", "set"):
            assert (schedule(net, batch, EDGE, policy).edp
                    <= schedule(net, batch, EDGE, policy, grouped=False).edp * (1 + 1e-9))
    assert all(c.repeat == 1 for c in schedule(NET, 1, EDGE, "crane").blocks)


def test_baselines_without_groups_stay_flat() -> None:
    for policy in ("tangram", "sequential"):
        assert all(c.repeat == 1 for c in schedule(NET, 16, EDGE, policy).blocks)
