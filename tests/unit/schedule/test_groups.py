"""Groups: runs of blocks with their own sub-batch size, repeated over the batch.

A bottleneck at batch 16 on ``edge`` has activations too large to stay in SRAM for the
whole batch between blocks; in groups of 4 samples they fit, so the grouped search keeps
them on chip and wins, at the price of reading the weights once per group.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache
from pathlib import Path

from crane.cost.workload import Dims, LayerWork, Workload
from crane.dialects import default_context
from crane.hardware.machine import Machine
from crane.ir.core import Operation
from crane.schedule.builders import chain, residual_block
from crane.schedule.evaluate import evaluate
from crane.schedule.from_graph import workload_of
from crane.schedule.objective import Objective
from crane.schedule.policies import crane_solver, schedule
from crane.schedule.search import (
    BlockChoice,
    Schedule,
    _block,
    _Cut,
    _moves,
    group_sizes,
    reevaluate,
)
from crane.tools.inputs import translate

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


def test_a_layer_needing_the_whole_batch_never_runs_in_a_group() -> None:
    # tiny_resnet has a train section, so its batchnorms normalise by the batch's own
    # statistics even for inference: codegen cannot run them on a slice of the batch.
    workload = workload_of(_example_func("tiny_resnet"), 1)
    whole = {layer.name for layer in workload.layers if layer.whole_batch}
    assert len(whole) == 6  # each of the six convolutions has its batchnorm merged after it
    one_tile = EDGE.with_changes(rows=1, cols=1, dram_ports=Machine.edge_ports(1, 1))
    per_sample = replace(workload, layers=tuple(replace(layer, whole_batch=False)
                                                for layer in workload.layers))
    for policy in ("crane", "set"):
        # Were the batchnorms per sample, the search would group some of their layers.
        assert _grouped_layers(per_sample, one_tile, policy) & whole
        assert not _grouped_layers(workload, one_tile, policy) & whole


def _example_func(name: str) -> Operation:
    path = Path(__file__).resolve().parents[3] / "examples" / f"{name}.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    return next(op for op in module.walk() if op.name == "graph.func")


def _grouped_layers(workload: Workload, machine: Machine, policy: str) -> set[str]:
    return {layer.name for c in schedule(workload, 8, machine, policy).blocks
            if c.repeat > 1 for layer in c.plan.block.layers}


def _group_of(blocks: tuple[BlockChoice, ...]) -> list[int | None]:
    """The group number of each block (None: a whole-batch block)."""
    found: list[int | None] = []
    count = 0
    for c in blocks:
        count += c.opens
        found.append(count if c.repeat > 1 else None)
    return found


@cache
def _resnet18_at_8() -> Schedule:
    return schedule(workload_of(_example_func("resnet18"), 1), 8, EDGE, "crane")


def test_results_of_a_group_left_behind_are_read_from_dram() -> None:
    # ResNet-18 at batch 8 on edge groups its first stages; a residual add after the group
    # reads the group's output: codegen stored it when the group was left (it keeps a
    # group's results for the group's own blocks only), so the model reads it from DRAM.
    found = _resnet18_at_8()
    groups = _group_of(found.blocks)
    made_in = {layer.name: g for c, g in zip(found.blocks, groups, strict=True)
               for layer in c.plan.block.layers}
    priced = 0
    for c, g in zip(found.blocks, groups, strict=True):
        block = c.plan.block
        expected = tuple(sum(nbytes for pred, nbytes in layer.inputs
                             if made_in.get(pred) not in (None, g) and pred not in
                             {lay.name for lay in block.layers})
                         for layer in block.layers) if block.in_from_sram else ()
        assert (block.dram_in or (0,) * block.n) == (expected or (0,) * block.n)
        priced += any(block.dram_in)
    assert priced  # the schedule has such a read
    # The model prices them as DRAM reads: the same block without them reads less DRAM.
    c = next(c for c in found.blocks if c.plan.block.dram_in)
    on_chip = replace(c.plan, block=replace(c.plan.block, dram_in=()))
    extra = evaluate(c.plan, EDGE).traffic.dram_bytes - evaluate(on_chip, EDGE).traffic.dram_bytes
    assert extra == sum(c.plan.block.dram_in) * c.samples


def test_results_read_after_their_group_is_left_are_stored_by_their_block() -> None:
    # Codegen stores a group's result that a block after the group reads, in the phase that
    # makes it. The model charges that write to the block making it (``dram_out``), and the
    # search never leaves a group while a result it holds only on chip is still to be read.
    found = _resnet18_at_8()
    groups = _group_of(found.blocks)
    for c, g in zip(found.blocks, groups, strict=True):
        block = c.plan.block
        if g is None or not block.out_to_sram:
            assert not block.dram_out
            continue
        later = {pred for d, h in zip(found.blocks, groups, strict=True) if h != g
                 and d.start >= c.stop for layer in d.plan.block.layers for pred, _ in layer.inputs}
        for m, layer in enumerate(block.layers):
            stored = bool(block.dram_out) and block.dram_out[m] > 0
            assert not (layer.name in later and not stored), layer.name
    with_stores = [c for c in found.blocks if c.plan.block.dram_out]
    for c in with_stores:  # the write is priced: the block without it moves less DRAM
        unstored = replace(c.plan, block=replace(c.plan.block, dram_out=()))
        extra = evaluate(c.plan, EDGE).traffic.dram_bytes - evaluate(unstored, EDGE).traffic.dram_bytes
        assert extra == sum(c.plan.block.dram_out) * c.samples


def test_a_group_block_may_store_what_is_read_beyond_the_next_cut() -> None:
    # ``stem`` is read by ``res.a`` (next) and by ``res.proj`` (four layers on): run in a
    # group, its block comes in two kinds, keeping it on chip only or storing it as well;
    # only the second lets the group be left before ``res.proj``.
    moves = [m for m in _moves(NET, 0, 1, 16, EDGE, (4,)) if m.target == 4]
    assert {m.stores for m in moves} == {False, True}
    stores = next(m for m in moves if m.stores)
    block, _ = _block(NET, 0, 1, stores)
    assert block.dram_out == (NET.layer("stem").output_bytes,)
    on_chip = _Cut(4).after(NET, 0, 1, next(m for m in moves if not m.stores))
    stored = _Cut(4).after(NET, 0, 1, stores)
    assert on_chip.held_until == NET.position("res.proj") and stored.held_until == -1
    assert not on_chip.may_leave(2) and stored.may_leave(2)
    assert on_chip.may_leave(5)  # after res.proj, nothing of stem is left to read
    # The write is priced as a DRAM write of the block's output, on top of the SRAM copy.
    plans = crane_solver(None)(block, 4, EDGE, Objective(), 0.0)
    plan, cost = plans[0]
    kept = evaluate(replace(plan, block=replace(block, dram_out=())), EDGE)
    assert cost.traffic.dram_bytes - kept.traffic.dram_bytes == sum(block.dram_out) * 4
    assert cost.energy_pj > kept.energy_pj


def _branches_after_a_big_map() -> Workload:
    """``a`` is big; ``p`` and ``q`` read it and are small; ``y`` reads both. At batch 8 on
    ``edge`` the cuts after ``a`` and ``p`` go through DRAM (``a`` crosses them) and the
    cut after ``q`` stays in SRAM (only ``p`` and ``q`` cross it)."""
    big, small = 64 * 112 * 112, 8 * 28 * 28
    return Workload.of("branches", [
        LayerWork.make("a", "conv", macs=big * 16 * 9, vector_ops=0, weight_bytes=64 * 16 * 9,
                       output_bytes=big, dims=Dims.conv(64, 16, 112, 112, 3, 3),
                       external_input_bytes=16 * 112 * 112),
        *(LayerWork.make(name, "conv", macs=small * 64, vector_ops=0, weight_bytes=8 * 64,
                         output_bytes=small, dims=Dims.conv(8, 64, 28, 28),
                         inputs=(("a", big),)) for name in ("p", "q")),
        LayerWork.make("y", "conv", macs=small * 2 * 16 * 9, vector_ops=0,
                       weight_bytes=16 * 16 * 9, output_bytes=2 * small,
                       dims=Dims.conv(16, 16, 28, 28, 3, 3),
                       inputs=(("p", small), ("q", small))),
    ])


def test_a_result_a_whole_batch_block_stored_is_read_from_dram_later() -> None:
    # Codegen keeps on chip only what the producing block's memory table keeps: ``p``'s
    # block stores it (the cut after it goes through DRAM), so ``y`` reads it from DRAM
    # although the cut before ``y`` stays in SRAM; ``q`` it reads on chip.
    net = _branches_after_a_big_map()
    found = schedule(net, 8, EDGE, "set", max_block=1, grouped=False)
    assert [c.plan.block.in_from_sram for c in found.blocks] == [False, False, False, True]
    last = found.blocks[-1].plan
    assert last.block.dram_in == (net.layer("p").output_bytes,)
    on_chip = replace(last, block=replace(last.block, dram_in=()))
    extra = evaluate(last, EDGE).traffic.dram_bytes - evaluate(on_chip, EDGE).traffic.dram_bytes
    assert extra == net.layer("p").output_bytes * 8
