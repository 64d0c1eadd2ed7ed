"""Event-driven timing simulation of all tile programs of a module.

``simulate(module)`` returns a :class:`TimingReport`: the cycles until the last tile
finishes, the energy, per-tile busy and idle time, and (optionally) a Chrome trace-event
JSON of every tile's activity (``report.write_trace("run.json")``, open it in Perfetto or
``chrome://tracing``; one process per tile, threads for compute, the DMA channels, NoC
lanes and barriers).

The machine model (constants from the module's ``hw.machine``, the ones ``crane.cost``
uses):

* Each tile has a **compute unit** (MAC array and vector unit: ``tile.compute`` and
  ``tile.copy``), a **DMA engine** with a load and a store channel, and a **NoC
  interface**. Each unit takes its instructions in program order (decoupled access and
  execute); a compute unit or DMA channel runs one instruction at a time, while sends and
  receives are posted in order and may be in flight together. ``TimingConfig(in_order=
  True)`` instead issues the whole program in order (an instruction starts no earlier than
  the one before it).
* An instruction starts once the instructions it depends on have completed: the
  **scoreboard** of :mod:`crane.exec.tile_sim.timing_deps`, on SRAM bytes (so a load into
  bytes that an earlier compute still reads waits for it: double buffering avoids that).
* **Compute** takes ``max(MACs / macs_per_cycle, vector ops / vector_lanes)`` cycles
  (:mod:`crane.exec.tile_sim.timing_work`, the cost model's per-step formula).
* **DMA** and **NoC** transfers are flows sharing bandwidth max-min fairly
  (:mod:`crane.exec.tile_sim.timing_flows`): the DRAM's aggregate ``dram_bandwidth``,
  each DRAM port's link (``noc_bandwidth``), and every directed mesh link on a transfer's
  XY route (``noc_bandwidth``). Two transfers on one link or port each get half of it.
  DMA data crossing the mesh between port and tile is charged NoC energy per hop but does
  not take mesh-link bandwidth (the port's link is its narrowest point). There is no
  per-hop latency: times are bandwidth-bound.
* A **send and its recv** rendezvous: the transfer starts when both are posted and both
  complete when its last byte arrives. A **barrier** waits for everything before it on its
  tile and releases all its tiles when the last one arrives; everything after it waits.
* **Energy** is static per instruction (:mod:`crane.exec.tile_sim.timing_program`).

Programs that can never finish (a cycle of waits) raise a located ``DiagnosticError``
naming every stuck tile and the instruction it waits at. Simulation time is proportional
to the number of instructions and transfers (a heap of completion events; no per-cycle
stepping).
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crane.atomic import atomic_output
from crane.cost.traffic import dram_cycles
from crane.dialects.hw import machine_of
from crane.dialects.tile import BarrierOp
from crane.exec.tile_sim.timing_flows import FlowNetwork, Resource
from crane.exec.tile_sim.timing_program import (
    EXCLUSIVE,
    Instr,
    TileProgram,
    Totals,
    lower_programs,
    totals,
)
from crane.exec.tile_sim.timing_trace import TraceBuilder
from crane.hardware.machine import Machine
from crane.ir.core import Operation
from crane.ir.diagnostics import Diagnostic, DiagnosticError, Severity
from crane.ir.verifier import verify

QUEUES = ("compute", "load", "store", "noc", "sync")


@dataclass(frozen=True)
class TimingConfig:
    """Knobs of the machine model (the defaults are what the docstring describes)."""

    in_order: bool = False
    """Issue each tile's whole program in order instead of per unit."""
    ir_widths: bool = False
    """Count bytes at the IR's element types instead of the machine's ``data_bytes``."""
    trace: bool = True
    """Collect Chrome trace events."""


@dataclass(frozen=True, slots=True)
class TileTiming:
    """What one tile did."""

    tile: int
    row: int
    col: int
    instructions: int
    finish_cycles: float
    compute_cycles: float
    load_cycles: float
    store_cycles: float
    noc_cycles: float
    """Time with at least one of the tile's transfers in flight."""
    busy_cycles: float
    """Time with any unit of the tile active."""
    idle_cycles: float
    """Cycles of the whole run with no unit of the tile active."""


@dataclass(frozen=True)
class TimingReport:
    """The result of :func:`simulate`."""

    cycles: float
    energy_pj: float
    tiles: tuple[TileTiming, ...]
    totals: Totals
    frequency_hz: float
    wall_seconds: float
    trace_events: list[dict[str, object]] = field(default_factory=list)
    dram_floor_cycles: float = 0.0
    """The simulated DRAM bytes at the DRAM's full bandwidth (``crane.cost.traffic.dram_cycles``):
    no schedule of this traffic is faster."""
    barriers: tuple[tuple[str, float], ...] = ()
    """(label, release cycle) of every barrier group, in release order (codegen labels
    each phase's closing barrier with its block and state)."""
    barrier_energy: tuple[float, ...] = ()
    """Per entry of ``barriers``: the energy of the instructions the group closes (each of
    its tiles' instructions since that tile's previous barrier)."""

    @property
    def compute_floor_cycles(self) -> float:
        """The busiest tile's compute time: no schedule of this work is faster."""
        return max((t.compute_cycles for t in self.tiles), default=0.0)

    @property
    def seconds(self) -> float:
        return self.cycles / self.frequency_hz

    @property
    def busy(self) -> dict[int, float]:
        """Tile -> cycles with some unit active."""
        return {t.tile: t.busy_cycles for t in self.tiles}

    def summary(self) -> dict[str, float]:
        """The headline figures, with the keys of the ``crane.cost`` report where they match."""
        compute = sum(t.compute_cycles for t in self.tiles)
        return {
            "latency_cycles": self.cycles, "energy_pj": self.energy_pj,
            "dram_bytes": self.totals.dram_bytes, "noc_byte_hops": self.totals.noc_byte_hops,
            "macs": self.totals.macs, "vector_ops": self.totals.vector_ops,
            "compute_utilisation": compute / (self.cycles * len(self.tiles))
            if self.cycles and self.tiles else 0.0,
            "instructions": sum(t.instructions for t in self.tiles),
            "dram_floor_cycles": self.dram_floor_cycles,
            "compute_floor_cycles": self.compute_floor_cycles,
            "simulation_seconds": self.wall_seconds,
        }

    def trace_json(self) -> dict[str, object]:
        return {"traceEvents": self.trace_events, "displayTimeUnit": "ns"}

    def write_trace(self, path: str | Path) -> None:
        """Write the trace JSON atomically (a temporary file renamed into place)."""
        with atomic_output(path) as out:
            json.dump(self.trace_json(), out)


@dataclass(slots=True)
class _Tile:
    """Run-time state of one tile."""

    prog: TileProgram
    done: list[bool]
    start: list[float]
    queues: dict[str, list[int]]
    heads: dict[str, int]
    running: dict[str, int]
    cursor: list[int] = field(default_factory=list)
    """Per instruction: how many of its (sorted) dependences are known complete."""
    next_issue: int = 0
    spans: list[tuple[float, float, str]] = field(default_factory=list)
    """(begin, end, unit) of every completed instruction but barriers."""
    unit_cycles: dict[str, float] = field(default_factory=dict)
    remaining: int = 0


def _tile_state(prog: TileProgram) -> _Tile:
    queues: dict[str, list[int]] = {q: [] for q in QUEUES}
    for ins in prog.instrs:
        queues[ins.queue].append(ins.index)
    n = len(prog.instrs)
    return _Tile(prog, [False] * n, [0.0] * n, queues, dict.fromkeys(QUEUES, 0),
                 dict.fromkeys(QUEUES, -1), cursor=[0] * n, remaining=n)


class _Simulator:
    """The event loop over all tiles."""

    def __init__(self, programs: Sequence[TileProgram], machine: Machine,
                 config: TimingConfig) -> None:
        self.machine = machine
        self.config = config
        self.tiles = {p.tile: _tile_state(p) for p in programs}
        self.now = 0.0
        self.heap: list[tuple[float, int, int, int]] = []
        self.seq = 0
        self.flows = FlowNetwork(_capacities(machine))
        self.flow_owner: dict[Hashable, list[tuple[int, int]]] = {}
        self.posted: dict[Hashable, list[tuple[int, int]]] = {}
        self.arrived: dict[Hashable, list[tuple[int, int]]] = {}
        self.trace = TraceBuilder(machine.frequency_hz) if config.trace else None
        self.work: set[int] = set(self.tiles)
        self.released: list[tuple[str, float]] = []
        self.closing = closed_energy(programs)
        self.released_energy: list[float] = []

    # ----- the loop

    def run(self) -> float:
        while True:
            self.issue_all()
            next_event = self.heap[0][0] if self.heap else math.inf
            next_flow = self.flows.next_finish()
            at = min(next_event, next_flow)
            if at == math.inf:
                break
            self.flows.advance(at)
            self.now = max(self.now, at)
            while self.heap and self.heap[0][0] <= self.now:
                _, _, tile, index = heapq.heappop(self.heap)
                self.complete(tile, index)
            for flow in self.flows.pop_finished():
                for tile, index in self.flow_owner.pop(flow.key):
                    self.complete(tile, index, flow.started)
        self.check_finished()
        return self.now

    def issue_all(self) -> None:
        while self.work:
            tile = self.work.pop()
            self.issue(self.tiles[tile])

    def issue(self, state: _Tile) -> None:
        progress = True
        while progress:
            progress = False
            for queue in (("all",) if self.config.in_order else QUEUES):
                index = self.head(state, queue)
                if index < 0 or not self.ready(state, state.prog.instrs[index]):
                    continue
                self.advance_head(state, queue)
                self.start(state, state.prog.instrs[index])
                progress = True

    def head(self, state: _Tile, queue: str) -> int:
        if queue == "all":
            return state.next_issue if state.next_issue < len(state.prog.instrs) else -1
        pending = state.queues[queue]
        position = state.heads[queue]
        return pending[position] if position < len(pending) else -1

    def advance_head(self, state: _Tile, queue: str) -> None:
        if queue == "all":
            state.next_issue += 1
        else:
            state.heads[queue] += 1

    def ready(self, state: _Tile, ins: Instr) -> bool:
        if ins.queue in EXCLUSIVE and state.running[ins.queue] >= 0:
            return False
        done, deps = state.done, ins.deps
        k = state.cursor[ins.index]
        while k < len(deps) and done[deps[k]]:
            k += 1
        state.cursor[ins.index] = k
        return k == len(deps)

    # ----- starting and completing instructions

    def start(self, state: _Tile, ins: Instr) -> None:
        tile = state.prog.tile
        state.start[ins.index] = self.now
        if ins.queue in EXCLUSIVE:
            state.running[ins.queue] = ins.index
        if ins.kind in ("compute", "copy"):
            self.push(self.now + ins.cycles, tile, ins.index)
        elif ins.kind in ("load", "store"):
            self.start_flow(("dma", tile, ins.index), ins.nbytes, ins.resources,
                            [(tile, ins.index)])
        elif ins.kind in ("send", "recv"):
            self.post(tile, ins)
        else:
            self.arrive(tile, ins)

    def push(self, at: float, tile: int, index: int) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (at, self.seq, tile, index))

    def start_flow(self, key: Hashable, nbytes: int, resources: tuple[Resource, ...],
                   owners: list[tuple[int, int]]) -> None:
        if nbytes <= 0:
            for tile, index in owners:
                self.push(self.now, tile, index)
            return
        self.flows.add(key, nbytes, resources)
        self.flow_owner[key] = owners

    def post(self, tile: int, ins: Instr) -> None:
        waiting = self.posted.setdefault(ins.match, [])
        waiting.append((tile, ins.index))
        if len(waiting) < 2:
            return
        del self.posted[ins.match]
        send = next(self.tiles[t].prog.instrs[i] for t, i in waiting
                    if self.tiles[t].prog.instrs[i].kind == "send")
        self.start_flow(("noc", ins.match), send.nbytes, send.resources, waiting)

    def arrive(self, tile: int, ins: Instr) -> None:
        group = self.arrived.setdefault(ins.match, [])
        group.append((tile, ins.index))
        size = len(ins.op.tiles) if isinstance(ins.op, BarrierOp) else 1
        if len(group) < size:
            return
        del self.arrived[ins.match]
        if isinstance(ins.op, BarrierOp):
            self.released.append((ins.op.label, self.now))
            self.released_energy.append(self.closing.get(ins.match, 0.0))
        for member, index in group:
            self.complete(member, index)

    def complete(self, tile: int, index: int, transfer_start: float | None = None) -> None:
        state = self.tiles[tile]
        ins = state.prog.instrs[index]
        state.done[index] = True
        state.remaining -= 1
        if ins.queue in EXCLUSIVE:
            state.running[ins.queue] = -1
        begin = state.start[index] if transfer_start is None else transfer_start
        if ins.kind != "barrier":
            state.spans.append((begin, self.now, ins.queue))
            state.unit_cycles[ins.queue] = state.unit_cycles.get(ins.queue, 0.0) + self.now - begin
        if self.trace is not None:
            self.trace.instruction(state.prog, ins, state.start[index], begin, self.now)
        self.work.add(tile)

    # ----- the end

    def check_finished(self) -> None:
        stuck = [s for s in self.tiles.values() if s.remaining]
        if not stuck:
            return
        diagnostics = []
        for state in stuck:
            index = next(i for i, d in enumerate(state.done) if not d)
            ins = state.prog.instrs[index]
            diagnostics.append(Diagnostic(
                Severity.ERROR, f"deadlock: tile {state.prog.tile} never completes "
                f"'{ins.op.name}' ({ins.label}), instruction {index} of its program",
                ins.op.location))
        raise DiagnosticError(*diagnostics)

    def tile_timings(self, cycles: float) -> tuple[TileTiming, ...]:
        rows = []
        for tile in sorted(self.tiles):
            state = self.tiles[tile]
            busy = _union_length([(a, b) for a, b, _ in state.spans])
            noc = _union_length([(a, b) for a, b, unit in state.spans if unit == "noc"])
            finish = max((b for _, b, _ in state.spans), default=0.0)
            units = state.unit_cycles
            rows.append(TileTiming(tile, state.prog.row, state.prog.col, len(state.prog.instrs),
                                   finish, units.get("compute", 0.0), units.get("load", 0.0),
                                   units.get("store", 0.0), noc, busy, cycles - busy))
        return tuple(rows)


def _union_length(spans: Sequence[tuple[float, float]]) -> float:
    total, reach = 0.0, -math.inf
    for a, b in sorted(spans):
        if b <= reach:
            continue
        total += b - max(a, reach)
        reach = b
    return total


def _capacities(machine: Machine) -> dict[Resource, float]:
    """Bytes per cycle of the DRAM, each port and each directed mesh link."""
    per_cycle = 1.0 / machine.frequency_hz
    link = machine.noc_bandwidth * per_cycle
    caps: dict[Resource, float] = {("dram",): machine.dram_bandwidth * per_cycle}
    for p in range(max(1, len(machine.dram_ports))):
        caps[("port", p)] = link
    rows, cols = machine.rows, machine.cols
    for t in range(rows * cols):
        r, c = divmod(t, cols)
        caps[("local", t)] = link
        for dr, dc in ((0, 1), (0, -1), (1, 0), (-1, 0)):
            if 0 <= r + dr < rows and 0 <= c + dc < cols:
                caps[("link", t, (r + dr) * cols + c + dc)] = link
    return caps


def closed_energy(programs: Sequence[TileProgram]) -> dict[Hashable, float]:
    """Per barrier group (its ``match`` key): the energy of the instructions it closes,
    each member tile's since its previous barrier."""
    closing: dict[Hashable, float] = {}
    for program in programs:
        since = 0.0
        for ins in program.instrs:
            if ins.kind != "barrier":
                since += ins.energy_pj
                continue
            closing[ins.match] = closing.get(ins.match, 0.0) + since
            since = 0.0
    return closing


def simulate(module: Operation, machine: Machine | None = None,
             config: TimingConfig | None = None, *, check_ir: bool = True) -> TimingReport:
    """Simulate every ``tile.program`` of ``module`` (see the module docstring).

    ``machine`` defaults to the module's ``hw.machine`` (else ``edge``). The module is
    verified first unless ``check_ir`` is false (the caller verified it). Raises a located
    ``DiagnosticError`` for IR that does not verify and programs it cannot run (unmatched
    transfers, deadlock).
    """
    began = time.perf_counter()
    if check_ir:
        problems = verify(module)
        if problems:
            raise DiagnosticError(*problems)
    config = config or TimingConfig()
    machine = machine or machine_of(module) or Machine.edge()
    programs = lower_programs(module, machine, config.ir_widths)
    sim = _Simulator(programs, machine, config)
    cycles = sim.run()
    stats = totals(programs)
    events = sim.trace.finish(programs) if sim.trace is not None else []
    return TimingReport(cycles, stats.energy_pj, sim.tile_timings(cycles), stats,
                        machine.frequency_hz, time.perf_counter() - began, events,
                        dram_cycles(stats.dram_bytes, machine), tuple(sim.released),
                        tuple(sim.released_energy))
