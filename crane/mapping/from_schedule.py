"""The ``BlockProblem`` of a ``segment.block``: its tables plus the workload's byte figures.

The schedule names its layers; the workload the scheduler built from the same
``graph.func`` (``crane.schedule.from_graph.workload_of``) gives their weights, outputs
and edges. Traffic per state follows the scheduler's semantics
(``crane.schedule.evaluate``): a consumer takes ``ScT[i][c] - ScT[i-1][p]`` sub-batches
straight from its producer when both run in state i (NoC flow); everything else crosses
DRAM unless the producer is fused. Without a workload (a hand-written schedule of an
unknown function) byte figures fall back to one unit per sub-batch and SRAM needs to 0;
training blocks of ``<layer>.grad`` columns use the scheduler's gradient block.
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.cost.layer import weights_fit
from crane.cost.placement import Mesh
from crane.cost.utilisation import best_partition
from crane.cost.workload import Workload
from crane.dialects.segment import BlockOp
from crane.dialects.segment_tables import ScT, grid
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, IntAttr
from crane.mapping.problem import BlockProblem, Flow, Grid
from crane.schedule.block import Block
from crane.schedule.evaluate import direct_take
from crane.schedule.record import block_of


def _ceil_div(a: int, b: int) -> int:
    return -(-a // max(1, b))


def _sram_need(block: Block | None, tiles: Grid, subbatch: int, machine: Machine) -> Grid:
    if block is None:
        return tuple(tuple(0 for _ in row) for row in tiles)
    rows = []
    for row in tiles:
        need = []
        for j, t in enumerate(row):
            layer = block.layers[j]
            dims = layer.dims
            part = best_partition((subbatch, dims.k, dims.h, dims.w), max(1, t))
            resident = t > 0 and weights_fit(layer.weight_bytes, part, machine)
            need.append(_ceil_div(layer.weight_bytes, part.input_copies) if resident else 0)
        rows.append(tuple(need))
    return tuple(rows)


def _held(block: Block | None, sct: Grid, met_sram: Grid, subbatch: int,
          tiles: int) -> tuple[int, ...]:
    """Per state: the even per-tile share of activations held on chip during the state."""
    if block is None:
        return tuple(0 for _ in sct)
    ends = [sum((row[j] - low[j]) * block.layers[j].output_bytes * subbatch
                for j in range(block.n)) for row, low in zip(sct, met_sram, strict=True)]
    return tuple(_ceil_div(max(ends[i - 1] if i else 0, ends[i]), tiles)
                 for i in range(len(ends)))


def _flows(block: Block | None, deps: Sequence[tuple[int, int]], sct: ScT, tiles: Grid,
           subbatch: int) -> tuple[tuple[Flow, ...], ...]:
    edges = ([(e.src, e.dst, e.bytes * subbatch) for e in block.edges] if block is not None
             else [(p, c, 1) for p, c in deps])
    n = len(tiles[0]) if tiles else 0
    per_state = []
    for i, row in enumerate(tiles):
        merged: dict[tuple[int, int], int] = {}
        for src, dst, nbytes in edges:
            take = direct_take(sct, n, i, src, dst) if row[src] and row[dst] else 0
            if take:
                merged[(src, dst)] = merged.get((src, dst), 0) + nbytes * take
        per_state.append(tuple(Flow(s, d, b) for (s, d), b in sorted(merged.items())))
    return tuple(per_state)


def _dram(block: Block | None, sct: ScT, tiles: Grid, fused: Sequence[int],
          subbatch: int) -> Grid:
    """DRAM bytes of each placed column per state: weights, block inputs/outputs, spills."""
    rows = []
    for i, row in enumerate(tiles):
        s = sct.workloads[i] if i < len(sct.workloads) else 0
        out = []
        for j, t in enumerate(row):
            if not t:
                out.append(0)
                continue
            if block is None:
                out.append(max(1, s))
                continue
            layer = block.layers[j]
            spilled = 0 if j < len(fused) and fused[j] else layer.output_bytes
            out.append(layer.weight_bytes + subbatch * s * (
                block.external_in[j] + block.external_out[j] + spilled))
        rows.append(tuple(out))
    return tuple(rows)


def block_problem(label: str, layers: Sequence[str], tables: tuple[ScT, Grid],
                  deps: Sequence[tuple[int, int]], tiles: Grid, fused: Sequence[int],
                  subbatch: int, machine: Machine, workload: Workload | None) -> BlockProblem:
    """The placement problem of one block; ``tables`` is (ScT, MeT SRAM lower bounds)."""
    sct, met_sram = tables
    block = block_of(workload, layers)
    mesh = Mesh.of(machine)
    return BlockProblem(
        label=label, layers=tuple(layers), mesh=mesh, sram_bytes=machine.sram_bytes,
        tiles=grid(tiles), sct=sct.values, workloads=sct.workloads, deps=tuple(deps),
        sram_need=_sram_need(block, tiles, subbatch, machine),
        held=_held(block, sct.values, met_sram, subbatch, mesh.tiles),
        flows=_flows(block, deps, sct, tiles, subbatch),
        dram_bytes=_dram(block, sct, tiles, fused, subbatch),
        sizes_known=block is not None,
    )


def problem_of(op: BlockOp, machine: Machine, workload: Workload | None) -> BlockProblem:
    """The placement problem of a (verified) ``segment.block``: what ``map`` solves and the
    mesh picture draws."""
    tables = op.tables()
    fused = op.attributes.get("fused")
    subbatch = op.attributes.get("subbatch")
    return block_problem(
        op.label, op.layer_names, (tables.sct, tables.met.sram), tables.deps, op.tile_split(),
        tuple(fused) if isinstance(fused, DenseIntsAttr) else (),
        max(1, subbatch.value) if isinstance(subbatch, IntAttr) else 1, machine, workload)
