"""The block MILP against exhaustive enumeration and the closed-form vertex oracle."""

from __future__ import annotations

import math

import pytest

from crane.cost.workload import Workload
from crane.dialects.segment_checks import check_tables
from crane.hardware.machine import Machine
from crane.schedule import canonical, exhaustive
from crane.schedule.block import Block
from crane.schedule.builders import chain, diamond, transformer_block
from crane.schedule.evaluate import Plan, activation_capacity, evaluate, tables_of
from crane.schedule.formulate import formulate
from crane.schedule.objective import Objective
from crane.schedule.options import state_options
from crane.schedule.pareto import sweep

EDGE = Machine.edge()
OBJECTIVES = [Objective.parse(t) for t in ("edp", "latency", "energy", "L^2 E^1")]
CASES = [(chain(2), 2, 3), (chain(3), 3, 3), (diamond(), 3, 2), (transformer_block(), 2, 3)]


@pytest.mark.parametrize("objective", OBJECTIVES, ids=str)
@pytest.mark.parametrize(("net", "n", "q"), CASES, ids=lambda c: getattr(c, "name", str(c)))
def test_milp_equals_enumeration(net: Workload, n: int, q: int, objective: Objective) -> None:
    block = Block.of(net, 0, n)
    form = formulate(block, 1, q, EDGE)
    assert form is not None
    result = sweep(form, objective)
    assert result.exact and result.best is not None
    cost = evaluate(result.best.plan, EDGE)
    # The MILP's own latency and energy are the evaluator's (the linearisation is exact).
    assert math.isclose(cost.latency_cycles, result.best.latency, rel_tol=1e-6)
    assert math.isclose(cost.energy_pj, result.best.energy, rel_tol=1e-6)
    assert check_tables(tables_of(result.best.plan)) == []
    oracle = exhaustive.best_plan(block, 1, q, EDGE, objective)
    assert oracle is not None
    assert math.isclose(objective(cost.latency_cycles, cost.energy_pj), oracle[0], rel_tol=1e-6)


@pytest.mark.parametrize(("net", "n", "q"), CASES + [(chain(4), 4, 6)],
                         ids=lambda c: getattr(c, "name", str(c)))
def test_closed_form_equals_compute_stage_milp(net: Workload, n: int, q: int) -> None:
    block = Block.of(net, 0, n)
    form = formulate(block, 1, q, EDGE, traffic=False)
    assert form is not None
    result = sweep(form, Objective())
    fast = canonical.compute_optimum(block, 1, q, EDGE, Objective())
    assert result.best is not None and fast is not None
    assert math.isclose(result.best.latency * result.best.energy, fast[0], rel_tol=1e-6)


def test_vertices_of_a_chain() -> None:
    block = Block.of(chain(3), 0, 3)
    assert canonical.required_fill(block) == (1, 1, 0)
    assert canonical.vertices(block, 4) == [(3, 1, 0, 3, 1), (1, 3, 0, 1, 3), (1, 1, 2, 1, 1)]
    assert canonical.vertices(block, 1) == []


def test_sram_capacity_forces_spill() -> None:
    block = Block.of(chain(2), 0, 2)
    # 80 KiB tiles: a layer's working set fits on half the mesh (so both columns can run
    # together), but a tile keeps at most 20 KiB of outputs for later states, less than
    # 10 sub-batches of layer 1 spread over all 16 tiles (31 KiB each).
    tiny = EDGE.with_changes(sram_bytes=80 * 1024)
    form = formulate(block, 1, 10, tiny)
    assert form is not None
    result = sweep(form, Objective.parse("energy"))
    assert result.best is not None
    cost = evaluate(result.best.plan, tiny)
    assert cost.feasible and cost.peak_sram_bytes <= activation_capacity(tiny)
    # Running layer 1 over every sub-batch first and keeping all its outputs on chip (the
    # energy optimum without the capacity) is ruled out.
    everything = Plan(block, 1, 10, ((10,), (0,), (10,)), (True, False))
    assert not evaluate(everything, tiny).feasible
    assert result.best.plan != everything


def test_a_layer_run_in_weight_slices_reads_its_input_once_per_slice() -> None:
    # One 64 KiB tile: a 64x64x3x3 kernel (36 KiB) runs in three output-channel slices of
    # at most a quarter of SRAM (``crane.cost.layer.input_passes``, codegen's weight slices).
    tile = EDGE.with_changes(rows=1, cols=1, sram_bytes=64 * 1024,
                             dram_ports=Machine.edge_ports(1, 1))
    net = chain(2)
    block = Block.of(net, 1, 2)
    (option,) = state_options(block, 0, 1, tile)
    assert option.reads == (3.0,)  # one tile: no halo
    plan = Plan(block, 1, 4, ((4,),), (False,))
    cost = evaluate(plan, tile)
    layer = net.layers[1]
    weights = option.weight_load.dram_bytes + 4 * option.traffic.dram_bytes
    assert cost.traffic.dram_bytes == 4 * (3 * block.external_in[0] + layer.output_bytes) + weights
    form = formulate(block, 1, 4, tile)
    assert form is not None
    result = sweep(form, Objective())
    assert result.best is not None
    assert math.isclose(evaluate(result.best.plan, tile).energy_pj, result.best.energy,
                        rel_tol=1e-6)
