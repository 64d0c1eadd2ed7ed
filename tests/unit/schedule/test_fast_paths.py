"""The scheduler's fast paths equal the paths they replaced (``reference_paths.py``) bit for
bit, on random blocks, states, machines and plans: the state options shared between blocks
through their views, state traffic summed in place, MILP constraints given to HiGHS in one
call, mean hops between regions from their rows and columns, layer costs shared between
regions of one size, and the search's DP that builds only the chosen schedule's cost."""

from __future__ import annotations

import random

import highspy
import pytest
import reference_paths as ref

from crane.cost.layer import layer_cost
from crane.cost.placement import Mesh, TileRun, link_share, mean_hops
from crane.cost.workload import Workload
from crane.dialects.segment_tables import num_states
from crane.hardware.machine import Machine
from crane.schedule import evaluate as fast
from crane.schedule import layout
from crane.schedule.block import Block, gradient_block
from crane.schedule.builders import chain, diamond, residual_block, transformer_block
from crane.schedule.canonical import vertices
from crane.schedule.evaluate import Plan
from crane.schedule.formulate import formulate
from crane.schedule.objective import Objective
from crane.schedule.options import state_options
from crane.schedule.policies import block_solver, crane_solver
from crane.schedule.search import BlockCache, _anonymous, search

NETS = (chain(4), diamond(), residual_block(), transformer_block())
MACHINES = (Machine.edge(), Machine.cloud(),
            Machine.edge().with_changes(name="m2x3", rows=2, cols=3,
                                        dram_ports=Machine.edge_ports(2, 3)))


def _block(rng: random.Random, net: Workload) -> Block:
    start = rng.randrange(len(net))
    stop = rng.randrange(start + 1, min(len(net), start + 4) + 1)
    block = Block.of(net, start, stop, in_from_sram=rng.random() < 0.5,
                     out_to_sram=rng.random() < 0.5)
    return gradient_block(block) if rng.random() < 0.25 else block


def _plan(rng: random.Random, block: Block, subbatch: int, machine: Machine) -> Plan | None:
    """A plan over one of the block's vertices, its sub-batches spread over random splits."""
    found = vertices(block, rng.randint(block.n, block.n + 3))
    if not found:
        return None
    workloads = rng.choice(found)
    mix = []
    for state, s in enumerate(workloads):
        width = len(state_options(block, state, subbatch, machine))
        if not width:
            return None
        row = [0] * width
        for _ in range(s):
            row[rng.randrange(width)] += 1
        mix.append(tuple(row))
    fused = tuple(rng.random() < 0.5 for _ in range(block.n))
    return Plan(block, subbatch, sum(workloads[: block.n]), tuple(mix), fused)


@pytest.mark.parametrize("seed", range(40))
def test_state_options_and_traffic_equal_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    block = _block(rng, rng.choice(NETS))
    machine = rng.choice(MACHINES)
    subbatch = rng.choice((1, 2, 4))
    for state in range(num_states(block.n)):
        assert state_options(block, state, subbatch, machine) == \
            ref.state_options(block, state, subbatch, machine)
    tiles = rng.randint(1, machine.tiles)
    assert state_options(block, 0, subbatch, machine, tiles=tiles) == \
        ref.state_options(block, 0, subbatch, machine, tiles=tiles)
    for state in range(num_states(block.n)):
        reader = TileRun(0, rng.randint(1, machine.tiles))
        for column in range(block.n):
            for backward in (False, True):
                assert layout.holding_tiles(block, subbatch, machine, state, column, backward) \
                    == ref.holding_tiles(block, subbatch, machine, state, column, backward)
                assert layout.held_path(block, subbatch, machine, state, column, reader,
                                      backward) == \
                    ref.held_path(block, subbatch, machine, state, column, reader, backward)
    plan = _plan(rng, block, subbatch, machine)
    if plan is None:
        return
    for state in range(num_states(block.n)):
        for option in state_options(block, state, subbatch, machine):
            assert fast._state_traffic(plan, state, option, machine) == \
                ref._state_traffic(plan, state, option, machine)
        assert fast.state_cost(plan, state, machine) == ref.state_cost(plan, state, machine)
        assert fast.state_cost(plan, state, machine, True) == \
            ref.state_cost(plan, state, machine, True)
        assert fast.storage(plan, state) == ref.storage(plan, state)
        for backward in (False, True):
            assert fast.held_per_tile(plan, state, machine, backward) == \
                ref.held_per_tile(plan, state, machine, backward)
    reserved = rng.choice((0.0, 1e5, 1e7))
    for backward in (False, True):
        assert fast.evaluate(plan, machine, reserved, backward) == \
            ref.evaluate(plan, machine, reserved, backward)


def _lp(h: highspy.Highs) -> tuple[list[float], ...]:
    lp = h.getLp()
    a = lp.a_matrix_
    return (list(lp.col_cost_), list(lp.col_lower_), list(lp.col_upper_), list(lp.row_lower_),
            list(lp.row_upper_), [a.format_], list(a.start_), list(a.index_), list(a.value_),
            list(lp.integrality_))


@pytest.mark.parametrize("seed", range(12))
def test_milp_constraints_in_one_call_build_the_same_model(seed: int) -> None:
    rng = random.Random(seed)
    block = Block.of(rng.choice(NETS), 0, rng.randint(1, 3))
    machine = rng.choice(MACHINES)
    form = formulate(block, 1, rng.randint(block.n, block.n + 3), machine,
                     sram_reserved=rng.choice((0.0, 1e5)))
    assert form is not None
    form.model.minimize(form.latency if rng.random() < 0.5 else form.energy)
    assert _lp(form.model._highs(0.5)) == _lp(ref.highs_row_by_row(form.model, 0.5))


def _two_runs(rng: random.Random, side: int, most: int) -> tuple[Mesh, TileRun, TileRun]:
    """A random mesh of at most ``side`` x ``side`` tiles and two runs of at most ``most``."""
    rows, cols = rng.randint(1, side), rng.randint(1, side)
    runs = []
    for _ in range(2):
        count = rng.randint(1, min(rows * cols, most))
        runs.append(TileRun(rng.randint(0, rows * cols - count), count))
    return Mesh(rows, cols, ((0, 0),)), runs[0], runs[1]


@pytest.mark.parametrize("seed", range(30))
def test_mean_hops_equal_the_pairwise_mean(seed: int) -> None:
    mesh, src, dst = _two_runs(random.Random(seed), 64, 600)
    assert mean_hops(mesh, src, dst) == ref.mean_hops_pairwise(mesh, src, dst)


@pytest.mark.parametrize("seed", range(40))
def test_link_share_equals_routing_every_pair(seed: int) -> None:
    mesh, src, dst = _two_runs(random.Random(seed), 9, 81)
    assert link_share(mesh, src, dst) == ref.link_share_routed(mesh, src, dst)


@pytest.mark.parametrize("seed", range(30))
def test_layer_cost_equals_the_reference(seed: int) -> None:
    rng = random.Random(seed)
    net = rng.choice(NETS)
    machine = rng.choice(MACHINES)
    layer = rng.choice(net.layers)
    batch, backward = rng.choice((1, 2, 8)), rng.random() < 0.3
    count = rng.randint(1, machine.tiles)
    for start in sorted({0, rng.randint(0, machine.tiles - count), machine.tiles - count}):
        region = TileRun(start, count)
        assert layer_cost(layer, batch, region, machine, backward) == \
            ref.layer_cost(layer, batch, region, machine, backward)


SEARCH_CASES = [(net, machine, batch) for net in (chain(5), diamond(), residual_block())
                for machine in MACHINES[::2] for batch in (1, 4, 8)]


@pytest.mark.parametrize(("net", "machine", "batch"), SEARCH_CASES)
def test_search_equals_the_eager_search(net: Workload, machine: Machine, batch: int) -> None:
    """Same blocks, plans and cost, with the patterns of ``set`` and with Crane's MILP
    (proven optima, so both runs see the same candidates; one cache serves both)."""
    objective = Objective()
    for solver, grouped in ((block_solver("set"), True),
                            (BlockCache(crane_solver(None)), batch in (4, 8))):
        found = search(net, batch, machine, solver, objective, "p", 4, grouped=grouped)
        expected = ref.search_eager(net, batch, machine, solver, objective, "p", 4,
                                    grouped=grouped)
        assert found.blocks == expected.blocks
        assert found.cost == expected.cost


@pytest.mark.parametrize("seed", range(6))
def test_milp_rows_packed_once_follow_every_edit(seed: int) -> None:
    """Rows packed for one solve are reused by the next only while unchanged: after a
    solve, a new row, new bounds and a removed last row each reach HiGHS."""
    rng = random.Random(seed)
    block = Block.of(rng.choice(NETS), 0, rng.randint(1, 3))
    form = formulate(block, 1, rng.randint(block.n, block.n + 3), rng.choice(MACHINES))
    assert form is not None
    model = form.model
    model.minimize(form.latency)
    edits = [lambda: model.constrain(form.energy, ub=1e30),
             lambda: model.set_bounds(rng.randrange(len(model.rows)), lb=-1.0, ub=1e29),
             lambda: model.rows.pop()]
    for edit in [None, *rng.sample(edits, 3), None]:
        if edit is not None:
            edit()
        assert _lp(model._highs(0.5)) == _lp(ref.highs_row_by_row(model, 0.5))
        model.solve(0.5)


@pytest.mark.parametrize("seed", range(10))
def test_nameless_blocks_solve_like_positionally_named_ones(seed: int) -> None:
    """Blocks keyed without layer names get the plans and costs they got with positional
    names (same solver, proven MILP optima), and the memo pairs the same blocks."""
    rng = random.Random(seed)
    net, machine = rng.choice(NETS), rng.choice(MACHINES)
    blocks = [_block(rng, net) for _ in range(2)]
    batch = rng.choice((2, 4, 8))
    solver = crane_solver(None)

    def solved(block: Block) -> list[tuple[int, int, tuple[tuple[int, ...], ...],
                                          tuple[bool, ...], fast.BlockCost]]:
        return [(p.subbatch, p.q, p.mix, p.fused, c)
                for p, c in solver(block, batch, machine, Objective(), 0.0)]

    for block in blocks:
        assert solved(_anonymous(block)) == solved(ref.anonymous_positional(block))
    assert (_anonymous(blocks[0]) == _anonymous(blocks[1])) == \
        (ref.anonymous_positional(blocks[0]) == ref.anonymous_positional(blocks[1]))
