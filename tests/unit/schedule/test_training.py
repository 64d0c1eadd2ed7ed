"""Training: recomputation policies, DRAM capacity, and the backward block."""

from __future__ import annotations

from dataclasses import replace

from crane.hardware.machine import Machine
from crane.schedule.block import Block, gradient_block
from crane.schedule.builders import chain, transformer_block
from crane.schedule.objective import Objective
from crane.schedule.policies import PatternSolver, schedule
from crane.schedule.search import BlockCache, BlockChoice
from crane.schedule.training import TrainingSchedule, optimizer_step, plan_block, train

CLOUD = Machine.edge().with_changes(dram_capacity_bytes=10**12)
OBJ = Objective()


def test_gradient_block_reverses_the_flow() -> None:
    fw = Block.of(chain(3), 0, 3)
    grad = gradient_block(fw)
    assert [layer.name for layer in grad.layers] == ["conv3", "conv2", "conv1"]
    assert grad.deps == ((0, 1), (1, 2))
    assert grad.backward
    # The first backward column reads the output gradient and its saved input.
    assert grad.external_in[0] == fw.external_out[2] + fw.layers[2].input_bytes


def _runs(machine: Machine) -> dict[str, TrainingSchedule]:
    net = transformer_block(128, 64, 2)
    forward = schedule(net, 8, machine, "set")
    solver = BlockCache(PatternSolver("balanced", (True, False)))
    return {r: train(forward, net, machine, solver, OBJ, r) for r in ("keep", "full", "crane")}


def test_recompute_trades_memory_for_work() -> None:
    runs = _runs(CLOUD)
    keep, full, crane = runs["keep"], runs["full"], runs["crane"]
    assert keep.peak_dram_bytes > full.peak_dram_bytes
    assert all(b.retained == 0 for b in full.blocks)
    assert all(b.retained == b.choice.plan.q for b in keep.blocks)
    best = min(OBJ(r.cost.latency_cycles, r.cost.energy_pj) for r in (keep, full))
    assert OBJ(crane.cost.latency_cycles, crane.cost.energy_pj) <= best * (1 + 1e-9)


def test_crane_fits_where_keep_everything_does_not() -> None:
    runs = _runs(CLOUD)
    keep, full = runs["keep"], runs["full"]
    cap = int((keep.peak_dram_bytes + full.peak_dram_bytes) / 2)
    tight = CLOUD.with_changes(dram_capacity_bytes=cap)
    capped = _runs(tight)
    assert not capped["keep"].fits
    assert capped["crane"].fits
    assert capped["crane"].peak_dram_bytes <= cap


def test_a_phase_with_too_few_samples_for_its_block_runs_column_by_column() -> None:
    solver = BlockCache(PatternSolver("balanced", (True, False)))
    found = solver(Block.of(chain(4), 0, 4), 4, CLOUD, OBJ, 0.0)
    plan, cost = next(pc for pc in found if pc[0].subbatch == 1)
    block = BlockChoice(0, 4, plan, cost)
    # Keeping one sub-batch of four leaves BW1 one sample: too few for a 4-column pipeline.
    trained = plan_block(block, 4, 1, CLOUD, solver, OBJ)
    bw1 = [pb for pb in trained.backward if pb.phase == "bw1"]
    assert [pb.plan.block.n for pb in bw1] == [1, 1, 1, 1]
    assert [pb.plan.block.layers[0].name for pb in bw1] == ["conv4", "conv3", "conv2", "conv1"]
    assert all(pb.plan.subbatch * pb.plan.q == 1 for pb in bw1)
    total = sum(pb.cost.latency_cycles for pb in bw1)
    assert total == trained.bw1.latency_cycles
    assert [pb.phase for pb in trained.backward if pb.recompute] and \
        all(pb.phase == "bw2" for pb in trained.backward if pb.recompute)


def test_a_dropped_block_fed_from_sram_writes_its_checkpoint() -> None:
    solver = BlockCache(PatternSolver("balanced", (True, False)))
    costs = {}
    for in_sram in (False, True):
        block = Block.of(chain(2), 0, 2, in_from_sram=in_sram)
        plan, cost = solver(block, 4, CLOUD, OBJ, 0.0)[0]
        choice = BlockChoice(0, 2, plan, cost)
        dropped, kept = plan_block(choice, 4, 0, CLOUD, solver, OBJ), plan_block(choice, 4, plan.q, CLOUD, solver, OBJ)
        costs[in_sram] = (choice.cost, dropped.forward, kept.forward)
    from_dram, from_sram = costs[False], costs[True]
    checkpoint = sum(Block.of(chain(2), 0, 2).external_in) * 4
    # Read from DRAM, the input already is the checkpoint; read from SRAM, it is written.
    assert from_dram[1].traffic.dram_bytes == from_dram[0].traffic.dram_bytes
    assert from_sram[1].traffic.dram_bytes == from_sram[0].traffic.dram_bytes + checkpoint
    # Keeping every sub-batch needs no checkpoint.
    assert from_sram[2].traffic.dram_bytes == from_sram[0].traffic.dram_bytes + sum(
        layer.output_bytes for layer in Block.of(chain(2), 0, 2).layers) * 4


def test_the_optimizer_step_runs_its_updates_on_every_tile() -> None:
    net = chain(3)
    machine = Machine.edge()
    moved = optimizer_step(net, machine)
    ops = 4 * machine.vector_lanes * machine.tiles * int(moved.latency_cycles + 1)
    updating = optimizer_step(replace(net, optimizer_vector_ops=ops,
                                      optimizer_state_bytes=2 * net.total_weight_bytes), machine)
    assert moved.compute_cycles == 0
    assert updating.compute_cycles == ops / (machine.vector_lanes * machine.tiles)
    assert updating.latency_cycles == updating.compute_cycles > moved.latency_cycles
    assert updating.energy_pj == moved.energy_pj + ops * machine.vector_op_pj


def test_a_layer_too_big_to_hold_is_not_refreshed_from_its_saved_output() -> None:
    """BW1 recomputes a merged layer's internals only when codegen can hold them (its
    results over the mesh within ``HELD_SHARE`` of a tile); a bigger layer's internals are
    stored in forward, so its backward does no forward work again (ResNet-18's stem on
    `gpu11`: the model charged 89k cycles of refresh the program never ran)."""
    from crane.cost.layer import HELD_SHARE, refreshes_on_chip

    layer = replace(chain(1).layers[0], refreshes=True)
    machine = Machine.gpu11()
    fits = int(HELD_SHARE * machine.sram_bytes * machine.tiles // layer.output_bytes)
    assert refreshes_on_chip(layer, fits, machine) and not refreshes_on_chip(layer, fits + 1, machine)
    block = Block.of(chain(1), 0, 1)
    block = replace(block, layers=(layer,))
    refreshed = gradient_block(block, from_saved=True).layers[0]
    stored = gradient_block(block, from_saved=True,
                            refreshed=lambda work: refreshes_on_chip(work, fits + 1, machine)).layers[0]
    assert refreshed.backward_macs == layer.backward_macs + layer.macs
    assert stored.backward_macs == layer.backward_macs
    assert stored.backward_vector_ops == layer.backward_vector_ops
