"""Tile programs as the timing simulator sees them: instructions with a unit, a duration or a
transfer, an energy, and the earlier instructions they wait for.

:func:`lower_programs` reads every ``tile.program`` of a module once and checks what the
simulation relies on: every send has its recv (same sender, receiver and tag, matched in
program order), every barrier its partners. Problems are located ``DiagnosticError``\\ s.

Units (``queue``): ``compute`` (``tile.compute`` and ``tile.copy``), ``load`` and
``store`` (the DMA engine's read and write channels), ``noc`` (sends and receives),
``sync`` (barriers). Bytes moved are counted at the machine's element width
(``Machine.data_bytes``, what the analytical model counts) unless the config asks for the
IR's element types. Energies use ``crane.cost.traffic.traffic_energy`` on the instruction's
``Traffic``: DMA loads are ``Traffic.dram_read`` over the hops from the port to the tile,
stores ``Traffic.dram_write`` (an accumulating store also reads the DRAM region), a NoC
transfer ``Traffic.on_chip`` over its route (charged once, to the send), compute the MAC
and vector energy plus an SRAM read of every input and a write of every output.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from crane.cost.traffic import Traffic, traffic_energy
from crane.dialects.tile import (
    AllocOp,
    BarrierOp,
    ComputeOp,
    CopyOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.exec.tile_sim.timing_deps import Scoreboard, Span
from crane.exec.tile_sim.timing_flows import Resource, route_links, xy_route
from crane.exec.tile_sim.timing_work import Work, compute_work, numel
from crane.hardware.machine import Machine
from crane.ir.attributes import DenseIntsAttr
from crane.ir.core import Operation, Value
from crane.ir.diagnostics import DiagnosticError
from crane.ir.types import BufferType

EXCLUSIVE = frozenset({"compute", "load", "store"})
"""Units that run one instruction at a time, in program order."""

_VIRTUAL_BASE = 1 << 50
"""Unallocated buffers (offset -1) get private addresses above this."""


@dataclass(slots=True)
class Instr:
    """One instruction of a tile program, ready to simulate."""

    index: int
    op: Operation
    kind: str
    """compute, copy, load, store, send, recv or barrier."""
    queue: str
    label: str
    cycles: float = 0.0
    """Duration of a compute or copy."""
    nbytes: int = 0
    """Bytes of a transfer."""
    resources: tuple[Resource, ...] = ()
    energy_pj: float = 0.0
    deps: tuple[int, ...] = ()
    match: Hashable = None
    """The pairing key of a send/recv or the group key of a barrier."""
    peer: int = -1
    hops: int = 0
    work: Work = field(default_factory=lambda: Work(0, 0))


@dataclass(slots=True)
class TileProgram:
    """The instructions of one tile (``tile.alloc`` left out), in program order."""

    tile: int
    row: int
    col: int
    op: ProgramOp
    instrs: list[Instr]


@dataclass(frozen=True, slots=True)
class Totals:
    """Static figures summed over all instructions."""

    macs: int
    vector_ops: int
    dram_bytes: int
    noc_byte_hops: int
    energy_pj: float


def _error(op: Operation, message: str) -> DiagnosticError:
    return DiagnosticError.at(op.location, message)


class _Lowering:
    """Turns one ``tile.program`` into :class:`Instr` s."""

    def __init__(self, program: ProgramOp, machine: Machine, ir_widths: bool) -> None:
        self.program = program
        self.machine = machine
        self.ir_widths = ir_widths
        self.row, self.col = divmod(program.tile, machine.cols)
        self.spans: dict[Value, Span] = {}
        self.virtual = _VIRTUAL_BASE
        self.board = Scoreboard()
        self.instrs: list[Instr] = []

    def nbytes(self, value: Value) -> int:
        kind = value.type
        if not isinstance(kind, BufferType):
            raise _error(self.program, f"operand {value.type} is not a buffer")
        if self.ir_widths:
            return kind.byte_size
        return numel(kind.shape) * self.machine.data_bytes

    def span(self, value: Value, at: Operation) -> Span:
        found = self.spans.get(value)
        if found is None:
            raise _error(at, "operand is not a tile.alloc buffer of this program")
        return found

    def alloc(self, op: AllocOp) -> None:
        size = op.byte_size
        if op.offset >= 0:
            self.spans[op.buffer] = (op.offset, op.offset + max(1, size))
            return
        self.spans[op.buffer] = (self.virtual, self.virtual + max(1, size))
        self.virtual += size + 64

    def port_hops(self, op: LoadOp | StoreOp) -> int:
        ports = self.machine.dram_ports
        if not ports and op.port == 0:
            return self.row + self.col        # no ports declared: one at tile (0, 0)
        if not 0 <= op.port < len(ports):
            raise _error(op, f"DRAM port {op.port} does not exist (the machine has {len(ports)})")
        where = ports[op.port]
        return abs(where.row - self.row) + abs(where.col - self.col)

    def emit(self, op: Operation, kind: str, queue: str, label: str, reads: Sequence[Value],
             writes: Sequence[Value], write_spans: list[Span] | None = None,
             read_spans: list[Span] | None = None, **fields: object) -> Instr:
        index = len(self.instrs)
        read_spans = read_spans or [self.span(v, op) for v in reads]
        partial = bool(fields.pop("partial", False)) or (isinstance(op, RecvOp) and op.windowed)
        write_spans = write_spans or [self.span(v, op) for v in writes]
        deps = self.board.add(index, queue, read_spans, write_spans, queue in EXCLUSIVE, partial)
        instr = Instr(index, op, kind, queue, label, deps=deps, **fields)  # type: ignore[arg-type]
        self.instrs.append(instr)
        return instr

    def compute(self, op: ComputeOp) -> None:
        outs, ins = op.outputs, op.inputs
        shapes = [tuple(t.shape) for t in op.result_types()]
        try:
            work = compute_work(op.op, shapes, [tuple(t.shape) for t in op.input_types()],
                                op.op_attrs)
        except (KeyError, IndexError, TypeError, ValueError, AssertionError) as problem:
            raise _error(op, f"cannot count the work of compute '{op.op}': {problem}") from None
        written, span = sum(self.nbytes(v) for v in outs), None
        if op.window is not None:
            written, span = self.box_span(outs[0], *op.window, op)
        read = sum(self.nbytes(v) if w is None else self.box_span(v, *w, op)[0]
                   for v, w in zip(ins, op.input_windows, strict=False))
        sram = Traffic(sram_read_bytes=read, sram_write_bytes=written)
        energy = work.energy_pj(self.machine) + traffic_energy(sram, self.machine)
        self.emit(op, "compute", "compute", op.op, ins, outs, cycles=work.cycles(self.machine),
                  energy_pj=energy, work=work, write_spans=[span] if span else None,
                  partial=op.window is not None)

    def shape(self, value: Value) -> tuple[int, ...]:
        kind = value.type
        return tuple(kind.shape) if isinstance(kind, BufferType) else ()

    def copy(self, op: CopyOp) -> None:
        shape_attr = op.attributes.get("shape")
        box = tuple(shape_attr) if isinstance(shape_attr, DenseIntsAttr) else ()
        width = self.nbytes(op.src) // max(1, numel(self.shape(op.src)))
        moved = numel(box) * width
        work = Work(0, numel(box))
        energy = traffic_energy(Traffic(sram_read_bytes=moved, sram_write_bytes=moved), self.machine)
        # A copy into a window of its destination joins one piece of several (the others
        # arrive by windowed receives): a partial write, so the pieces need not queue.
        windowed = box != self.shape(op.dst)
        span = self.box_span(op.dst, op.dst_offsets, box, op)[1] if windowed else None
        self.emit(op, "copy", "compute", "copy", [op.src], [op.dst],
                  cycles=work.cycles(self.machine), energy_pj=energy, work=work,
                  write_spans=[span] if span else None, partial=windowed)

    def dma(self, op: LoadOp | StoreOp) -> None:
        n, hops = self.nbytes(op.buffer), self.port_hops(op)
        resources: tuple[Resource, ...] = (("dram",), ("port", op.port))
        if isinstance(op, LoadOp):
            energy = traffic_energy(Traffic.dram_read(n, hops), self.machine)
            self.emit(op, "load", "load", f"load {op.tensor}", [], [op.buffer], nbytes=n,
                      resources=resources, energy_pj=energy, hops=hops)
            return
        traffic = Traffic.dram_write(n, hops) + (Traffic(dram_bytes=n) if op.accumulate else Traffic())
        verb = "store+=" if op.accumulate else "store"
        self.emit(op, "store", "store", f"{verb} {op.tensor}", [op.buffer], [], nbytes=n,
                  resources=resources, energy_pj=traffic_energy(traffic, self.machine), hops=hops)

    def window(self, op: SendOp | RecvOp) -> tuple[int, Span | None]:
        """Bytes a transfer moves, and the byte range of its window when that is contiguous
        (None: the window's bytes are scattered over the buffer, which then counts whole)."""
        if not op.windowed:
            return self.nbytes(op.buffer), None
        return self.box_span(op.buffer, *op.window, op)

    def box_span(self, buffer: Value, offsets: tuple[int, ...], shape: tuple[int, ...],
                 at: Operation) -> tuple[int, Span | None]:
        """Bytes of a box of ``buffer``, and their byte range when it is contiguous."""
        total, full = self.nbytes(buffer), self.shape(buffer)
        width = total // max(1, numel(full))
        moved = numel(shape) * width
        cut = next((k for k, (n, b) in enumerate(zip(shape, full, strict=False)) if n < b), len(full))
        if any(n != b for n, b in zip(shape[cut + 1:], full[cut + 1:], strict=False)):
            return moved, None
        start = 0
        for o, b in zip(offsets, full, strict=False):
            start = start * b + o
        lo = self.span(buffer, at)[0] + start * width
        return moved, (lo, lo + max(1, moved))

    def transfer(self, op: SendOp | RecvOp) -> None:
        n, span = self.window(op)
        if isinstance(op, RecvOp):
            self.emit(op, "recv", "noc", f"recv <- {op.peer}", [], [op.buffer], nbytes=n,
                      peer=op.peer, write_spans=[span] if span else None)
            return
        route = op.route or xy_route(self.program.tile, op.peer, self.machine.cols)
        links = route_links(route) or (("local", self.program.tile),)
        hops = len(route) - 1
        energy = traffic_energy(Traffic.on_chip(n, hops), self.machine)
        self.emit(op, "send", "noc", f"send -> {op.peer}", [op.buffer], [], nbytes=n,
                  resources=links, energy_pj=energy, peer=op.peer, hops=hops,
                  read_spans=[span] if span else None)

    def barrier(self, op: BarrierOp) -> None:
        index = len(self.instrs)
        deps = self.board.barrier(index)
        self.instrs.append(Instr(index, op, "barrier", "sync", f"barrier {op.barrier_id}",
                                 deps=deps))

    def run(self) -> TileProgram:
        for op in self.program.instructions:
            self.visit(op)
        return TileProgram(self.program.tile, self.row, self.col, self.program, self.instrs)

    def visit(self, op: Operation) -> None:
        if isinstance(op, AllocOp):
            self.alloc(op)
        elif isinstance(op, ComputeOp):
            self.compute(op)
        elif isinstance(op, CopyOp):
            self.copy(op)
        elif isinstance(op, LoadOp | StoreOp):
            self.dma(op)
        elif isinstance(op, SendOp | RecvOp):
            self.transfer(op)
        elif isinstance(op, BarrierOp):
            self.barrier(op)
        else:
            raise _error(op, f"'{op.name}' is not a tile instruction the timing simulator knows")


def programs_of(module: Operation) -> list[ProgramOp]:
    """The ``tile.program`` ops at the top level of ``module``."""
    if not module.regions or not module.regions[0].blocks:
        return []
    return [op for op in module.regions[0].blocks[0].ops if isinstance(op, ProgramOp)]


def lower_programs(module: Operation, machine: Machine, ir_widths: bool = False) -> list[TileProgram]:
    """Every tile program of ``module``, lowered and matched (see the module docstring)."""
    programs = []
    for program in programs_of(module):
        if not 0 <= program.tile < machine.tiles:
            raise _error(program, f"tile {program.tile} is outside the {machine.rows} x "
                                  f"{machine.cols} mesh of '{machine.name}'")
        programs.append(_Lowering(program, machine, ir_widths).run())
    match_transfers(programs)
    match_barriers(programs)
    return programs


def match_transfers(programs: Sequence[TileProgram]) -> None:
    """Pair the k-th send a -> b with tag t with the k-th recv on b from a with tag t."""
    sends: dict[tuple[int, int, int], list[Instr]] = {}
    recvs: dict[tuple[int, int, int], list[Instr]] = {}
    for prog in programs:
        for ins in prog.instrs:
            if ins.kind not in ("send", "recv"):
                continue
            tag = ins.op.tag if isinstance(ins.op, SendOp | RecvOp) else 0
            key = (prog.tile, ins.peer, tag) if ins.kind == "send" else (ins.peer, prog.tile, tag)
            (sends if ins.kind == "send" else recvs).setdefault(key, []).append(ins)
    for key in sorted(sends.keys() | recvs.keys()):
        outgoing, incoming = sends.get(key, []), recvs.get(key, [])
        for k, (s, r) in enumerate(zip(outgoing, incoming, strict=False)):
            if s.nbytes != r.nbytes:
                raise _error(r.op, f"receives {r.nbytes} bytes but the matching send of tile "
                                   f"{key[0]} (tag {key[2]}) sends {s.nbytes}")
            s.match = r.match = (*key, k)
        if len(outgoing) != len(incoming):
            src, dst, label = key
            longer = outgoing if len(outgoing) > len(incoming) else incoming
            extra = longer[min(len(outgoing), len(incoming))]
            what = (f"tile.send from tile {src} to tile {dst} (tag {label}) has no matching "
                    "tile.recv" if longer is outgoing else
                    f"tile.recv on tile {dst} from tile {src} (tag {label}) has no matching "
                    "tile.send")
            raise _error(extra.op, what)


def match_barriers(programs: Sequence[TileProgram]) -> None:
    """The k-th barrier ``id`` of every participant forms one group; lists must agree."""
    present = {prog.tile for prog in programs}
    seen: dict[tuple[int, int], tuple[tuple[int, ...], int, Instr]] = {}
    counts: dict[tuple[int, int], int] = {}
    for prog in programs:
        occurrence: dict[int, int] = {}
        for ins in prog.instrs:
            if not isinstance(ins.op, BarrierOp):
                continue
            bid = ins.op.barrier_id
            k = occurrence.get(bid, 0)
            occurrence[bid] = k + 1
            ins.match = (bid, k)
            members = tuple(sorted(ins.op.tiles))
            missing = [t for t in members if t not in present]
            if missing:
                raise _error(ins.op, f"barrier {bid} waits for tile {missing[0]}, which has no program")
            first = seen.setdefault((bid, k), (members, prog.tile, ins))
            if first[0] != members:
                raise _error(ins.op, f"barrier {bid} lists tiles {list(members)} here but "
                                     f"{list(first[0])} on tile {first[1]}")
            counts[(bid, k)] = counts.get((bid, k), 0) + 1
    for key, (members, _, ins) in seen.items():
        if counts[key] != len(members):
            raise _error(ins.op, f"barrier {key[0]} (occurrence {key[1] + 1}) is reached by "
                                 f"{counts[key]} of its {len(members)} tiles")


def totals(programs: Sequence[TileProgram]) -> Totals:
    """Work, traffic and energy summed over every instruction."""
    macs = vec = dram = hops = 0
    energy = 0.0
    for prog in programs:
        for ins in prog.instrs:
            macs += ins.work.macs
            vec += ins.work.vector_ops
            energy += ins.energy_pj
            if ins.kind in ("load", "store"):
                dram += ins.nbytes
            if ins.kind in ("load", "store", "send"):
                hops += ins.nbytes * ins.hops
    return Totals(macs, vec, dram, hops, energy)
