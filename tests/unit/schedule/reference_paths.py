"""The scheduler's cost paths as they were before they were made fast (issue 24), kept as
the reference the fast paths must equal bit for bit (``test_fast_paths.py``).

``state_options`` built every split from the block itself (no view shared between blocks),
a state's traffic was summed as one ``Traffic`` object per term, and a MILP's constraints
were given to HiGHS one call each. ``layer_cost`` priced each region from scratch (no part
shared between regions of one size), and the search's DP built every prefix's full
``BlockCost`` as it went (``search_eager``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import product

import highspy
import numpy as np

from crane.cost.bounds import lower_bounds
from crane.cost.layer import (
    REPLICA_HOPS,
    WorkCost,
    _compute_cycles,
    backward_spills,
    compute_pieces,
    flushed_gradient,
    halo_factor,
    input_passes,
    input_readers,
    min_tiles,
    reduced_gradient_bytes,
    stream_steps,
    weight_spread_cycles,
    weights_fit,
)
from crane.cost.placement import (
    Mesh,
    TileRun,
    _coords,
    dram_hops,
    link_share,
    mean_hops,
    split_regions,
)
from crane.cost.traffic import Traffic, dram_cycles, link_cycles, noc_time, traffic_energy
from crane.cost.utilisation import preferred_partition
from crane.cost.workload import LayerWork, Workload
from crane.dialects.segment_tables import active_columns, is_active, num_states
from crane.hardware.machine import Machine
from crane.schedule.block import Block
from crane.schedule.evaluate import (
    BlockCost,
    Plan,
    StateCost,
    activation_capacity,
    direct_take,
    held,
    held_capacity,
)
from crane.schedule.objective import Objective
from crane.schedule.options import (
    SPLITS,
    StateOption,
    _cycles,
    _transfer_cycles,
    edge_hops,
    edge_share,
    port_hops,
    sram_hops,
    sram_share,
)
from crane.schedule.options import input_reads as input_reads_of
from crane.schedule.search import (
    AFTER_GROUP,
    WHOLE,
    BlockChoice,
    BlockSolver,
    Schedule,
    _block,
    _cross,
    _Cut,
    _moves,
    group_sizes,
)
from crane.solve.milp import Model, new_highs


def layer_cost(layer: LayerWork, batch: int, region: TileRun, machine: Machine,
               backward: bool = False) -> WorkCost:
    """``crane.cost.layer.layer_cost`` as it was: every region priced from scratch."""
    dims = layer.dims
    part = preferred_partition((batch, dims.k, dims.h, dims.w), region.count,
                               (dims.c, dims.r, dims.s))
    macs = (layer.backward_macs if backward else layer.macs) * batch
    reduced = reduced_gradient_bytes(layer, part) if backward else 0
    vec = (layer.backward_vector_ops if backward else layer.vector_ops) * batch \
        + reduced / machine.data_bytes
    cycles = _compute_cycles(macs, vec, part, machine)
    volume = 2 if backward else 1
    readers = input_readers(layer, part)
    copies = layer.input_bytes * batch * max(0, readers - 1)
    spread = 1.0 / max(1, region.count)
    steps = stream_steps(layer, batch, part, machine.sram_bytes)
    operands = Traffic(
        noc_byte_hops=volume * copies * REPLICA_HOPS,
        noc_link_bytes=volume * copies * REPLICA_HOPS * spread,
        sram_read_bytes=volume * (layer.input_bytes * batch * readers
                                  + layer.weight_bytes * part.weight_copies * steps),
        sram_write_bytes=volume * (layer.output_bytes * batch + copies),
    )
    hops = dram_hops(Mesh.of(machine), region)
    weight_load = Traffic.dram_read(layer.weight_bytes, hops) + Traffic.on_chip(
        layer.weight_bytes * max(0, part.weight_copies - 1), REPLICA_HOPS, REPLICA_HOPS * spread)
    energy = (macs * machine.mac_pj / part.utilisation + vec * machine.vector_op_pj
              + traffic_energy(operands, machine))
    if reduced:
        apart = mean_hops(Mesh.of(machine), region, region)
        sums = Traffic.on_chip(reduced, apart, apart / max(1, region.count))
        operands, energy = operands + sums, energy + traffic_energy(sums, machine)
    flushed = flushed_gradient(layer, part, machine, hops) if backward else Traffic()
    reread = backward_spills(layer, batch, part, machine, hops, steps > 1) if backward else Traffic()
    return WorkCost(cycles, energy, operands, part,
                    weights_fit(layer.weight_bytes, part, machine), weight_load,
                    1.0 if backward else
                    input_passes(layer, part, machine.sram_bytes) * halo_factor(layer.dims, part),
                    flushed, reread)


def balanced_split(block: Block, columns: tuple[int, ...], batch: int, tiles: int,
                   machine: Machine, backward: bool = False) -> tuple[int, ...] | None:
    """Greedy min-max tile counts: each column starts with the fewest tiles its working
    set fits (``crane.cost.layer.min_tiles``), each spare tile goes to the currently
    slowest column (the first one on ties), every column's time computed afresh for every
    tile. None when the columns' minimums exceed ``tiles``."""
    if len(columns) == 1:
        return (tiles,)
    layers = tuple(block.layers[c] for c in columns)
    counts = [min_tiles(layer, batch, machine, backward) for layer in layers]
    if sum(counts) > tiles:
        return None
    for _ in range(tiles - sum(counts)):
        times = [_cycles(layer, batch, counts[k], machine, backward)
                 for k, layer in enumerate(layers)]
        counts[times.index(max(times))] += 1
    return tuple(counts)


def flops_split(block: Block, columns: tuple[int, ...], tiles: int, backward: bool = False,
                floors: tuple[int, ...] | None = None) -> tuple[int, ...] | None:
    """Tiles in proportion to work (MACs, or vector ops for MAC-free layers), at least
    ``floors`` (one by default); None when the floors exceed ``tiles``."""
    low = floors or (1,) * len(columns)
    if sum(low) > tiles:
        return None
    work = [_work(block, c, backward) for c in columns]
    total = sum(work) or 1.0
    counts = [max(f, int(tiles * w / total)) for f, w in zip(low, work, strict=True)]
    while sum(counts) > tiles:
        above = [k for k in range(len(counts)) if counts[k] > low[k]]
        counts[max(above, key=lambda k: counts[k])] -= 1
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
    step, load, flushed = Traffic(), Traffic(), Traffic()
    spread = last = 0.0
    reads, steps = [], []
    for column, region in zip(columns, regions, strict=True):
        cost = layer_cost(block.layers[column], batch, region, machine, backward)
        steps.append(1 if backward else compute_pieces(block.layers[column], batch,
                                                       cost.partition, machine.sram_bytes, False))
        last = max(last, cost.cycles / compute_pieces(block.layers[column], batch, cost.partition,
                                                      machine.sram_bytes, backward))
        flushed = flushed + cost.flushed_gradient
        reads.append(cost.input_reads)
        cycles = max(cycles, cost.cycles)
        energy += cost.energy_pj
        step = step + cost.spills
        energy += traffic_energy(cost.spills, machine)
        spread = max(spread, weight_spread_cycles(block.layers[column], cost.partition, machine))
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
    at = {c: r for c, r in zip(columns, regions, strict=True)}
    edges = tuple((e.src, e.dst, mean_hops(mesh, at[e.src], at[e.dst]),
                   link_share(mesh, at[e.src], at[e.dst])) for e in block.edges
                  if e.src in at and e.dst in at)
    weights = max(_transfer_cycles(load, machine), spread if load.dram_bytes else 0.0)
    leaving = block.dram_out if block.out_to_sram else block.external_out
    drain = dram_cycles(sum(leaving[c] * batch / k for c, k in zip(columns, steps, strict=True)
                            if leaving), machine)
    lead = weights + drain + max(
        (_input_cycles(block, c, batch, r, machine) / k
         for c, r, k in zip(columns, regions, steps, strict=True)),
        default=0.0)
    return StateOption(split, columns, regions, cycles, energy, step, load + flushed,
                       tuple(mean_hops(mesh, chip, r) for r in regions),
                       tuple(dram_hops(mesh, r) for r in regions), edges, lead, last,
                       tuple(link_share(mesh, chip, r) for r in regions), tuple(reads))


def _input_cycles(block: Block, column: int, batch: int, region: TileRun, machine: Machine) -> float:
    """One step's inputs from outside the block reaching a column's region: through DRAM,
    or over the region's links when the block's inputs stay on chip."""
    nbytes = block.external_in[column] * batch
    if not nbytes:
        return 0.0
    if not block.in_from_sram:
        return dram_cycles(nbytes, machine)
    from_dram = block.external_dram_in(column) * batch
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
    backward = backward or block.backward
    if len(columns) > budget:
        return ()
    seen: dict[tuple[int, ...], str] = {}
    floors = tuple(min_tiles(block.layers[c], batch, machine, backward) for c in columns)
    for split in splits:
        counts = (balanced_split(block, columns, batch, budget, machine, backward)
                  if split == "balanced" else flops_split(block, columns, budget, backward, floors))
        if counts is not None:
            seen.setdefault(counts, split)
    return tuple(_option(block, split, columns, counts, batch, machine, backward)
                 for counts, split in seen.items())


def _state_traffic(plan: Plan, state: int, opt: StateOption, machine: Machine) -> Traffic:
    """Inter-layer and boundary traffic of one state (Dep^C, Dep^S, Dep^D)."""
    block, b, sct = plan.block, plan.subbatch, plan.sct
    s = plan.workloads[state]
    total = Traffic()
    for e in block.edges:
        if not is_active(block.n, state, e.dst):
            continue
        d = direct_take(sct, block.n, state, e.src, e.dst)
        nbytes = e.bytes * input_reads_of(opt, e.dst)
        if d:
            total = total + Traffic.on_chip(nbytes * b * d, edge_hops(machine, opt, e.src, e.dst),
                                            edge_share(machine, opt, e.src, e.dst))
        stored = nbytes * b * (s - d)
        total = total + (Traffic.on_chip(stored, *held_path(block, b, machine, state, e.src,
                                                            opt.region(e.dst)))
                         if plan.fused[e.src]
                         else Traffic.dram_read(stored, port_hops(machine, opt, e.dst)))
    for m in opt.columns:
        total = total + _producer_traffic(plan, state, m, opt, machine)
    return total


def _producer_traffic(plan: Plan, state: int, m: int, opt: StateOption,
                      machine: Machine) -> Traffic:
    block, b, s = plan.block, plan.subbatch, plan.workloads[state]
    layer = block.layers[m]
    total = Traffic()
    reads = input_reads_of(opt, m)
    if block.in_from_sram:
        total = total + Traffic.on_chip(block.external_sram_in(m) * reads * b * s,
                                        sram_hops(machine, opt, m), sram_share(machine, opt, m))
    from_dram = block.external_dram_in(m) * reads * b * s
    if from_dram or not block.in_from_sram:
        total = total + Traffic.dram_read(from_dram, port_hops(machine, opt, m))
    ext_out = block.external_out[m] * b * s
    total = total + (Traffic(sram_write_bytes=ext_out) if block.out_to_sram
                     else Traffic.dram_write(ext_out, port_hops(machine, opt, m)))
    if block.dram_out and block.dram_out[m]:
        total = total + Traffic.dram_write(block.dram_out[m] * b * s, port_hops(machine, opt, m))
    consumers = block.consumers(m)
    if not consumers:
        return total
    kept = max(s - direct_take(plan.sct, block.n, state, m, e.dst) for e in consumers)
    nbytes = layer.output_bytes * b * kept
    return total + (Traffic(sram_write_bytes=nbytes) if plan.fused[m]
                    else Traffic.dram_write(nbytes, port_hops(machine, opt, m)))


def highs_row_by_row(model: Model, time_limit: float | None = None) -> highspy.Highs:
    """``Model._highs`` as it was: one ``addRow`` call per constraint."""
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    n = model.num_vars
    cost = np.zeros(n)
    for var, coef in model.objective.terms.items():
        cost[var] = coef
    h.addVars(n, np.array(model.lower), np.array(model.upper))
    h.changeColsCost(n, np.arange(n, dtype=np.int32), cost)
    ints = np.array([i for i, flag in enumerate(model.integer) if flag], dtype=np.int32)
    if len(ints):
        kinds = np.full(len(ints), highspy.HighsVarType.kInteger)
        h.changeColsIntegrality(len(ints), ints, kinds)
    for expr, lb, ub, _ in model.rows:
        idx = np.array(list(expr.terms.keys()), dtype=np.int32)
        val = np.array(list(expr.terms.values()), dtype=np.float64)
        h.addRow(lb, ub, len(idx), idx, val)
    return h


def mean_hops_pairwise(mesh: Mesh, src: TileRun, dst: TileRun) -> float:
    """``crane.cost.placement.mean_hops`` as it was: every pair of tiles."""
    a, b = _coords(mesh, src), _coords(mesh, dst)
    diff = np.abs(a[:, None, :] - b[None, :, :]).sum(axis=2)
    return float(diff.mean())


def link_share_routed(mesh: Mesh, src: TileRun, dst: TileRun) -> float:
    """``crane.cost.placement.link_share`` by routing every pair: along the sender's row,
    then along the receiver's column, counting the pairs on each directed link."""
    load: dict[tuple[tuple[int, int], tuple[int, int]], int] = {}
    senders = [(int(r), int(c)) for r, c in _coords(mesh, src)]
    receivers = [(int(r), int(c)) for r, c in _coords(mesh, dst)]
    for r1, c1 in senders:
        for r2, c2 in receivers:
            path = [(r1, c) for c in _walk(c1, c2)] + [(r, c2) for r in _walk(r1, r2)[1:]]
            for hop in zip(path, path[1:], strict=False):
                load[hop] = load.get(hop, 0) + 1
    return max(load.values(), default=0) / (len(senders) * len(receivers))


def _walk(a: int, b: int) -> list[int]:
    step = 1 if b >= a else -1
    return list(range(a, b + step, step))


def state_cost(plan: Plan, state: int, machine: Machine, backward: bool = False) -> StateCost:
    """``crane.schedule.evaluate.state_cost`` as it was: a ``Traffic`` per added term."""
    if plan.workloads[state] == 0:
        return StateCost(0.0, 0.0, Traffic(), 0.0)
    opts = state_options(plan.block, state, plan.subbatch, machine, backward)
    inner = _state_traffic(plan, state, opts[0], machine)
    step, comp = inner, 0.0
    energy = traffic_energy(inner, machine)
    for opt, count in zip(opts, plan.mix[state], strict=True):
        comp += count * opt.cycles
        energy += count * opt.energy_pj
        step = step + opt.traffic.scaled(count)
        if count:
            step = step + opt.weight_load
            energy += traffic_energy(opt.weight_load, machine)
    used = [opt for opt, count in zip(opts, plan.mix[state], strict=True) if count]
    lead = max((opt.lead for opt in used), default=0.0)
    tail = max((opt.tail for opt in used), default=0.0)
    latency = max(comp + lead, noc_time(step, machine.tiles, machine) + tail,
                  dram_cycles(step.dram_bytes, machine) + tail)
    return StateCost(latency, energy, step, comp)


@dataclass(frozen=True, slots=True)
class _Entry:
    latency: float
    energy: float
    cost: BlockCost
    prev: _Entry | None
    choice: BlockChoice | None


def _thin(entries: list[_Entry], size: int) -> list[_Entry]:
    entries.sort(key=lambda e: (e.latency, e.energy))
    front: list[_Entry] = []
    for e in entries:
        if front and e.energy >= front[-1].energy:
            continue
        while len(front) >= 2 and _cross(front[-2], front[-1], e) <= 0:  # type: ignore[arg-type]
            front.pop()
        front.append(e)
    if len(front) <= size:
        return front
    step = (len(front) - 1) / (size - 1)
    return [front[round(k * step)] for k in range(size)]


def search_eager(workload: Workload, batch: int, machine: Machine, solver: BlockSolver,
                 objective: Objective, policy: str, max_block: int = 4,
                 front_size: int = 256, grouped: bool = False,
                 group_solver: BlockSolver | None = None) -> Schedule:
    """``crane.schedule.search.search`` as it was (one worker): every prefix entry carried
    its full ``BlockCost``, and every (plan, prefix) pair built its own ``BlockChoice``."""
    n = len(workload)
    groups = group_sizes(batch) if grouped else ()
    in_group = group_solver or solver
    fronts: list[dict[_Cut, list[_Entry]]] = [{} for _ in range(n + 1)]
    fronts[0] = {_Cut(WHOLE): [_Entry(0.0, 0.0, BlockCost.zero(), None, None)]}
    for stop in range(1, n + 1):
        candidates: dict[_Cut, list[_Entry]] = {}
        for start in range(max(0, stop - max_block), stop):
            for move, (cut, entries) in product(
                    _moves(workload, start, stop, batch, machine, groups), fronts[start].items()):
                if cut.mode != move.source or not entries:
                    continue
                if move.target == AFTER_GROUP and not cut.may_leave(stop):
                    continue
                block, reserved = _block(workload, start, stop, move, cut.left)
                repeat = batch // move.samples
                solve = solver if move.samples == batch else in_group
                found = solve(block, move.samples, machine, objective, reserved)
                key = cut.after(workload, start, stop, move)
                for plan, cost in found:
                    for e in entries:
                        choice = BlockChoice(start, stop, plan, cost.repeated(repeat), repeat,
                                             move.opens)
                        c = choice.cost
                        candidates.setdefault(key, []).append(_Entry(
                            e.latency + c.latency_cycles, e.energy + c.energy_pj,
                            e.cost.then(c), e, choice))
        fronts[stop] = {mode: _thin(found, front_size) for mode, found in candidates.items()}
    final = [e for entries in fronts[n].values() for e in entries]
    best = min(final, key=lambda e: objective(e.latency, e.energy))
    chosen: list[BlockChoice] = []
    entry: _Entry | None = best
    while entry is not None and entry.choice is not None:
        chosen.append(entry.choice)
        entry = entry.prev
    return Schedule(workload.name, batch, policy, tuple(reversed(chosen)), best.cost,
                    lower_bounds(workload, batch, machine), 0.0)


def anonymous_positional(block: Block) -> Block:
    """``crane.schedule.search._anonymous`` as it was: layers named by position."""
    layers = tuple(replace(layer, name=f"#{i}", inputs=tuple(("", b) for _, b in layer.inputs))
                   for i, layer in enumerate(block.layers))
    return replace(block, name="", layers=layers)


def storage(plan: Plan, state: int) -> tuple[float, float]:
    """``crane.schedule.evaluate.storage`` as it was: ``held`` per column."""
    block, b = plan.block, plan.subbatch
    sram = dram = 0.0
    for m, layer in enumerate(block.layers):
        inner = held(plan, state, m) * layer.output_bytes * b
        outer = plan.sct.values[state][m] * block.external_out[m] * b
        sram += inner if plan.fused[m] else 0.0
        dram += 0.0 if plan.fused[m] else inner
        sram += outer if block.out_to_sram else 0.0
        dram += 0.0 if block.out_to_sram else outer
    return sram, dram


def held_per_tile(plan: Plan, state: int, machine: Machine, backward: bool = False) -> float:
    """``crane.schedule.evaluate.held_per_tile`` as it was: ``held`` per column."""
    block, b = plan.block, plan.subbatch
    worst = 0.0
    for m, layer in enumerate(block.layers):
        kept = held(plan, state, m) * layer.output_bytes * b if plan.fused[m] else 0.0
        if block.out_to_sram:
            kept += plan.sct.values[state][m] * block.external_out[m] * b
        if kept:
            worst = max(worst, kept / holding_tiles(block, b, machine, state, m, backward))
    return worst


def evaluate(plan: Plan, machine: Machine, sram_reserved: float = 0.0,
             backward: bool = False) -> BlockCost:
    """``crane.schedule.evaluate.evaluate`` as it was: ``state_cost``, ``storage`` and
    ``held_per_tile`` state by state, traffic summed as ``Traffic`` objects."""
    latency = energy = compute = peak_s = peak_d = 0.0
    traffic = Traffic()
    states = range(num_states(plan.block.n))
    for i in states:
        if plan.workloads[i] == 0:
            continue
        cost = state_cost(plan, i, machine, backward)
        latency += cost.latency_cycles
        energy += cost.energy_pj
        traffic = traffic + cost.traffic
        compute += cost.compute_cycles
        sram, dram = storage(plan, i)
        peak_s, peak_d = max(peak_s, sram), max(peak_d, dram)
    feasible = (peak_s <= activation_capacity(machine, sram_reserved)
                and all(held_per_tile(plan, i, machine, backward) <= held_capacity(machine)
                        for i in states if plan.workloads[i]))
    return BlockCost(latency, energy, traffic, compute, peak_s, peak_d, feasible)


def holding_tiles(block: Block, subbatch: int, machine: Machine, state: int, column: int,
                  backward: bool = False) -> int:
    """``crane.schedule.evaluate.holding_tiles`` as it was: a scan back over the states."""
    for i in range(state, -1, -1):
        if not is_active(block.n, i, column):
            continue
        options = state_options(block, i, subbatch, machine, backward)
        counts = [o.region(column).count for o in options if column in o.columns]
        if counts:
            return max(1, min(counts))
    return machine.tiles


def held_path(block: Block, subbatch: int, machine: Machine, state: int, column: int,
              reader: TileRun, backward: bool = False) -> tuple[float, float]:
    """``crane.schedule.evaluate.held_path`` as it was: a scan back over the states."""
    mesh = Mesh.of(machine)
    for i in range(state, -1, -1):
        if not is_active(block.n, i, column):
            continue
        options = state_options(block, i, subbatch, machine, backward)
        if options and column in options[0].columns:
            holder = options[0].region(column)
            return mean_hops(mesh, holder, reader), link_share(mesh, holder, reader)
    chip = TileRun(0, machine.tiles)
    return mean_hops(mesh, chip, reader), link_share(mesh, chip, reader)
