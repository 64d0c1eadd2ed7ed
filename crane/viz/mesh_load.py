"""What a run puts on the mesh: SRAM per tile, bytes per directed NoC link and per DRAM port.

Two sources, the more concrete first:

* **tile programs** (after ``lower-to-tile`` / ``codegen``): SRAM of a tile is the highest
  byte its buffers occupy (``offset + bytes`` of its ``tile.alloc`` ops, the ``alloc``
  pass's peak), or, before ``alloc``, the most bytes its buffers keep live at one
  instruction (``crane.alloc.liveness``). Traffic: each ``tile.send`` moves its buffer along
  its ``route`` or the dimension-ordered (XY) route to its peer; each ``tile.load`` moves
  its buffer from the tile next to its DRAM port to the tile, each ``tile.store`` back (XY).
  Bytes are the buffers' SRAM sizes.
* **a mapped schedule** (after ``map``): per block and state, the placement problem
  (``crane.mapping.from_schedule``): every tile keeps the column's resident weights plus an
  even share of the held activations; producer-to-consumer flows are all-to-all between
  the two tile sets (each pair carries an equal share along its XY route); a column's DRAM
  reads (weights, block inputs) and writes (block outputs, spills) are spread evenly over
  its tiles, each tile's to and from the DRAM port nearest to it. SRAM is the worst state.

Routes follow the timing simulator's (``crane.exec.tile_sim.timing_flows.xy_route``): along
the row first, then the column. The simulator charges DMA to the ports alone; here it is
also drawn over the mesh links between port and tile, as the cost model counts its hops.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from crane.alloc.liveness import live_ranges, peak_pressure
from crane.alloc.programs import program_buffers
from crane.cost.workload import Workload
from crane.dialects.segment import BlockOp
from crane.dialects.tile import AllocOp, LoadOp, ProgramOp, StoreOp
from crane.dialects.tile_sync import SendOp
from crane.exec.tile_sim.timing_flows import xy_route
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr, IntAttr
from crane.ir.core import Operation, Value
from crane.mapping.from_schedule import problem_of
from crane.schedule.block import Block
from crane.schedule.record import block_of
from crane.viz.source import PictureError, machine, programs, schedules, workloads

Link = tuple[int, int]
"""A directed mesh link: (from tile, to tile), neighbours."""


@dataclass(frozen=True, slots=True)
class MeshLoad:
    """Per-tile SRAM and per-link / per-port traffic of a module, and where they came from."""

    machine: Machine
    sram: tuple[float, ...]
    """Bytes per tile id (row * cols + col)."""
    links: dict[Link, float]
    """Bytes over each directed link that carries any."""
    ports: tuple[float, ...]
    """Bytes through each DRAM port (index into ``machine.dram_ports``)."""
    source: str
    """``tile programs`` or ``mapped schedule``."""
    sram_measure: str
    """How SRAM was measured (allocated peak, live-bytes peak, or placement estimate)."""


def port_tile(target: Machine, port: int) -> int:
    """The tile a DRAM port attaches to (tile 0 when the machine declares none)."""
    ports = target.dram_ports
    if not 0 <= port < len(ports):
        return 0
    return ports[port].row * target.cols + ports[port].col


def _add_route(links: dict[Link, float], route: Sequence[int], nbytes: float) -> None:
    for a, b in zip(route, route[1:], strict=False):
        links[(a, b)] += nbytes


def _buffer_bytes(value: Value) -> int:
    owner = value.owner_op
    return owner.byte_size if isinstance(owner, AllocOp) else 0


def _program_sram(program: ProgramOp) -> tuple[float, bool]:
    """(bytes, allocated): the allocated peak, else the peak of live bytes."""
    allocs = [op for op in program.instructions if isinstance(op, AllocOp)]
    placed = [op.offset + op.byte_size for op in allocs if op.offset >= 0]
    if allocs and len(placed) == len(allocs):
        return float(max(placed)), True
    buffers = program_buffers(program)
    if not buffers.requests:
        return 0.0, True
    ranges = live_ranges(buffers.requests, buffers.compute_steps, double_buffer=False)
    return float(peak_pressure([r.nbytes for r in buffers.requests], ranges).nbytes), False


def _program_traffic(program: ProgramOp, target: Machine, links: dict[Link, float],
                     ports: list[float]) -> None:
    tile = program.tile
    for op in program.instructions:
        if isinstance(op, SendOp):
            nbytes = _buffer_bytes(op.buffer)
            _add_route(links, op.route or xy_route(tile, op.peer, target.cols), nbytes)
        elif isinstance(op, LoadOp | StoreOp):
            nbytes = _buffer_bytes(op.buffer)
            if 0 <= op.port < len(ports):
                ports[op.port] += nbytes
            at = port_tile(target, op.port)
            route = xy_route(at, tile, target.cols) if isinstance(op, LoadOp) \
                else xy_route(tile, at, target.cols)
            _add_route(links, route, nbytes)


def from_programs(found: Sequence[ProgramOp], target: Machine) -> MeshLoad:
    """The load the tile programs put on the mesh (see the module docstring)."""
    sram = [0.0] * target.tiles
    links: dict[Link, float] = defaultdict(float)
    ports = [0.0] * max(1, len(target.dram_ports))
    allocated = True
    for program in found:
        nbytes, done = _program_sram(program)
        if 0 <= program.tile < target.tiles:
            sram[program.tile] = nbytes
        allocated &= done
        _program_traffic(program, target, links, ports)
    measure = ("peak allocated byte per tile (alloc offsets)" if allocated
               else "peak live buffer bytes per tile (not allocated yet)")
    return MeshLoad(target, tuple(sram), dict(links), tuple(ports), "tile programs", measure)


def _int(op: Operation, name: str) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else 0


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def dram_split(block: Block, state_subbatches: int, subbatch: int, fused: Sequence[int],
               column: int) -> tuple[int, int]:
    """(read, written) DRAM bytes of one placed column in one state: its weights and block
    inputs are read, its block outputs and (unless fused) its spilled outputs written. They
    add up to ``crane.mapping.from_schedule``'s per-column DRAM bytes."""
    layer = block.layers[column]
    samples = subbatch * state_subbatches
    spilled = 0 if column < len(fused) and fused[column] else layer.output_bytes
    return (layer.weight_bytes + samples * block.external_in[column],
            samples * (block.external_out[column] + spilled))


def _spread(links: dict[Link, float], sources: Sequence[int], sinks: Sequence[int],
            nbytes: float, cols: int) -> None:
    """``nbytes`` all-to-all from ``sources`` to ``sinks``, equal shares, XY routes."""
    if not sources or not sinks or nbytes <= 0:
        return
    share = nbytes / (len(sources) * len(sinks))
    for a in sources:
        for b in sinks:
            _add_route(links, xy_route(a, b, cols), share)


def _block_load(op: BlockOp, target: Machine, workload: Workload | None,
                sram: list[float], links: dict[Link, float], ports: list[float]) -> None:
    mapping = op.mapping()
    block = block_of(workload, op.layer_names)
    if mapping is None or block is None:
        return
    problem = problem_of(op, target, workload)
    n, fused = problem.columns, _ints(op, "fused")
    for i in range(problem.states):
        placement = [mapping[0][i * n + j] for j in range(n)]
        used = [problem.held[i]] * target.tiles
        for j in problem.placed_columns(i):
            for t in placement[j]:
                used[t] += problem.sram_need[i][j]
        for t, nbytes in enumerate(used):
            sram[t] = max(sram[t], float(nbytes))
        for flow in problem.flows[i]:
            _spread(links, placement[flow.src], placement[flow.dst], flow.bytes, target.cols)
        for j in problem.placed_columns(i):
            read, written = dram_split(block, problem.workloads[i], _int(op, "subbatch"),
                                       fused, j)
            _dram_flows(target, placement[j], read, written, links, ports)


def _dram_flows(target: Machine, tiles: Sequence[int], read: float, written: float,
                links: dict[Link, float], ports: list[float]) -> None:
    """A column's DRAM bytes spread evenly over its tiles, each tile's through the port
    nearest to it (``Machine.nearest_port``, as codegen emits its loads and stores)."""
    for t in tiles:
        port = target.nearest_port(t)
        ports[port] += (read + written) / len(tiles)
        at = [port_tile(target, port)]
        _spread(links, at, [t], read / len(tiles), target.cols)
        _spread(links, [t], at, written / len(tiles), target.cols)


def from_schedules(module: Operation, target: Machine) -> MeshLoad:
    """The load a mapped schedule puts on the mesh (see the module docstring)."""
    sram = [0.0] * target.tiles
    links: dict[Link, float] = defaultdict(float)
    ports = [0.0] * max(1, len(target.dram_ports))
    loads = workloads(module, target)
    for schedule in schedules(module):
        workload = loads.get(schedule.func_name)
        for op in schedule.blocks:
            if op.mapping() is None:
                raise PictureError(f"block '{op.label}' of @{schedule.func_name} is not "
                                   "placed: add the 'map' pass to the pipeline")
            if block_of(workload, op.layer_names) is None:
                raise PictureError(f"cannot size the traffic of block '{op.label}': its "
                                   f"layers are not those of @{schedule.func_name}")
            _block_load(op, target, workload, sram, links, ports)
    return MeshLoad(target, tuple(sram), dict(links), tuple(ports), "mapped schedule",
                    "resident weights + held activations, worst state (placement estimate)")


def mesh_load(module: Operation) -> MeshLoad:
    """The mesh load from the tile programs if any, else from the mapped schedules."""
    target = machine(module)
    found = programs(module)
    if found:
        return from_programs(found, target)
    if not schedules(module):
        raise PictureError("the mesh picture needs placed work: add 'segment,map' (or "
                           "'lower-to-tile' for tile programs) to the pipeline")
    return from_schedules(module, target)
