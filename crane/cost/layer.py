"""Cost of one layer processing one sub-batch on a cluster of tiles (forward or backward).

Compute follows Crane Eqs. 16-17 and 20: the MAC array runs at the utilisation of the best
SET factorisation, and energy is charged for padded (idle) MAC slots as the paper does.
Vector work (pool, eltwise, softmax, activation, norms) follows the layer's MACs on the same
compute unit: the program runs them as instructions of their own, one after the other.
Operand traffic inside the cluster (SRAM reads of inputs and weights, writes of outputs) is
counted here; traffic between layers is the scheduler's business.

A channel split's input copies cross the NoC (``REPLICA_HOPS``) and are written to SRAM.
Weights are *resident* when a tile's slice fits in half of its SRAM (the other half is kept
for activations and working buffers): they are then loaded once per state. Otherwise they
are re-streamed from DRAM for every sub-batch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from crane.cost.placement import Mesh, TileRun, dram_hops, mean_hops
from crane.cost.traffic import Traffic, traffic_energy
from crane.cost.utilisation import Partition, best_partition, preferred_partition
from crane.cost.workload import GEMM_KINDS, Dims, LayerWork
from crane.hardware.machine import Machine

WEIGHT_SRAM_SHARE = 0.5
"""Share of a tile's SRAM set aside for weights: the scheduler's activations get the rest
(``crane.schedule.evaluate.activation_capacity``)."""
SCATTER_BYTES = 16 * 1024
"""A box at least this big that four or more tiles share is fetched in slabs."""
REPLICA_HOPS = 1.0
"""Hops a forwarded copy travels: the slices of a channel split sit on neighbouring tiles
(codegen orders parts with the channel innermost), and shared weight slices spread along a
tree of neighbours."""
WORKING_SET_SHARE = 0.25
"""Share of a tile's SRAM one step's output box and its streamed input may take."""
STREAM_SHARE = 1 / 16
"""A tile streams a big input box in steps of this share of its SRAM (codegen's step
budget, ``crane.codegen.lower``, is this share), so only one step of input is resident at a
time."""
HELD_SHARE = 0.2
"""Share of a tile's SRAM for a result it keeps on chip for later ops (a column's kept
outputs, a cut crossed in SRAM): codegen holds a result box up to this share whole and
streams a bigger one to DRAM (``Context.hold_budget``). A quarter was too much: one tile
running attention holds four values at once while the scores stream through (the
residual input, ``q``, and ``k`` before and after its transpose); at a quarter each they
filled the SRAM and the streamed step overflowed it (BERT-base on ``gpu11``, GPT-2 on
``mesh2x2``). A fifth leaves the step its room."""

TRAINING_STEP_SHARE = 1 / 8
"""Of a tile's SRAM, what one step of a training op may read and write: codegen runs a
gradient op's part in steps of this size (``crane.codegen.emit_training``)."""

WEIGHT_SLICE_SHARE = 0.25
"""A tile whose weight slice is bigger than this share of its SRAM runs its part in slices
of the output channels whose weights each fit it (codegen's chunk budget,
``crane.codegen.steps.temporal_chunks``), and reads its input again for every slice."""
SLICED_KINDS = frozenset({"conv", "fc"})
"""Layer kinds whose weights codegen cuts along the output channels (``steps.WEIGHT_AXES``)."""


@dataclass(frozen=True, slots=True)
class WorkCost:
    """One sub-batch of one layer on a region: time, energy, and weight handling."""

    cycles: float
    energy_pj: float
    operand_traffic: Traffic
    partition: Partition
    weights_resident: bool
    weight_load: Traffic
    """Traffic to bring the layer's weights into the region once."""
    input_reads: float = 1.0
    """How many times each tile reads its input: once per weight slice (``input_passes``),
    its halos counted (``halo_factor`` across tiles, ``step_halo_factor`` across a tile's
    steps)."""
    flushed_gradient: Traffic = Traffic()
    """Backward only: the weight gradient stored to DRAM and read back by the update, once
    per state, beside the compute (``flushes_gradient``)."""
    spills: Traffic = Traffic()
    """Backward only, every sub-batch: the DRAM traffic of ``backward_spills``."""

    @property
    def per_subbatch_traffic(self) -> Traffic:
        """Traffic repeated every sub-batch: operands, plus weights when not resident."""
        if self.weights_resident:
            return self.operand_traffic
        return self.operand_traffic + self.weight_load


def _compute_cycles(macs: float, vector_ops: float, part: Partition, machine: Machine) -> float:
    return _cycles_of(macs, vector_ops, part, machine.macs_per_cycle, machine.vector_lanes)


def _cycles_of(macs: float, vector_ops: float, part: Partition, macs_per_cycle: int,
               lanes: int) -> float:
    """MAC cycles plus vector cycles: a layer's convolution or matmul and the vector ops
    merged into it (activations, norms) are separate instructions on a tile's one compute
    unit, which runs them one after the other (``crane.exec.tile_sim``)."""
    mac_cycles = macs / (macs_per_cycle * part.throughput) if macs else 0.0
    vec_cycles = vector_ops / (lanes * part.tiles) if vector_ops else 0.0
    return mac_cycles + vec_cycles


@lru_cache(maxsize=500_000)
def step_cycles(macs: int, vector_ops: int, extents: tuple[int, int, int, int], tiles: int,
                macs_per_cycle: int, lanes: int) -> float:
    """Compute cycles of one sub-batch on at most ``tiles`` tiles (primitive, cached key)."""
    return _cycles_of(macs, vector_ops, best_partition(extents, tiles), macs_per_cycle, lanes)


def weights_fit(weight_bytes: int, part: Partition, machine: Machine) -> bool:
    """Whether each tile's weight slice stays on chip for the whole block: it fits
    ``WEIGHT_SLICE_SHARE`` of SRAM, as codegen keeps such weights for the block's later
    sub-batches (bigger ones it cuts into slices, streamed in again for every sub-batch)."""
    per_tile = weight_bytes / max(1, part.input_copies)
    return per_tile <= WEIGHT_SLICE_SHARE * machine.sram_bytes


@lru_cache(maxsize=200_000)
def layer_cost(layer: LayerWork, batch: int, region: TileRun, machine: Machine,
               backward: bool = False) -> WorkCost:
    """Cost of ``batch`` samples of ``layer`` (forward, or dX+dW when ``backward``)."""
    core = _region_free_cost(layer, batch, region.count, machine, backward)
    mesh = Mesh.of(machine)
    hops = dram_hops(mesh, region)
    # Each distinct weight slice comes from DRAM once and is forwarded to the other tiles
    # reading it, along a tree of neighbouring tiles.
    weight_load = Traffic.dram_read(layer.weight_bytes, hops) + core.forwarded_weights
    flushed = flushed_gradient(layer, core.partition, machine, hops) if backward else Traffic()
    spills = backward_spills(layer, batch, core.partition, machine, hops, core.streamed) \
        if backward else Traffic()
    operands, energy = core.operand_traffic, core.energy_pj
    if core.reduced_bytes:  # the partials cross the region between its tiles
        apart = mean_hops(mesh, region, region)
        sums = Traffic.on_chip(core.reduced_bytes, apart, apart / max(1, region.count))
        operands, energy = operands + sums, energy + traffic_energy(sums, machine)
    return WorkCost(core.cycles, energy, operands, core.partition, core.weights_resident,
                    weight_load, core.input_reads, flushed, spills)


@dataclass(frozen=True, slots=True)
class _RegionFreeCost:
    """What ``layer_cost`` computes from the region's size alone: everything but the
    DRAM read of the weights and the backward's sums of partial weight gradients, whose
    hops depend on where the region sits."""

    cycles: float
    energy_pj: float
    operand_traffic: Traffic
    partition: Partition
    weights_resident: bool
    forwarded_weights: Traffic
    reduced_bytes: int = 0
    """Backward only: partial weight-gradient bytes added over the NoC (``reduced_gradient_bytes``)."""
    input_reads: float = 1.0
    streamed: bool = False
    """A tile runs its part in steps (``stream_steps``)."""


@lru_cache(maxsize=200_000)
def _region_free_cost(layer: LayerWork, batch: int, tiles: int, machine: Machine,
                      backward: bool) -> _RegionFreeCost:
    """The part of :func:`layer_cost` shared by every region of ``tiles`` tiles: the
    scheduler prices the same layer on many regions of one size (each split of each
    state places it elsewhere), and this part is most of the work."""
    dims = layer.dims
    part = preferred_partition((batch, dims.k, dims.h, dims.w), tiles, (dims.c, dims.r, dims.s))
    macs = (layer.backward_macs if backward else layer.macs) * batch
    # Backward adds the partial weight gradients up: one vector add per element of each.
    reduced = reduced_gradient_bytes(layer, part) if backward else 0
    vec = (layer.backward_vector_ops if backward else layer.vector_ops) * batch \
        + reduced / machine.data_bytes
    joined = 0.0 if backward else joined_bytes(layer, batch, part)
    readers = input_readers(layer, part)
    # Each reading tile's joins are one copy per element; channel slices share one join.
    # Their SRAM traffic is the move of the input the scheduler prices already (read where
    # it was made, written where it is read): only their time is added here.
    cycles = _compute_cycles(macs, vec + joined * readers / machine.data_bytes, part, machine)
    # Backward reads the saved activation and the output gradient, and writes the input
    # gradient: about twice the forward operand volume.
    volume = 2 if backward else 1
    # A channel split of a dense layer gives every output-channel slice the whole input: it
    # arrives once and is forwarded to the other slices' neighbouring tiles (one hop each).
    # Channel-wise layers (pools, elementwise ops, depthwise convolutions) read only theirs.
    copies = layer.input_bytes * batch * max(0, readers - 1)
    spread = 1.0 / max(1, tiles)  # copies cross the region's own links
    # A tile streams a big part in steps (STREAM_SHARE of SRAM each) and reads its weight
    # slice again for every step.
    steps = stream_steps(layer, batch, part, machine.sram_bytes)
    operands = Traffic(
        noc_byte_hops=volume * copies * REPLICA_HOPS,
        noc_link_bytes=volume * copies * REPLICA_HOPS * spread,
        sram_read_bytes=volume * (layer.input_bytes * batch * readers
                                  + layer.weight_bytes * part.weight_copies * steps),
        sram_write_bytes=volume * (layer.output_bytes * batch + copies),
    )
    forwarded = Traffic.on_chip(layer.weight_bytes * max(0, part.weight_copies - 1),
                                REPLICA_HOPS, REPLICA_HOPS * spread)
    energy = (macs * machine.mac_pj / part.utilisation + vec * machine.vector_op_pj
              + traffic_energy(operands, machine))
    reads = 1.0 if backward else input_passes(layer, part, machine.sram_bytes) \
        * halo_factor(layer.dims, part) * step_halo_factor(layer, batch, part, machine.sram_bytes)
    return _RegionFreeCost(cycles, energy, operands, part,
                           weights_fit(layer.weight_bytes, part, machine), forwarded, reduced,
                           reads, steps > 1)


def joined_bytes(layer: LayerWork, batch: int, part: Partition) -> float:
    """Bytes the tiles copy to join a concatenated input's pieces into one buffer per
    input box (``crane.codegen.fetch``): every distinct box once, halos included. Codegen
    copies the pieces already on the reading tile and receives the others in place; the
    model does not know where the producers left them and counts the whole box (on one or
    two tiles nearly all of it is local). A box four or more channel slices share is
    fetched in slabs straight into the readers' windows instead (``scatter_slabs``), with
    no join."""
    if not layer.joined_input_bytes:
        return 0.0
    readers = input_readers(layer, part)
    box = layer.input_bytes * batch * readers / max(1, part.tiles)
    if scatter_slabs(readers, box, readers) > 1:
        return 0.0
    return layer.joined_input_bytes * batch * halo_factor(layer.dims, part)


def halo_factor(dims: Dims, part: Partition) -> float:
    """How much more input the tiles of a spatial split read than the input holds: each
    cut of the output's rows (columns) reads the window's overlap again, as codegen's
    input boxes do (``crane.codegen.rules``)."""
    return (1.0 + (part.kh - 1) * dims.halo_h) * (1.0 + (part.kw - 1) * dims.halo_w)


def step_halo_factor(layer: LayerWork, batch: int, part: Partition, sram_bytes: int) -> float:
    """How much more input a tile reads when it runs its part in steps: codegen cuts a part
    whose activations (per weight slice, with a chained result's buffer) exceed
    ``STREAM_SHARE`` of SRAM into steps, its samples first (they share no input), then its
    rows and columns into the patches reading least, and each cut of the rows (columns)
    reads the window's overlap again (``crane.codegen.steps.temporal_chunks``)."""
    dims = layer.dims
    if not (dims.halo_h or dims.halo_w):
        return 1.0
    outputs = (2 if layer.vector_ops else 1) * layer.output_bytes \
        / input_passes(layer, part, sram_bytes)
    box = (layer.input_bytes * input_readers(layer, part) + outputs) * batch / max(1, part.tiles)
    steps = math.ceil(box / (STREAM_SHARE * sram_bytes))
    patches = -(-steps // max(1, min(steps, -(-batch // part.kb))))
    rows, cols = max(1, dims.h // part.kh), max(1, dims.w // part.kw)
    grow_h, grow_w = dims.halo_h * part.kh, dims.halo_w * part.kw
    cuts = [(r, -(-patches // r)) for r in range(1, min(patches, rows) + 1)]
    return min((1.0 + (r - 1) * grow_h) * (1.0 + (min(c, cols) - 1) * grow_w) for r, c in cuts)


def input_passes(layer: LayerWork, part: Partition, sram_bytes: int) -> int:
    """How many times a tile reads its input box in forward: once per slice of its output
    channels when its weights exceed ``WEIGHT_SLICE_SHARE`` of SRAM, the fewest slices
    whose weights each fit (channels split as evenly as they go), else once (also when
    not even one channel's weights fit: codegen then runs the part whole, in input-channel
    chunks, ``crane.codegen.steps._unsliceable``)."""
    if not layer.weight_bytes or layer.kind not in SLICED_KINDS:
        return 1
    if runs_in_input_chunks(layer, sram_bytes):
        return 1
    channels = -(-layer.dims.k // max(1, part.kk))
    per_channel = layer.weight_bytes / max(1, layer.dims.k)
    budget = WEIGHT_SLICE_SHARE * sram_bytes
    slices = max(1, math.ceil(per_channel * channels / budget))
    while slices < channels and -(-channels // slices) * per_channel > budget:
        slices += 1
    return min(slices, channels)


def runs_in_input_chunks(layer: LayerWork, sram_bytes: int) -> bool:
    """Whether not even one output channel's weights of a sliced layer fit
    ``WEIGHT_SLICE_SHARE`` of SRAM: codegen then runs a tile's part whole, in input-channel
    chunks, reading its input and its weights once and holding its output box
    (``crane.codegen.steps._unsliceable``)."""
    return layer.kind in SLICED_KINDS and layer.weight_bytes / max(1, layer.dims.k) \
        > WEIGHT_SLICE_SHARE * sram_bytes


def refreshes_on_chip(layer: LayerWork, batch: int, machine: Machine) -> bool:
    """Whether a backward phase from saved outputs recomputes the layer's internals, as
    ``LayerWork.refreshes`` says: codegen does so only when its results at the whole
    ``batch``, spread over the tiles, fit the ``HELD_SHARE`` of SRAM a result may hold
    (``crane.codegen.lower._refreshed``, which divides by the layer's own tiles, here the
    mesh's), and stores a bigger layer's internals in forward instead (the saves the
    schedule charges anyway)."""
    return layer.output_bytes * batch / max(1, machine.tiles) <= HELD_SHARE * machine.sram_bytes


def flushes_gradient(layer: LayerWork, part: Partition, machine: Machine) -> bool:
    """Whether a tile's box of the weight gradient is bigger than the ``HELD_SHARE`` of SRAM
    a result may hold: codegen then stores it to DRAM as it is made, and the update reads it
    back (``crane.codegen.emit_training``)."""
    return layer.weight_bytes / max(1, part.kk) > HELD_SHARE * machine.sram_bytes


def flushed_gradient(layer: LayerWork, part: Partition, machine: Machine, hops: float) -> Traffic:
    """The DRAM traffic of a flushed weight gradient (``flushes_gradient``; none else): each
    tile's partial stored as it is made (added in DRAM, which reads it too), the sum read
    back by the update."""
    if not flushes_gradient(layer, part, machine):
        return Traffic()
    partials = layer.weight_bytes * max(1, part.weight_copies)
    return (Traffic.dram_write(partials, hops) + Traffic(dram_bytes=partials - layer.weight_bytes)
            + Traffic.dram_read(layer.weight_bytes, hops))


def compute_pieces(layer: LayerWork, batch: int, part: Partition, sram_bytes: int,
                   backward: bool) -> int:
    """In how many pieces a tile computes its part, each piece's operands arriving while
    the piece before computes (so only the first piece's inputs, the last piece's compute
    and the last piece's results are not hidden): backward, once per training step (its
    activations and their gradients in pieces of ``TRAINING_STEP_SHARE`` of SRAM); forward,
    once per stream step (``stream_steps``) when its weights come in one pass and it needs
    no statistics of the whole batch (those take several passes over the part), else one.
    (Counting a forward part's weight slices as pieces made the scheduler pick, for
    ResNet-18 at batch 1 on ``mbs``, a plan the model put at 275k cycles and the simulator
    at 321k: the program does not overlap one slice's compute with the next slice's load
    as a pipeline would.)"""
    if not backward:
        if input_passes(layer, part, sram_bytes) > 1 or layer.whole_batch:
            return 1
        return stream_steps(layer, batch, part, sram_bytes)
    box = 2 * (layer.input_bytes + layer.output_bytes) * batch / max(1, part.tiles)
    return max(1, math.ceil(box / (TRAINING_STEP_SHARE * sram_bytes)))


def backward_spills(layer: LayerWork, batch: int, part: Partition, machine: Machine,
                    hops: float, streamed: bool) -> Traffic:
    """DRAM traffic a layer's backward adds to one read of each operand, as codegen runs
    it: a tile running its part in steps reads the saved input once more (the gradient ops
    step their boxes differently, so one cannot take another's); and when a tile's box of
    the output is bigger than the ``HELD_SHARE`` of SRAM a result may hold, each inner
    value (``LayerWork.inner_values``) and its gradient are stored as they are made and
    read back by their two readers."""
    traffic = Traffic.dram_read(layer.input_bytes * batch, hops) if streamed else Traffic()
    box = layer.output_bytes * batch / max(1, part.tiles)
    if not layer.inner_values or box <= HELD_SHARE * machine.sram_bytes:
        return traffic
    stored = 2 * layer.inner_values * layer.output_bytes * batch
    return traffic + Traffic.dram_write(stored, hops) + Traffic.dram_read(2 * stored, hops)


def reduced_gradient_bytes(layer: LayerWork, part: Partition) -> int:
    """Bytes of partial weight gradients added over the NoC in backward: every tile sharing
    a weight slice (a split of the batch or the image) makes a partial gradient of it, and
    all but one travel to be added, one vector add per element (codegen's reduce-scatter,
    ``crane.codegen.emit_training``)."""
    return layer.weight_bytes * max(0, part.weight_copies - 1)


def stream_steps(layer: LayerWork, batch: int, part: Partition, sram_bytes: int) -> int:
    """Steps a tile runs its part in: its input and output boxes in pieces of
    ``STREAM_SHARE`` of SRAM (codegen's ``steps.temporal_chunks``; its output box alone
    when it runs in input-channel chunks, which bound the input's)."""
    tiles = max(1, part.tiles)
    inputs = 0 if runs_in_input_chunks(layer, sram_bytes) else layer.input_bytes * input_readers(layer, part)
    boxes = (inputs + layer.output_bytes) * batch / tiles
    return max(1, math.ceil(boxes / (STREAM_SHARE * sram_bytes)))


def weight_spread_cycles(layer: LayerWork, part: Partition, machine: Machine) -> float:
    """Cycles to bring a layer's weights from DRAM to every tile that reads them: the DRAM
    read, then a tree of NoC transfers (depth log2 of the tiles sharing a slice); a big
    slice is loaded in slabs by several tiles whose trees run side by side (as codegen's
    ``Chip.scatter``)."""
    if not layer.weight_bytes:
        return 0.0
    copies = max(1, part.weight_copies)
    load = layer.weight_bytes / machine.dram_bandwidth * machine.frequency_hz
    if copies == 1:
        return load
    piece = layer.weight_bytes / max(1, part.kk)
    slabs = scatter_slabs(copies, piece, copies)
    depth = math.ceil(math.log2(copies))
    return load + depth * piece / slabs / machine.noc_bandwidth * machine.frequency_hz


def scatter_slabs(readers: int, nbytes: float, extent: int) -> int:
    """In how many slabs a box ``readers`` tiles share is fetched by different tiles and
    spread (codegen's ``Chip.scatter``): one per two readers for a box of at least
    ``SCATTER_BYTES`` shared by four or more, else 1 (one fetch, one tree)."""
    if readers < 4 or nbytes < SCATTER_BYTES:
        return 1
    return max(1, min(readers // 2, extent))


def input_readers(layer: LayerWork, part: Partition) -> int:
    """How many tiles read each input element: every output-channel slice of a dense layer
    (convolution, matmul) reads the whole input; a channel-wise layer reads its channels."""
    dense = layer.kind in GEMM_KINDS and layer.dims.c > 1
    return part.input_copies if dense else 1


def working_set_bytes(layer: LayerWork, batch: int, part: Partition, sram_bytes: int,
                      backward: bool = False) -> float:
    """Activation bytes one tile holds for one step of ``batch`` samples under ``part``: its
    output box and its input box (every input channel of its batch and spatial slice),
    which is streamed in pieces of ``STREAM_SHARE`` of SRAM when bigger; backward also holds
    the output gradient and the input gradient. Outputs kept for later states count
    separately (``HELD_SHARE``)."""
    inputs = layer.input_bytes * batch * input_readers(layer, part) / max(1, part.tiles)
    outputs = layer.output_bytes * batch / max(1, part.tiles)
    return (min(inputs, STREAM_SHARE * sram_bytes) + outputs) * (2 if backward else 1)


@lru_cache(maxsize=200_000)
def min_tiles(layer: LayerWork, batch: int, machine: Machine, backward: bool = False) -> int:
    """The fewest tiles whose per-tile working set fits ``WORKING_SET_SHARE`` of SRAM
    (every tile of the machine if none does: codegen then streams the parts in pieces)."""
    limit = WORKING_SET_SHARE * machine.sram_bytes
    dims = layer.dims
    extents = (batch, dims.k, dims.h, dims.w)
    for tiles in range(1, machine.tiles + 1):
        part = preferred_partition(extents, tiles, (dims.c, dims.r, dims.s))
        if working_set_bytes(layer, batch, part, machine.sram_bytes, backward) <= limit:
            return tiles
    return machine.tiles
