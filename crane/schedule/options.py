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

import heapq
from dataclasses import dataclass, field
from functools import lru_cache

from crane.cost.layer import (
    compute_pieces,
    layer_cost,
    min_tiles,
    step_cycles,
    weight_spread_cycles,
)
from crane.cost.placement import Mesh, TileRun, dram_hops, link_share, mean_hops, split_regions
from crane.cost.traffic import Traffic, dram_cycles, link_cycles, noc_time, traffic_energy
from crane.cost.workload import LayerWork
from crane.dialects.segment_tables import active_columns, num_states
from crane.hardware.machine import Machine
from crane.schedule.block import Block

SPLITS = ("balanced", "flops")


@dataclass(frozen=True, slots=True)
class StateOption:
    """One tile split of one state and what one sub-batch step costs under it."""

    split: str
    columns: tuple[int, ...]
    regions: tuple[TileRun, ...]
    cycles: float
    """Pipeline step time: the slowest active column's compute."""
    energy_pj: float
    """Compute and intra-layer traffic energy of one step (all active columns)."""
    traffic: Traffic
    """DRAM/NoC traffic repeated every step: weights that are not resident, and the input
    copies a channel split forwards between tiles (NoC only; priced in ``energy_pj``)."""
    weight_load: Traffic
    """Loading the resident weights once when the state starts under this split."""
    sram: tuple[float, ...] = ()
    """Per active column: mean hops from the whole chip's SRAM to its region."""
    port: tuple[float, ...] = ()
    """Per active column: mean hops from its region to the nearest DRAM port."""
    edges: tuple[tuple[int, int, float, float], ...] = ()
    """(src, dst, mean hops, busiest-link share) of the block's edges whose two ends are
    both active."""
    lead: float = 0.0
    """Cycles the state's compute cannot hide: its resident weights and the first step's
    inputs from outside the block arrive before the first compute starts, and the last
    step's results leave for DRAM after the last ends."""
    tail: float = 0.0
    """Cycles of one step's compute that follow its last transfer (a backward step's last
    training step): transfers cannot hide them."""
    sram_share: tuple[float, ...] = ()
    """Per active column: busiest-link share of data spread over the chip's SRAM reaching it."""
    reads: tuple[float, ...] = ()
    """Per active column: how many times its tiles read its inputs, halos counted (once per
    weight slice, ``crane.cost.layer.input_reads``)."""

    def region(self, column: int) -> TileRun:
        return self.regions[self.columns.index(column)]

    def shifted(self, offset: int) -> StateOption:
        """The option with its columns (and edges' ends) numbered ``offset`` higher."""
        return StateOption(
            self.split, tuple(c + offset for c in self.columns), self.regions, self.cycles,
            self.energy_pj, self.traffic, self.weight_load, self.sram, self.port,
            tuple((a + offset, b + offset, hops, share) for a, b, hops, share in self.edges),
            self.lead, self.tail, self.sram_share, self.reads)


@dataclass(frozen=True, slots=True)
class StateView:
    """What the splits of a state depend on: its active columns' layers, the block's edges
    between them, their inputs from outside the block and where those come from, with the
    columns numbered from the first active one. Blocks with the same view share their
    options: the fill states of every block with one start, the drain states of every
    block with one stop, each boundary's variants of one block."""

    layers: tuple[LayerWork, ...]
    edges: tuple[tuple[int, int], ...]
    """(producer, consumer) of each edge between the active columns."""
    external_in: tuple[int, ...]
    in_from_sram: bool
    dram_in: tuple[int, ...] = ()
    """Of ``external_in``, the bytes read from DRAM even so (``Block.dram_in``)."""
    stored: tuple[int, ...] = ()
    """Bytes per sample each active column writes to DRAM for consumers outside the block."""
    _hash: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        # Views key the option cache once per sub-batch size: hash them once.
        object.__setattr__(self, "_hash", hash((self.layers, self.edges, self.external_in,
                                                self.in_from_sram, self.dram_in, self.stored)))

    def __hash__(self) -> int:
        return self._hash

    @classmethod
    def of(cls, block: Block, state: int) -> StateView:
        """The view of a block's state (cached: every sub-batch size asks for it)."""
        return _view_of(block, state)


@lru_cache(maxsize=100_000)
def _view_of(block: Block, state: int) -> StateView:
    columns = active_columns(block.n, state)
    first, last = columns[0], columns[-1]
    external_in = block.external_in[first:last + 1]
    # Active columns are contiguous and edges run forward: an edge lies in the state
    # when it starts at or after the first column and ends at or before the last.
    leaving = block.dram_out if block.out_to_sram else block.external_out
    return StateView(block.layers[first:last + 1],
                     tuple((e.src - first, e.dst - first) for e in block.edges
                           if first <= e.src and e.dst <= last),
                     external_in, block.in_from_sram and any(external_in),
                     block.dram_in[first:last + 1] if block.dram_in else (),
                     tuple(leaving[first:last + 1]))


def _cycles(layer: LayerWork, batch: int, tiles: int, machine: Machine,
            backward: bool) -> float:
    macs = (layer.backward_macs if backward else layer.macs) * batch
    vec = (layer.backward_vector_ops if backward else layer.vector_ops) * batch
    return step_cycles(macs, vec, (batch, *layer.dims.partitionable), tiles,
                       machine.macs_per_cycle, machine.vector_lanes)


def balanced_split(layers: tuple[LayerWork, ...], batch: int, tiles: int, machine: Machine,
                   backward: bool = False) -> tuple[int, ...] | None:
    """Greedy min-max tile counts of a state's active layers: each starts with the fewest
    tiles its working set fits (``crane.cost.layer.min_tiles``), each spare tile goes to
    the currently slowest layer. None when the layers' minimums exceed ``tiles``."""
    if len(layers) == 1:
        return (tiles,)
    return _balanced(layers, batch, tiles, machine, backward)


@lru_cache(maxsize=400_000)
def _balanced(layers: tuple[LayerWork, ...], batch: int, tiles: int, machine: Machine,
              backward: bool) -> tuple[int, ...] | None:
    """``balanced_split`` of the active layers (shared by every block holding them)."""
    counts = [min_tiles(layer, batch, machine, backward) for layer in layers]
    if sum(counts) > tiles:
        return None
    # Only the column that got the tile changes its time: a heap of (-time, column) picks
    # the slowest column (the first one on ties) without recomputing the others.
    tables = [_cycle_table(layer, batch, machine, backward) for layer in layers]
    heap = [(-_cycles_on(tables[k], layer, batch, counts[k], machine, backward), k)
            for k, layer in enumerate(layers)]
    heapq.heapify(heap)
    for _ in range(tiles - sum(counts)):
        _, k = heapq.heappop(heap)
        counts[k] += 1
        heapq.heappush(heap, (-_cycles_on(tables[k], layers[k], batch, counts[k], machine,
                                          backward), k))
    return tuple(counts)


@lru_cache(maxsize=100_000)
def _cycle_table(layer: LayerWork, batch: int, machine: Machine,
                 backward: bool) -> tuple[float, ...]:
    """``_cycles`` of the layer on 0 .. ``machine.tiles`` tiles (0: unused). A layer sits
    in many windows of layers, each balanced tile by tile: one table serves them all."""
    return (0.0, *(_cycles(layer, batch, t, machine, backward)
                   for t in range(1, machine.tiles + 1)))


def _cycles_on(table: tuple[float, ...], layer: LayerWork, batch: int, tiles: int,
               machine: Machine, backward: bool) -> float:
    """``_cycles`` from the layer's table (computed when ``tiles`` lies beyond it)."""
    if 0 < tiles < len(table):
        return table[tiles]
    return _cycles(layer, batch, tiles, machine, backward)


def flops_split(layers: tuple[LayerWork, ...], tiles: int, backward: bool = False,
                floors: tuple[int, ...] | None = None) -> tuple[int, ...] | None:
    """Tiles in proportion to the active layers' work (MACs, or vector ops for MAC-free
    layers), at least ``floors`` (one by default); None when the floors exceed ``tiles``."""
    low = floors or (1,) * len(layers)
    if sum(low) > tiles:
        return None
    work = [_work(layer, backward) for layer in layers]
    total = sum(work) or 1.0
    counts = [max(f, int(tiles * w / total)) for f, w in zip(low, work, strict=True)]
    while sum(counts) > tiles:
        above = [k for k in range(len(counts)) if counts[k] > low[k]]
        counts[max(above, key=lambda k: counts[k])] -= 1
    spare = tiles - sum(counts)
    order = sorted(range(len(layers)), key=lambda k: -work[k])
    for k in order[:spare]:
        counts[k] += 1
    return tuple(counts)


def _work(layer: LayerWork, backward: bool) -> float:
    macs = layer.backward_macs if backward else layer.macs
    vec = layer.backward_vector_ops if backward else layer.vector_ops
    return float(macs) or vec / 64.0


@dataclass(frozen=True, slots=True)
class _SplitCost:
    """What a split costs from its layers and tile counts alone (not from the edges and
    outside inputs of the view holding them): many views share their layers (the same
    window of layers seen from blocks with other starts, or with inputs in SRAM)."""

    regions: tuple[TileRun, ...]
    cycles: float
    energy_pj: float
    traffic: Traffic
    weight_load: Traffic
    weights: float
    """Cycles to bring the resident weights in (the weights' part of ``lead``)."""
    sram: tuple[float, ...]
    port: tuple[float, ...]
    sram_share: tuple[float, ...]
    reads: tuple[float, ...]
    last: float
    """Cycles of the compute that follows a step's last transfer (``StateOption.tail``)."""
    steps: tuple[int, ...]
    """Forward, the stream steps each column's tiles run their part in, each loading its
    inputs while the one before computes (``compute_pieces``): only the first step's
    inputs and the last one's stores are not hidden; backward, one."""


@lru_cache(maxsize=400_000)
def _split_cost(layers: tuple[LayerWork, ...], counts: tuple[int, ...], batch: int,
                machine: Machine, backward: bool) -> _SplitCost:
    regions = split_regions(0, counts)
    cycles, energy, last = 0.0, 0.0, 0.0
    step, load, flushed = Traffic(), Traffic(), Traffic()
    spread = 0.0
    reads, steps = [], []
    for layer, region in zip(layers, regions, strict=True):
        cost = layer_cost(layer, batch, region, machine, backward)
        reads.append(cost.input_reads)
        # A part computed in pieces (stream or training steps) computes each as its data
        # arrives: only the last piece's compute follows the transfers.
        pieces = compute_pieces(layer, batch, cost.partition, machine.sram_bytes, backward)
        # Backward, each training step loads, computes and stores in turn: its first
        # inputs and last results are no smaller a share of the state's transfers.
        steps.append(1 if backward else pieces)
        cycles = max(cycles, cost.cycles)
        last = max(last, cost.cycles / pieces)
        energy += cost.energy_pj
        spread = max(spread, weight_spread_cycles(layer, cost.partition, machine))
        flushed = flushed + cost.flushed_gradient
        step = step + cost.spills
        energy += traffic_energy(cost.spills, machine)
        # Copies a split forwards between its tiles (priced in energy_pj) take NoC time.
        step = step + Traffic(noc_byte_hops=cost.operand_traffic.noc_byte_hops,
                              noc_link_bytes=cost.operand_traffic.noc_link_bytes)
        if cost.weights_resident:
            load = load + cost.weight_load
            continue
        # Weights that do not fit are fetched again for every sub-batch.
        step = step + cost.weight_load
        energy += traffic_energy(cost.weight_load, machine)
    mesh = Mesh.of(machine)
    chip = TileRun(0, mesh.tiles)
    weights = max(_transfer_cycles(load, machine), spread if load.dram_bytes else 0.0)
    # A flushed gradient moves beside the compute: in the state's traffic, not its lead.
    return _SplitCost(regions, cycles, energy, step, load + flushed, weights,
                      tuple(mean_hops(mesh, chip, r) for r in regions),
                      tuple(dram_hops(mesh, r) for r in regions),
                      tuple(link_share(mesh, chip, r) for r in regions), tuple(reads), last,
                      tuple(steps))


def _option(view: StateView, split: str, counts: tuple[int, ...], batch: int,
            machine: Machine, backward: bool) -> StateOption:
    core = _split_cost(view.layers, counts, batch, machine, backward)
    regions = core.regions
    mesh = Mesh.of(machine)
    edges = tuple((src, dst, mean_hops(mesh, regions[src], regions[dst]),
                   link_share(mesh, regions[src], regions[dst])) for src, dst in view.edges)
    # The last step's results leave for DRAM after its compute, and the first step's inputs
    # arrive before it: nothing hides them.
    drain = dram_cycles(sum(n * batch / k for n, k in zip(view.stored, core.steps, strict=False)),
                        machine)
    lead = core.weights + drain + max(
        (_input_cycles(view, k, batch, r, machine) / core.steps[k] for k, r in enumerate(regions)),
        default=0.0)
    return StateOption(split, tuple(range(len(regions))), regions, core.cycles, core.energy_pj, core.traffic,
                       core.weight_load, core.sram, core.port, edges, lead, core.last,
                       core.sram_share, core.reads)


def _transfer_cycles(traffic: Traffic, machine: Machine) -> float:
    """Time of a transfer alone on the machine: the slower of its DRAM and NoC parts."""
    return max(dram_cycles(traffic.dram_bytes, machine), noc_time(traffic, machine.tiles, machine))


def _input_cycles(view: StateView, k: int, batch: int, region: TileRun, machine: Machine) -> float:
    """One step's inputs from outside the block reaching the region of the view's k-th
    column: through DRAM, or over the region's links when the block's inputs stay on chip."""
    nbytes = view.external_in[k] * batch
    if not nbytes:
        return 0.0
    if not view.in_from_sram:
        return dram_cycles(nbytes, machine)
    from_dram = view.dram_in[k] * batch if view.dram_in else 0
    chip = TileRun(0, machine.tiles)
    on_chip = link_cycles((nbytes - from_dram) * link_share(Mesh.of(machine), chip, region),
                          machine)
    return max(on_chip, dram_cycles(from_dram, machine)) if from_dram else on_chip


@lru_cache(maxsize=400_000)
def state_options(block: Block, state: int, batch: int, machine: Machine,
                  backward: bool = False, splits: tuple[str, ...] = SPLITS,
                  tiles: int | None = None) -> tuple[StateOption, ...]:
    """Distinct candidate splits of ``state`` for sub-batches of ``batch`` samples."""
    columns = active_columns(block.n, state)
    budget = tiles or machine.tiles
    if len(columns) > budget:
        return ()
    found = view_options(StateView.of(block, state), batch, machine,
                         backward or block.backward, splits, budget)
    return tuple(option.shifted(columns[0]) for option in found) if columns[0] else found


@lru_cache(maxsize=100_000)
def block_options(block: Block, batch: int, machine: Machine,
                  backward: bool = False) -> tuple[tuple[StateOption, ...], ...]:
    """:func:`state_options` of every state of ``block``, in state order."""
    return tuple(state_options(block, i, batch, machine, backward)
                 for i in range(num_states(block.n)))


@lru_cache(maxsize=400_000)
def view_options(view: StateView, batch: int, machine: Machine, backward: bool,
                 splits: tuple[str, ...], budget: int) -> tuple[StateOption, ...]:
    """:func:`state_options` of a state seen through its view, on ``budget`` tiles."""
    seen: dict[tuple[int, ...], str] = {}
    floors = tuple(min_tiles(layer, batch, machine, backward) for layer in view.layers)
    for split in splits:
        counts = (balanced_split(view.layers, batch, budget, machine, backward)
                  if split == "balanced" else flops_split(view.layers, budget, backward, floors))
        if counts is not None:
            seen.setdefault(counts, split)
    return tuple(_option(view, split, counts, batch, machine, backward)
                 for counts, split in seen.items())


def edge_path(machine: Machine, option: StateOption, src: int, dst: int) -> tuple[float, float]:
    """(:func:`edge_hops`, :func:`edge_share`) of a transfer, from one look-up."""
    for a, b, hops, share in option.edges:
        if (a, b) == (src, dst):
            return hops, share
    mesh, at, to = Mesh.of(machine), option.region(src), option.region(dst)
    return mean_hops(mesh, at, to), link_share(mesh, at, to)


def edge_hops(machine: Machine, option: StateOption, src: int, dst: int) -> float:
    """Hops of a direct producer-to-consumer transfer inside one state."""
    for a, b, hops, _ in option.edges:
        if (a, b) == (src, dst):
            return hops
    return mean_hops(Mesh.of(machine), option.region(src), option.region(dst))


def edge_share(machine: Machine, option: StateOption, src: int, dst: int) -> float:
    """Busiest-link share of a direct producer-to-consumer transfer inside one state."""
    for a, b, _, share in option.edges:
        if (a, b) == (src, dst):
            return share
    return link_share(Mesh.of(machine), option.region(src), option.region(dst))


def sram_share(machine: Machine, option: StateOption, column: int) -> float:
    """Busiest-link share of data spread over the chip's SRAM reaching a column's region."""
    return option.sram_share[option.columns.index(column)]


def sram_hops(machine: Machine, option: StateOption, column: int) -> float:
    """Hops from data spread over the whole chip's SRAM to a column's region."""
    return option.sram[option.columns.index(column)]


def input_reads(option: StateOption, column: int) -> float:
    """How many times a column's tiles read its inputs under the split (1 if unknown)."""
    return option.reads[option.columns.index(column)] if option.reads else 1.0


def port_hops(machine: Machine, option: StateOption, column: int) -> float:
    """Hops between a column's region and its nearest DRAM ports."""
    return option.port[option.columns.index(column)]
