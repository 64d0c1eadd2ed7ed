"""Where a block's columns sit in each state, for one sub-batch size: the tiles holding each
column's kept outputs, and what a state's traffic reads from its first split. Built once per
(block, sub-batch size) and shared by every plan ``crane.schedule.evaluate`` prices and every
MILP ``crane.schedule.formulate`` builds."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from crane.cost.placement import Mesh, TileRun, link_share, mean_hops
from crane.dialects.segment_tables import active_columns, is_active
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.options import (
    StateOption,
    block_options,
    edge_path,
    input_reads,
    port_hops,
    sram_hops,
    sram_share,
)


@dataclass(frozen=True, slots=True)
class StateLayout:
    """What a state's traffic reads from its block and first split, looked up once per
    (block, sub-batch size, state), not once per plan (all plans use the first split's
    geometry). ``edges``: edges into active consumers, in block order, as (src, dst, bytes
    per sample, both ends active, direct hops and share, held hops and share, consumer's
    port hops). ``columns``: active columns in order, as (column, outside input bytes (from
    SRAM, from DRAM), outside output bytes (all, also to DRAM), SRAM hops, SRAM share, port hops, output bytes,
    consumers as (dst, active))."""

    edges: tuple[tuple[int, int, float, bool, float, float, float, float, float], ...]
    columns: tuple[tuple[int, tuple[float, float], tuple[int, int], float, float, float, int,
                         tuple[tuple[int, bool], ...]], ...]


@lru_cache(maxsize=100_000)
def state_layouts(block: Block, subbatch: int, machine: Machine,
                  backward: bool) -> tuple[StateLayout | None, ...]:
    """The ``StateLayout`` of every state (None: a state without options)."""
    mesh = Mesh.of(machine)
    holders = holders_of(block, subbatch, machine, False).regions
    return tuple(
        _state_layout(block, machine, mesh, state, opts[0], holders[state]) if opts else None
        for state, opts in enumerate(block_options(block, subbatch, machine, backward)))


def _state_layout(block: Block, machine: Machine, mesh: Mesh, state: int, opt: StateOption,
                  holders: tuple[TileRun, ...]) -> StateLayout:
    n = block.n
    edges = []
    for e in block.edges:
        if not is_active(n, state, e.dst):
            continue
        both = is_active(n, state, e.src)
        direct = edge_path(machine, opt, e.src, e.dst) if both else (0.0, 0.0)
        reader = opt.region(e.dst)
        # A consumer cut in weight slices reads its input once per slice.
        edges.append((e.src, e.dst, e.bytes * input_reads(opt, e.dst), both, *direct,
                      mean_hops(mesh, holders[e.src], reader),
                      link_share(mesh, holders[e.src], reader), port_hops(machine, opt, e.dst)))
    columns = []
    for m in opt.columns:
        inside = (sram_hops(machine, opt, m), sram_share(machine, opt, m)) \
            if block.in_from_sram else (0.0, 0.0)
        reads = input_reads(opt, m)
        outside_in = (block.external_sram_in(m) * reads, block.external_dram_in(m) * reads)
        outside_out = (block.external_out[m], block.dram_out[m] if block.dram_out else 0)
        columns.append((m, outside_in, outside_out,
                        *inside,
                        port_hops(machine, opt, m), block.layers[m].output_bytes,
                        tuple((d, d <= state < d + n) for d in storage_terms(block)[m][2])))
    return StateLayout(tuple(edges), tuple(columns))


@dataclass(frozen=True, slots=True)
class Holders:
    """Where each column's kept outputs sit after each state: its region in the last state
    up to then where it ran (the whole chip if it never ran), under the state's first split
    (``regions``) and the fewest tiles any of its candidate splits gave it (``tiles``)."""

    regions: tuple[tuple[TileRun, ...], ...]
    tiles: tuple[tuple[int, ...], ...]


@lru_cache(maxsize=100_000)
def holders_of(block: Block, subbatch: int, machine: Machine, backward: bool) -> Holders:
    """A column's holders change only in the states where it runs: one pass over the
    states carries them forward."""
    n = block.n
    regions, tiles = [TileRun(0, machine.tiles)] * n, [machine.tiles] * n
    region_rows, tile_rows = [], []
    for i, opts in enumerate(block_options(block, subbatch, machine, backward)):
        for m in active_columns(n, i) if opts else ():
            regions[m] = opts[0].region(m)
            tiles[m] = max(1, min(o.region(m).count for o in opts))
        region_rows.append(tuple(regions))
        tile_rows.append(tuple(tiles))
    return Holders(tuple(region_rows), tuple(tile_rows))


def holding_tiles(block: Block, subbatch: int, machine: Machine, state: int, column: int,
                  backward: bool = False) -> int:
    """Tiles holding ``column``'s outputs kept after ``state``: its region in the last state
    up to ``state`` where it ran (the smallest of that state's candidate splits, so the
    bound holds whichever split runs; the whole chip if it never ran)."""
    return holders_of(block, subbatch, machine, backward).tiles[state][column]


def held_path(block: Block, subbatch: int, machine: Machine, state: int, column: int,
              reader: TileRun, backward: bool = False) -> tuple[float, float]:
    """(mean hops, busiest-link share) from the tiles keeping ``column``'s outputs (its
    region in the last state up to ``state`` where it ran) to a reader's region."""
    holder = holders_of(block, subbatch, machine, backward).regions[state][column]
    mesh = Mesh.of(machine)
    return mean_hops(mesh, holder, reader), link_share(mesh, holder, reader)


@lru_cache(maxsize=100_000)
def storage_terms(block: Block) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    """Per column: output bytes, outside output bytes and its consumers' columns: what
    ``storage`` and ``held_per_tile`` read for every state of every plan (``held`` inline)."""
    return tuple((layer.output_bytes, block.external_out[m],
                  tuple(e.dst for e in block.consumers(m)))
                 for m, layer in enumerate(block.layers))
