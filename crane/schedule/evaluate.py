"""Cost of one block's schedule (a ``Plan``) and the ScT/MeT tables it stands for.

This is the reference semantics the MILP encodes linearly (``crane.schedule.formulate``) and
the exhaustive search enumerates; tests hold the three equal. Per state i with workload s_i:

* compute: the sub-batch steps of each tile split (Eq. 18, slowest active layer per step);
* a consumer takes ``max(0, ScT[i][j] - ScT[i-1][m])`` sub-batches straight from its
  producer's tiles when both are active (pipelining, Dep^C); the rest comes from SRAM when
  the producer is fused, else from DRAM (Dep^S, Dep^D);
* a producer stores the sub-batches its consumers do not take directly: in SRAM if fused,
  else in DRAM; block inputs and outputs cross the boundary through DRAM or SRAM;
* latency of the state = max(compute + lead, NoC time + tail, DRAM time + tail): the
  three overlap across the state's steps except for the first step's weights and inputs
  (``lead``, before any compute) and one step's compute (``tail``), as in a pipelined loop
  of load, compute and store; energy adds up.

Inter-layer hop counts use the geometry of the state's first split.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from crane.cost.layer import HELD_SHARE, WEIGHT_SRAM_SHARE
from crane.cost.traffic import Traffic, dram_cycles, noc_time, traffic_energy
from crane.dialects.segment_tables import (
    MeT,
    ScT,
    Tables,
    grid,
    is_active,
    num_states,
)
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.layout import held_path, holders_of, state_layouts, storage_terms
from crane.schedule.options import (
    StateOption,
    block_options,
    edge_path,
    input_reads,
    port_hops,
    sram_hops,
    sram_share,
    state_options,
)


@dataclass(frozen=True, slots=True)
class Plan:
    """A block schedule: sub-batch size, sub-batches per (state, split), fused producers."""

    block: Block
    subbatch: int
    q: int
    mix: tuple[tuple[int, ...], ...]
    """``mix[i][o]``: sub-batches of state i run under the state's split o."""
    fused: tuple[bool, ...]
    workloads: tuple[int, ...] = field(init=False, compare=False, repr=False)
    """Sub-batches of each state (derived from ``mix``)."""
    sct: ScT = field(init=False, compare=False, repr=False)
    """The ScT the workloads induce (derived; evaluation reads it per state and edge)."""

    def __post_init__(self) -> None:
        workloads = tuple(sum(row) for row in self.mix)
        object.__setattr__(self, "workloads", workloads)
        object.__setattr__(self, "sct", _sct(workloads, self.block.n))


@lru_cache(maxsize=65_536)
def _sct(workloads: tuple[int, ...], n: int) -> ScT:
    return ScT.from_workloads(workloads, n)


@dataclass(frozen=True, slots=True)
class BlockCost:
    """Latency, energy and traffic of a block schedule, and its peak storage."""

    latency_cycles: float
    energy_pj: float
    traffic: Traffic
    compute_cycles: float
    peak_sram_bytes: float
    """Activation bytes held in SRAM at a state boundary, whole chip."""
    peak_dram_bytes: float
    feasible: bool

    @classmethod
    def zero(cls) -> BlockCost:
        return cls(0.0, 0.0, Traffic(), 0.0, 0.0, 0.0, True)

    def then(self, other: BlockCost) -> BlockCost:
        """Run ``other`` after this one."""
        return BlockCost(
            self.latency_cycles + other.latency_cycles, self.energy_pj + other.energy_pj,
            self.traffic + other.traffic, self.compute_cycles + other.compute_cycles,
            max(self.peak_sram_bytes, other.peak_sram_bytes),
            max(self.peak_dram_bytes, other.peak_dram_bytes), self.feasible and other.feasible)

    def repeated(self, times: int) -> BlockCost:
        """Run ``times`` times one after another on fresh samples (a group's repetitions):
        time, energy and traffic add up, SRAM is reused, what goes to DRAM accumulates."""
        return BlockCost(
            self.latency_cycles * times, self.energy_pj * times, self.traffic.scaled(times),
            self.compute_cycles * times, self.peak_sram_bytes, self.peak_dram_bytes * times,
            self.feasible)


def held_capacity(machine: Machine) -> float:
    """Bytes of kept outputs one tile may hold (``crane.cost.layer.HELD_SHARE``)."""
    return HELD_SHARE * machine.sram_bytes


def activation_capacity(machine: Machine, reserved: float = 0.0) -> float:
    """SRAM bytes left for inter-layer activations once weights have their share."""
    return machine.tiles * machine.sram_bytes * (1.0 - WEIGHT_SRAM_SHARE) - reserved


def direct_take(sct: ScT, n: int, state: int, src: int, dst: int) -> int:
    """Sub-batches ``dst`` takes from ``src`` inside ``state`` (both active), else 0."""
    if not (is_active(n, state, src) and is_active(n, state, dst)):
        return 0
    prev = sct.values[state - 1][src] if state else 0
    return max(0, sct.values[state][dst] - prev)


class _Tally:
    """A ``Traffic`` summed in place: each term's fields are added in the order
    ``Traffic.__add__`` would add them, so the sums are the same floats, without an object
    per term (state traffic is the scheduler's innermost loop)."""

    __slots__ = ("dram", "hops", "read", "write", "link")

    def __init__(self) -> None:
        self.dram = self.hops = self.read = self.write = self.link = 0.0

    def on_chip(self, nbytes: float, hops: float, share: float = 0.0) -> None:
        """``+ Traffic.on_chip(nbytes, hops, share)``."""
        self.hops += nbytes * hops
        self.read += nbytes
        self.write += nbytes
        self.link += nbytes * share

    def dram_read(self, nbytes: float, hops: float) -> None:
        """``+ Traffic.dram_read(nbytes, hops)``."""
        self.dram += nbytes
        self.hops += nbytes * hops
        self.write += nbytes

    def dram_write(self, nbytes: float, hops: float) -> None:
        """``+ Traffic.dram_write(nbytes, hops)``."""
        self.dram += nbytes
        self.hops += nbytes * hops
        self.read += nbytes

    def add(self, other: Traffic, factor: float = 1.0) -> None:
        """``+ other`` (``factor`` != 1: ``+ other.scaled(factor)``)."""
        if factor == 1.0:
            self.dram += other.dram_bytes
            self.hops += other.noc_byte_hops
            self.read += other.sram_read_bytes
            self.write += other.sram_write_bytes
            self.link += other.noc_link_bytes
            return
        self.dram += other.dram_bytes * factor
        self.hops += other.noc_byte_hops * factor
        self.read += other.sram_read_bytes * factor
        self.write += other.sram_write_bytes * factor
        self.link += other.noc_link_bytes * factor

    def merge(self, other: _Tally) -> None:
        """``+ other`` (a sum of its own, added as one term)."""
        self.dram += other.dram
        self.hops += other.hops
        self.read += other.read
        self.write += other.write
        self.link += other.link

    def traffic(self) -> Traffic:
        return Traffic(self.dram, self.hops, self.read, self.write, self.link)


def _state_traffic(plan: Plan, state: int, opt: StateOption, machine: Machine) -> Traffic:
    """Inter-layer and boundary traffic of one state (Dep^C, Dep^S, Dep^D)."""
    return _state_tally(plan, state, opt, machine).traffic()


def _first_split_tally(plan: Plan, state: int, machine: Machine, backward: bool) -> _Tally:
    """:func:`_state_tally` on the state's first split, from its ``StateLayout``: the same
    terms added to the same fields in the same order (a producer's terms summed on their
    own first, as ``_producer_traffic`` does), so the same floats."""
    block, b, fused = plan.block, plan.subbatch, plan.fused
    layout = state_layouts(block, b, machine, backward)[state]
    assert layout is not None, "a state with sub-batches has options"
    s = plan.workloads[state]
    cur = plan.sct.values[state]
    prev = plan.sct.values[state - 1] if state else None
    total = _Tally()
    dram = hops = read = write = link = 0.0
    for src, dst, ebytes, both, dh, ds, hh, hs, port in layout.edges:
        d = max(0, cur[dst] - (prev[src] if prev is not None else 0)) if both else 0
        if d:
            nbytes = ebytes * b * d
            hops += nbytes * dh
            read += nbytes
            write += nbytes
            link += nbytes * ds
        stored = ebytes * b * (s - d)
        if fused[src]:
            hops += stored * hh
            read += stored
            write += stored
            link += stored * hs
        else:
            dram += stored
            hops += stored * port
            write += stored
    in_sram, out_sram = block.in_from_sram, block.out_to_sram
    for m, (sram_in, dram_in), (ext_out_bytes, dram_out), sh, ss, port, out_bytes, consumers \
            in layout.columns:
        p_dram = p_hops = p_read = p_write = p_link = 0.0
        if in_sram:
            ext_in = sram_in * b * s
            p_hops += ext_in * sh
            p_read += ext_in
            p_write += ext_in
            p_link += ext_in * ss
        if dram_in or not in_sram:
            ext_in = dram_in * b * s
            p_dram += ext_in
            p_hops += ext_in * port
            p_write += ext_in
        ext_out = ext_out_bytes * b * s
        if out_sram:
            p_write += ext_out
        else:
            p_dram += ext_out
            p_hops += ext_out * port
            p_read += ext_out
        if dram_out:
            also = dram_out * b * s
            p_dram += also
            p_hops += also * port
            p_read += also
        if consumers:
            done = prev[m] if prev is not None else 0
            kept = max(s - (max(0, cur[dst] - done) if active else 0)
                       for dst, active in consumers)
            nbytes = out_bytes * b * kept
            if fused[m]:
                p_write += nbytes
            else:
                p_dram += nbytes
                p_hops += nbytes * port
                p_read += nbytes
        dram += p_dram
        hops += p_hops
        read += p_read
        write += p_write
        link += p_link
    total.dram, total.hops, total.read, total.write, total.link = dram, hops, read, write, link
    return total


def _state_tally(plan: Plan, state: int, opt: StateOption, machine: Machine) -> _Tally:
    """:func:`_state_traffic`, still open for more terms."""
    block, b, sct = plan.block, plan.subbatch, plan.sct
    s = plan.workloads[state]
    total = _Tally()
    for e in block.edges:
        if not is_active(block.n, state, e.dst):
            continue
        d = direct_take(sct, block.n, state, e.src, e.dst)
        nbytes = e.bytes * input_reads(opt, e.dst)
        if d:
            total.on_chip(nbytes * b * d, *edge_path(machine, opt, e.src, e.dst))
        stored = nbytes * b * (s - d)
        if plan.fused[e.src]:
            total.on_chip(stored, *held_path(block, b, machine, state, e.src, opt.region(e.dst)))
        else:
            total.dram_read(stored, port_hops(machine, opt, e.dst))
    for m in opt.columns:
        total.merge(_producer_traffic(plan, state, m, opt, machine))
    return total


def _producer_traffic(plan: Plan, state: int, m: int, opt: StateOption,
                      machine: Machine) -> _Tally:
    block, b, s = plan.block, plan.subbatch, plan.workloads[state]
    total = _Tally()
    reads, port = input_reads(opt, m), port_hops(machine, opt, m)
    if block.in_from_sram:
        total.on_chip(block.external_sram_in(m) * reads * b * s, sram_hops(machine, opt, m),
                      sram_share(machine, opt, m))
    from_dram = block.external_dram_in(m) * reads * b * s
    if from_dram or not block.in_from_sram:
        total.dram_read(from_dram, port)
    _store(total, block.external_out[m] * b * s, block.out_to_sram, port)
    if block.dram_out and block.dram_out[m]:
        total.dram_write(block.dram_out[m] * b * s, port)
    consumers = block.consumers(m)
    if consumers:
        kept = max(s - direct_take(plan.sct, block.n, state, m, e.dst) for e in consumers)
        _store(total, block.layers[m].output_bytes * b * kept, plan.fused[m], port)
    return total


def _store(total: _Tally, nbytes: float, on_chip: bool, port_hops: float) -> None:
    """Bytes a column leaves in SRAM (``on_chip``: a write) or in DRAM (through its port)."""
    if on_chip:
        total.write += nbytes
    else:
        total.dram_write(nbytes, port_hops)


def held(plan: Plan, state: int, column: int) -> int:
    """Sub-batches of ``column``'s output not yet consumed inside the block after ``state``."""
    v = plan.sct.values[state]
    consumers = plan.block.consumers(column)
    if not consumers:
        return 0
    return max(v[column] - v[e.dst] for e in consumers)


def held_per_tile(plan: Plan, state: int, machine: Machine, backward: bool = False) -> float:
    """The largest per-tile share of outputs kept on chip after ``state``, over columns
    (each column's kept outputs stay on the tiles that made them)."""
    tiles = holders_of(plan.block, plan.subbatch, machine, backward).tiles[state]
    return _held_bytes(plan, state, tiles)[2]


def storage(plan: Plan, state: int) -> tuple[float, float]:
    """(SRAM, DRAM) activation bytes held at the end of ``state``."""
    sram, dram, _ = _held_bytes(plan, state, (1,) * plan.block.n)
    return sram, dram


def _held_bytes(plan: Plan, state: int, tiles: tuple[int, ...]) -> tuple[float, float, float]:
    """(SRAM, DRAM) activation bytes held at the end of ``state``, and the largest per-tile
    share of those on chip when each column's outputs sit on ``tiles[column]`` tiles."""
    b, v, fused, out_sram = plan.subbatch, plan.sct.values[state], plan.fused, \
        plan.block.out_to_sram
    sram = dram = worst = 0.0
    done = v.__getitem__
    for m, (out_bytes, ext_out, dsts) in enumerate(storage_terms(plan.block)):
        # Held: what the column made and its slowest consumer has not taken yet.
        inner = (v[m] - min(map(done, dsts)) if dsts else 0) * out_bytes * b
        outer = v[m] * ext_out * b
        kept = inner if fused[m] else 0.0
        sram += kept
        dram += 0.0 if fused[m] else inner
        sram += outer if out_sram else 0.0
        dram += 0.0 if out_sram else outer
        kept += outer if out_sram else 0.0
        if kept:
            worst = max(worst, kept / tiles[m])
    return sram, dram, worst


@dataclass(frozen=True, slots=True)
class StateCost:
    """Latency, energy, traffic and compute time of one state of a plan."""

    latency_cycles: float
    """Compute, NoC and DRAM overlap across the state's steps, but not all of it: the
    first compute waits for the weights and the first inputs (``lead``), and transfers
    cannot hide one step's compute (``tail``): max(compute + lead, NoC + tail, DRAM + tail)."""
    energy_pj: float
    traffic: Traffic
    compute_cycles: float


def state_cost(plan: Plan, state: int, machine: Machine, backward: bool = False) -> StateCost:
    """The cost of one state of ``plan`` (zero for a state without sub-batches)."""
    if plan.workloads[state] == 0:
        return StateCost(0.0, 0.0, Traffic(), 0.0)
    opts = state_options(plan.block, state, plan.subbatch, machine, backward)
    return _state_cost(plan, state, machine, backward, opts)


def _state_cost(plan: Plan, state: int, machine: Machine, backward: bool,
                opts: tuple[StateOption, ...]) -> StateCost:
    """:func:`state_cost` of a state with sub-batches, given its options."""
    tally, comp = _first_split_tally(plan, state, machine, backward), 0.0
    energy = traffic_energy(tally.traffic(), machine)
    lead = tail = 0.0
    for opt, count in zip(opts, plan.mix[state], strict=True):
        comp += count * opt.cycles
        # opt.energy_pj already prices the re-streamed weights in opt.traffic.
        energy += count * opt.energy_pj
        tally.add(opt.traffic, count)
        if count:
            tally.add(opt.weight_load)
            energy += traffic_energy(opt.weight_load, machine)
            lead, tail = max(lead, opt.lead), max(tail, opt.tail)
    step = tally.traffic()
    latency = max(comp + lead, noc_time(step, machine.tiles, machine) + tail,
                  dram_cycles(step.dram_bytes, machine) + tail)
    return StateCost(latency, energy, step, comp)


def state_latencies(plan: Plan, machine: Machine, backward: bool = False) -> tuple[float, ...]:
    """Latency of every state of ``plan`` in cycles; they add up to ``evaluate``'s."""
    return tuple(state_cost(plan, i, machine, backward).latency_cycles
                 for i in range(num_states(plan.block.n)))


@lru_cache(maxsize=100_000)
def evaluate(plan: Plan, machine: Machine, sram_reserved: float = 0.0,
             backward: bool = False) -> BlockCost:
    """Latency, energy, traffic and peak storage of a plan (see the module docstring)."""
    block, b = plan.block, plan.subbatch
    options = block_options(block, b, machine, backward)
    holders = holders_of(block, b, machine, backward).tiles
    latency = energy = compute = peak_s = peak_d = worst_held = 0.0
    dram = hops = read = write = link = 0.0
    for i, s in enumerate(plan.workloads):
        if s == 0:
            continue
        cost = _state_cost(plan, i, machine, backward, options[i])
        latency += cost.latency_cycles
        energy += cost.energy_pj
        t = cost.traffic  # summed field by field, as Traffic.__add__ does
        dram, hops, read = dram + t.dram_bytes, hops + t.noc_byte_hops, read + t.sram_read_bytes
        write, link = write + t.sram_write_bytes, link + t.noc_link_bytes
        compute += cost.compute_cycles
        sram, held_dram, held = _held_bytes(plan, i, holders[i])
        peak_s, peak_d, worst_held = max(peak_s, sram), max(peak_d, held_dram), max(worst_held, held)
    feasible = (peak_s <= activation_capacity(machine, sram_reserved)
                and worst_held <= held_capacity(machine))
    return BlockCost(latency, energy, Traffic(dram, hops, read, write, link), compute,
                     peak_s, peak_d, feasible)


def tables_of(plan: Plan, sram_capacity: float | None = None) -> Tables:
    """The ScT and MeT a plan stands for (FIFO ranges of unconsumed outputs)."""
    block, sct = plan.block, plan.sct
    dram_rows: list[list[int]] = []
    sram_rows: list[list[int]] = []
    for i in range(num_states(block.n)):
        row_d, row_s = [], []
        for m in range(block.n):
            done = sct.values[i][m]
            low = done - held(plan, i, m)
            to_dram_outside = block.external_out[m] > 0 and not block.out_to_sram
            to_sram_outside = block.external_out[m] > 0 and block.out_to_sram
            row_s.append(0 if to_sram_outside else (low if plan.fused[m] else done))
            row_d.append(0 if to_dram_outside else (done if plan.fused[m] else low))
        dram_rows.append(row_d)
        sram_rows.append(row_s)
    volumes = tuple(float(layer.output_bytes * plan.subbatch) for layer in block.layers)
    return Tables.uniform(sct, MeT(grid(dram_rows), grid(sram_rows)), block.deps, plan.q,
                          volumes, sram_capacity)
