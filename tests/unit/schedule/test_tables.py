"""The paper's worked examples as tables, and every constraint rejected by name."""

from __future__ import annotations

from dataclasses import replace

import pytest

from crane.dialects import segment_checks as checks
from crane.dialects.segment_checks import check_tables, check_training
from crane.dialects.segment_tables import MeT, ScT, Tables, grid
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.builders import chain
from crane.schedule.evaluate import Plan, tables_of
from crane.schedule.options import state_options

EDGE = Machine.edge()


def _plan(block: Block, q: int, workloads: tuple[int, ...], fused: tuple[bool, ...]) -> Plan:
    mix = tuple((s,) + (0,) * (len(state_options(block, i, 1, EDGE)) - 1)
                for i, s in enumerate(workloads))
    return Plan(block, 1, q, mix, fused)


def test_fig5_sequential_with_fusion() -> None:
    # Two layers, three sub-batches, states 1 and 3: layer 1 keeps its outputs in SRAM,
    # layer 2 reads them from there and writes its own to DRAM.
    block = Block.of(chain(2), 0, 2)
    tables = tables_of(_plan(block, 3, (3, 0, 3), (True, False)))
    assert tables.sct.values == ((3, 0), (3, 0), (3, 3))
    assert tables.met.sram == ((0, 0), (0, 0), (3, 3))
    assert tables.met.dram == ((3, 0), (3, 0), (3, 0))
    assert check_tables(tables) == []


def _fig6() -> tuple[Tables, Tables, Tables]:
    deps = ((0, 1),)
    # Forward: sequential, only sub-batch 3 of each layer stays in DRAM (MeT^D = 2).
    fw = Tables.uniform(ScT.from_workloads((3, 0, 3), 2),
                        MeT(grid([[0, 0], [0, 0], [2, 2]]), grid([[0, 0], [0, 0], [3, 3]])),
                        deps, 3)
    # BW1 back-propagates the retained sub-batch (2, 3]: layer 2's gradient first.
    bw1 = Tables(ScT.from_workloads((1, 0, 1), 2),
                 MeT(grid([[1, 0], [1, 0], [1, 1]]), grid([[0, 0], [0, 0], [1, 1]])),
                 deps, (1, 1))
    # BW2 recomputes layers 1, 2 on (0, 2] (columns 0, 1) and back-propagates layer 2
    # then layer 1 (columns 2, 3); layer 2's backward needs the recomputed layer-1 output,
    # layer 1's backward needs layer 2's input gradient. Everything stays in DRAM.
    bw2_sct = ScT.from_workloads((0, 1, 1, 0, 0, 1, 1), 4)
    zeros = grid([[0] * 4 for _ in range(7)])
    bw2 = Tables(bw2_sct, MeT(zeros, bw2_sct.values), ((0, 2), (2, 3)), (2, 2, 2, 2))
    return fw, bw1, bw2


def test_fig6_training_keeps_only_subbatch_three() -> None:
    fw, bw1, bw2 = _fig6()
    assert fw.met.dram[-1] == (2, 2)
    assert bw1.sct.values[-1] == (1, 1)
    assert bw2.sct.values[-1] == (2, 2, 2, 2)
    assert bw2.sct.values[3] == (2, 2, 1, 0)
    assert check_training(fw, bw1, (1, 0), bw2, (0, 1, 1, 0)) == []


def test_fig6_wrong_backward_boundary_is_named() -> None:
    fw, bw1, bw2 = _fig6()
    too_many = replace(bw1, sct=ScT.from_workloads((2, 0, 2), 2), totals=(2, 2),
                       met=MeT(grid([[2, 0], [2, 0], [2, 2]]), grid([[0, 0], [0, 0], [2, 2]])))
    found = {v.constraint for v in check_training(fw, too_many, (1, 0), bw2, (0, 1, 1, 0))}
    assert found == {checks.BW1_BOUNDARY}


def test_retention_direction() -> None:
    fw, bw1, bw2 = _fig6()
    # The producer (column 0) keeps fewer sub-batches than its consumer: not allowed.
    bad = replace(fw, met=MeT(grid([[0, 0], [0, 0], [3, 2]]), fw.met.sram))
    found = {v.constraint for v in check_training(bad, bw1, (1, 0), bw2, (0, 1, 1, 0))}
    assert checks.RETENTION in found


def _good() -> Tables:
    block = Block.of(chain(2), 0, 2)
    return replace(tables_of(_plan(block, 3, (1, 2, 1), (True, False))),
                   sram_capacity=1e12, dram_capacity=1e12)


def _set(g: tuple[tuple[int, ...], ...], i: int, j: int, v: int) -> tuple[tuple[int, ...], ...]:
    rows = [list(r) for r in g]
    rows[i][j] = v
    return grid(rows)


BROKEN = {
    checks.NONNEG: lambda t: replace(t, sct=ScT((1, 3, -1), grid([[1, 0], [4, 3], [3, 2]]))),
    checks.NOT_STARTED: lambda t: replace(t, sct=replace(t.sct, values=_set(t.sct.values, 0, 1, 1))),
    checks.COMPLETE: lambda t: replace(t, sct=replace(t.sct, values=_set(t.sct.values, 2, 1, 2))),
    checks.MONOTONE: lambda t: replace(t, sct=ScT((1, 2, 1), grid([[1, 0], [3, 2], [2, 3]]))),
    checks.DEPENDENCY: lambda t: replace(t, sct=ScT((0, 3, 0), grid([[0, 0], [3, 3], [3, 3]]))),
    checks.ACCUMULATION: lambda t: replace(t, sct=replace(t.sct, workloads=(1, 1, 1))),
    checks.MET_NONNEG: lambda t: replace(t, met=replace(t.met, dram=_set(t.met.dram, 0, 0, -1))),
    checks.MET_MONOTONE: lambda t: replace(t, met=replace(t.met, sram=_set(t.met.sram, 2, 0, 0))),
    checks.MET_BOUND: lambda t: replace(t, met=replace(t.met, sram=_set(t.met.sram, 0, 1, 1))),
    checks.MET_AVAILABLE: lambda t: replace(t, met=MeT(_set(t.met.dram, 0, 0, 1),
                                                       _set(t.met.sram, 0, 0, 1))),
    checks.SRAM_CAPACITY: lambda t: replace(t, sram_capacity=1.0),
    checks.DRAM_CAPACITY: lambda t: replace(t, dram_capacity=1.0),
    checks.SHAPE: lambda t: replace(t, sct=ScT((1, 2), t.sct.values[:2])),
}


def test_good_table_passes() -> None:
    assert check_tables(_good()) == []


@pytest.mark.parametrize("constraint", sorted(BROKEN))
def test_each_broken_constraint_is_named(constraint: str) -> None:
    found = check_tables(BROKEN[constraint](_good()), block="b")
    assert constraint in {v.constraint for v in found}
    assert all(v.block == "b" for v in found)
