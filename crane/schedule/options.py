"""Tile splits of a state among its active sub-blocks, and their per-sub-batch constants.

The split is a decision of the scheduler (not fixed to FLOP ratios as in the paper): every
state offers a few candidate splits and the solver chooses how many of the state's
sub-batches run under each. Candidates:

* ``balanced``: greedy min-max: tiles go one at a time to the slowest active layer, which
  minimises the pipeline step time for the utilisation model;
* ``flops``: proportional to the layers' MACs (the paper's rule).

Regions are laid out along the snake order in column order, so neighbours in the pipeline
are neighbours on the mesh.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from crane.cost.layer import layer_cost, step_cycles
from crane.cost.placement import Mesh, Region, dram_hops, mean_hops, split_regions
from crane.cost.traffic import Traffic, traffic_energy
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.tables import active_columns

SPLITS = ("balanced", "flops")


@dataclass(frozen=True, slots=True)
class StateOption:
    """One tile split of one state and what one sub-batch step costs under it."""

    split: str
    columns: tuple[int, ...]
    regions: tuple[Region, ...]
    cycles: float
    """Pipeline step time: the slowest active column's compute."""
    energy_pj: float
    """Compute and intra-layer traffic energy of one step (all active columns)."""
    traffic: Traffic
    """DRAM/NoC traffic repeated every step: weights that are not resident."""
    weight_load: Traffic
    """Loading the resident weights once when the state starts under this split."""

    def region(self, column: int) -> Region:
        return self.regions[self.columns.index(column)]


def _cycles(block: Block, column: int, batch: int, tiles: int, machine: Machine,
            backward: bool) -> float:
    layer = block.layers[column]
    macs = (layer.backward_macs if backward else layer.macs) * batch
    vec = (layer.backward_vector_ops if backward else layer.vector_ops) * batch
    return step_cycles(macs, vec, (batch, *layer.dims.partitionable), tiles,
                       machine.macs_per_cycle, machine.vector_lanes)


def balanced_split(block: Block, columns: tuple[int, ...], batch: int, tiles: int,
                   machine: Machine, backward: bool = False) -> tuple[int, ...]:
    """Greedy min-max tile counts: each spare tile goes to the currently slowest column."""
    if len(columns) == 1:
        return (tiles,)
    counts = [1] * len(columns)
    for _ in range(tiles - len(columns)):
        times = [_cycles(block, c, batch, counts[k], machine, backward)
                 for k, c in enumerate(columns)]
        counts[times.index(max(times))] += 1
    return tuple(counts)


def flops_split(block: Block, columns: tuple[int, ...], tiles: int,
                backward: bool = False) -> tuple[int, ...]:
    """Tiles in proportion to work (MACs, or vector ops for MAC-free layers), at least one."""
    work = [_work(block, c, backward) for c in columns]
    total = sum(work) or 1.0
    counts = [max(1, int(tiles * w / total)) for w in work]
    while sum(counts) > tiles:
        counts[counts.index(max(counts))] -= 1
    spare = tiles - sum(counts)
    order = sorted(range(len(columns)), key=lambda k: -work[k])
    for k in order[:spare]:
        counts[k] += 1
    return tuple(counts)


def _work(block: Block, column: int, backward: bool) -> float:
    layer = block.layers[column]
    macs = layer.backward_macs if backward else layer.macs
    vec = layer.backward_vector_ops if backward else layer.vector_ops
    return float(macs) or vec / 64.0


def _option(block: Block, split: str, columns: tuple[int, ...], counts: tuple[int, ...],
            batch: int, machine: Machine, backward: bool) -> StateOption:
    regions = split_regions(0, counts)
    cycles, energy = 0.0, 0.0
    step, load = Traffic(), Traffic()
    for column, region in zip(columns, regions, strict=True):
        cost = layer_cost(block.layers[column], batch, region, machine, backward)
        cycles = max(cycles, cost.cycles)
        energy += cost.energy_pj
        if cost.weights_resident:
            load = load + cost.weight_load
            continue
        # Weights that do not fit are fetched again for every sub-batch.
        step = step + cost.weight_load
        energy += traffic_energy(cost.weight_load, machine)
    return StateOption(split, columns, regions, cycles, energy, step, load)


@lru_cache(maxsize=50_000)
def state_options(block: Block, state: int, batch: int, machine: Machine,
                  backward: bool = False, splits: tuple[str, ...] = SPLITS,
                  tiles: int | None = None) -> tuple[StateOption, ...]:
    """Distinct candidate splits of ``state`` for sub-batches of ``batch`` samples."""
    columns = active_columns(block.n, state)
    budget = tiles or machine.tiles
    backward = backward or block.backward
    if len(columns) > budget:
        return ()
    seen: dict[tuple[int, ...], str] = {}
    for split in splits:
        counts = (balanced_split(block, columns, batch, budget, machine, backward)
                  if split == "balanced" else flops_split(block, columns, budget, backward))
        seen.setdefault(counts, split)
    return tuple(_option(block, split, columns, counts, batch, machine, backward)
                 for counts, split in seen.items())


def edge_hops(machine: Machine, option: StateOption, src: int, dst: int) -> float:
    """Hops of a direct producer-to-consumer transfer inside one state."""
    return mean_hops(Mesh.of(machine), option.region(src), option.region(dst))


def sram_hops(machine: Machine, option: StateOption, column: int) -> float:
    """Hops from data spread over the whole chip's SRAM to a column's region."""
    mesh = Mesh.of(machine)
    return mean_hops(mesh, Region(0, mesh.tiles), option.region(column))


def port_hops(machine: Machine, option: StateOption, column: int) -> float:
    """Hops between a column's region and its nearest DRAM ports."""
    return dram_hops(Mesh.of(machine), option.region(column))
