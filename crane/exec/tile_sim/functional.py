"""The functional tile simulator: run every ``tile.program`` of a module with numpy.

    dram = run_programs(module)                  # final DRAM tensors by name
    dram = run_programs(module, inputs={"x": x}, weights={"w": w}, seed=3)

DRAM starts as the reference interpreter would see the graph: inputs drawn from ``seed``
by argument name (``crane.exec.interpreter.random_input``), weights from their name
(``init_weight``), optimizer state and every other tensor zero; ``inputs``/``weights``
override by name. Each tile's SRAM is modelled by :mod:`crane.exec.tile_sim.memory`
(unallocated buffers are separate arrays, allocated ones views into a byte arena).

Tiles run round-robin, each as far as it can go. ``tile.send``/``tile.recv`` are
rendezvous: a send of tile ``a`` to ``b`` with tag ``t`` and the recv of ``b`` from ``a``
with tag ``t`` complete together, when both tiles have reached them. A barrier completes
when every listed tile stands at a barrier with its ``id``. ``tile.compute`` evaluates the
graph op with :func:`crane.exec.evaluate.evaluate` (the interpreter's kernels). When no tile
can move and some are unfinished, the run stops with a deadlock error at the first blocked
instruction and a note at every blocked tile's instruction saying what it waits for.
Every error is a located :class:`~crane.exec.tile_sim.memory.SimulationError`.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from crane.dialects.graph import FuncOp, NamedTensorOp
from crane.dialects.graph_batch import rebatched
from crane.dialects.graph_grad import is_training_step
from crane.dialects.hw import machine_of
from crane.dialects.tile import (
    AllocOp,
    BarrierOp,
    ComputeOp,
    CopyOp,
    DramOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.exec.evaluate import EvalError, evaluate
from crane.exec.interpreter import init_weight, random_input
from crane.exec.tile_sim.liveness import accesses, last_uses
from crane.exec.tile_sim.memory import (
    Array,
    SimulationError,
    Sram,
    box,
    check_box,
    describe,
    fail,
    numpy_dtype,
)
from crane.ir.attributes import IntAttr
from crane.ir.core import Operation, Value
from crane.ir.types import BufferType, TensorType
from crane.ir.verifier import verify

Dram = dict[str, Array]

_KERNEL_ERRORS = (ValueError, IndexError, KeyError, TypeError, AssertionError, FloatingPointError)


def module_ops(module: Operation) -> list[Operation]:
    """The top-level ops of a module (empty if it has no body)."""
    if not module.regions or not module.regions[0].blocks:
        return []
    return list(module.regions[0].blocks[0].ops)


def _scheduled_batch(ops: list[Operation], func: str | None) -> int | None:
    """The batch of the ``segment.schedule`` of ``func`` (None: there is none)."""
    for op in ops:
        if op.name != "segment.schedule" or getattr(op.attributes.get("func"), "root", None) != func:
            continue
        attr = op.attributes.get("batch")
        return attr.value if isinstance(attr, IntAttr) else None
    return None


def graph_func(module: Operation, name: str | None = None) -> FuncOp | None:
    """The ``graph.func`` the programs were lowered from: ``name``, else the one a
    ``segment.schedule`` names, else the first. When its schedule ran a larger batch than
    the func was elaborated at (``segment{batch=N}``), a copy at the schedule's batch, as
    codegen lowered it (:func:`crane.dialects.graph_batch.rebatched`)."""
    ops = module_ops(module)
    scheduled = [getattr(op.attributes.get("func"), "root", None) for op in ops if op.name == "segment.schedule"]
    wanted = name if name is not None else next((s for s in scheduled if s), None)
    funcs = [op for op in ops if isinstance(op, FuncOp)]
    func = next((f for f in funcs if wanted is None
                 or getattr(f.attributes.get("sym_name"), "value", None) == wanted), None)
    if func is None:
        return None
    batch = _scheduled_batch(ops, getattr(func.attributes.get("sym_name"), "value", None))
    if batch is None:
        return func
    return rebatched(func, batch) or func


def _seeded_input(tensor: DramOp, func: FuncOp | None, seed: int) -> Array:
    for arg in func.body.args if func is not None else ():
        if arg.name_hint == tensor.tensor_name:
            return random_input(arg, np.float32, seed)
    if not tensor.element.is_float:
        return np.zeros(tensor.shape, np.int64)
    rng = np.random.default_rng([seed, zlib.crc32(f"input:{tensor.tensor_name}".encode())])
    return rng.standard_normal(tensor.shape).astype(np.float32)


def _initial(tensor: DramOp, given: Mapping[str, Array], func: FuncOp | None, seed: int) -> Array:
    dtype = numpy_dtype(tensor.element)
    value = given.get(tensor.tensor_name)
    if value is not None:
        array = np.asarray(value)
        if tuple(array.shape) != tensor.shape:
            raise fail(tensor, f"is given an array of shape {list(array.shape)}, expected {list(tensor.shape)}")
        return array.astype(dtype)
    if tensor.role == "input":
        return _seeded_input(tensor, func, seed).astype(dtype)
    if tensor.role == "weight":
        return init_weight(tensor.tensor_name, tensor.shape, np.float32, seed).astype(dtype)
    return np.zeros(tensor.shape, dtype)


def graph_shapes(func: FuncOp | None) -> dict[str, tuple[int, ...]]:
    """The shapes of the func's named tensors (arguments, weights, optimizer state)."""
    if func is None:
        return {}
    named: dict[str, tuple[int, ...]] = {}
    for arg in func.body.args:
        if arg.name_hint and isinstance(arg.type, TensorType):
            named[arg.name_hint] = arg.type.shape
    for op in func.body.ops:
        ttype = op.results[0].type if isinstance(op, NamedTensorOp) else None
        if isinstance(op, NamedTensorOp) and isinstance(ttype, TensorType):
            named[op.tensor_name] = ttype.shape
    return named


def _check_shapes(tensors: list[DramOp], func: FuncOp | None) -> None:
    """A DRAM tensor named like a tensor of the graph has its shape (before any of them is
    filled: a mistyped shape could otherwise ask for gigabytes of random numbers)."""
    named = graph_shapes(func)
    for tensor in tensors:
        shape = named.get(tensor.tensor_name)
        if shape is not None and shape != tensor.shape:
            raise fail(tensor, f"declares '{tensor.tensor_name}' with shape {list(tensor.shape)}, "
                               f"but the graph.func's tensor of that name is {list(shape)}")


def initial_dram(module: Operation, inputs: Mapping[str, Array] | None = None,
                 weights: Mapping[str, Array] | None = None, seed: int = 0) -> Dram:
    """Every ``tile.dram`` tensor's starting contents (see the module docstring)."""
    given = {**(weights or {}), **(inputs or {})}
    func = graph_func(module)
    tensors = [t for t in module_ops(module) if isinstance(t, DramOp)]
    _check_shapes(tensors, func)
    dram = {t.tensor_name: _initial(t, given, func, seed) for t in tensors}
    unknown = sorted(set(given) - set(dram))
    if unknown:
        raise fail(None, f"no tile.dram tensor named '{unknown[0]}' to initialise")
    return dram


@dataclass
class _Tile:
    program: ProgramOp
    ops: list[Operation]
    sram: Sram
    pc: int = 0
    dead_after: dict[int, list[Value]] = field(default_factory=dict)
    """Instruction index -> the buffers no later instruction of this tile uses."""

    def advance(self) -> None:
        """Move past the current instruction, releasing the buffers it used last (so a run
        holds the live buffers, not every buffer the program ever made)."""
        self.sram.release(self.dead_after.get(self.pc, ()))
        self.pc += 1

    @property
    def done(self) -> bool:
        return self.pc >= len(self.ops)

    @property
    def current(self) -> Operation | None:
        return None if self.done else self.ops[self.pc]


@dataclass
class Counters:
    """What a run did: instructions executed, bytes moved over DMA and the NoC."""

    instructions: int = 0
    dma_bytes: int = 0
    noc_bytes: int = 0
    rounds: int = 0


@dataclass
class _Run:
    dram: Dram
    tiles: dict[int, _Tile]
    seed: int
    training: bool
    counters: Counters = field(default_factory=Counters)
    accesses_left: dict[str, int] = field(default_factory=dict)
    """Releasable DRAM tensor -> the loads and stores of it not yet executed."""

    # ----- scheduling

    def run(self) -> None:
        order = sorted(self.tiles)
        while True:
            self.counters.rounds += 1
            moved = False
            for tile in order:
                state = self.tiles[tile]
                while not state.done and self.step(state):
                    moved = True
            if all(t.done for t in self.tiles.values()):
                return
            if not moved:
                raise self.deadlock()

    def step(self, state: _Tile) -> bool:
        """Execute the current instruction of ``state`` if it can; False when blocked."""
        op = state.current
        assert op is not None
        if isinstance(op, SendOp | RecvOp):
            return self.transfer(state, op)
        if isinstance(op, BarrierOp):
            return self.barrier(op)
        self.execute(state, op)
        state.advance()
        self.counters.instructions += 1
        return True

    def peer(self, op: SendOp | RecvOp | BarrierOp, tile: int) -> _Tile:
        found = self.tiles.get(tile)
        if found is None:
            raise fail(op, f"involves tile {tile}, which has no tile.program")
        return found

    def transfer(self, state: _Tile, op: SendOp | RecvOp) -> bool:
        other = self.peer(op, op.peer)
        match = other.current
        wanted = RecvOp if isinstance(op, SendOp) else SendOp
        if not isinstance(match, wanted) or match.peer != state.program.tile or match.tag != op.tag:
            return False
        send, recv = (op, match) if isinstance(op, SendOp) else (match, op)
        src, dst = (state, other) if isinstance(op, SendOp) else (other, state)
        (s_at, s_shape), (r_at, r_shape) = send.window, recv.window
        if s_shape != r_shape or _buffer(send).element != _buffer(recv).element:
            raise fail(recv, f"receives {_moved(recv)} but tile {src.program.tile} sends "
                             f"{_moved(send)} (tag {op.tag})", ("the send is here", send))
        data = src.sram.read(send.buffer, send)
        check_box(send, f"window of {describe(send.buffer)}", s_at, s_shape, tuple(data.shape))
        target = dst.sram.target(recv.buffer, recv)
        check_box(recv, f"window of {describe(recv.buffer)}", r_at, r_shape, tuple(target.shape))
        target[box(r_at, r_shape)] = data[box(s_at, s_shape)]
        dst.sram.wrote(recv.buffer, recv)
        state.advance()
        other.advance()
        self.counters.instructions += 2
        self.counters.noc_bytes += int(np.prod(s_shape, dtype=np.int64)) * np.dtype(
            numpy_dtype(_buffer(send).element)).itemsize
        return True

    def barrier(self, op: BarrierOp) -> bool:
        waiting = [self.peer(op, t) for t in op.tiles]
        if not all(isinstance(t.current, BarrierOp) and t.current.barrier_id == op.barrier_id for t in waiting):
            return False
        for t in waiting:
            other = t.current
            assert isinstance(other, BarrierOp)
            if other.tiles != op.tiles:
                raise fail(other, f"lists tiles {list(other.tiles)} for barrier {op.barrier_id}, "
                                  f"but another tile lists {list(op.tiles)}", ("the other barrier is here", op))
        for t in waiting:
            t.advance()
        self.counters.instructions += len(waiting)
        return True

    def deadlock(self) -> SimulationError:
        blocked = [t for t in (self.tiles[k] for k in sorted(self.tiles)) if not t.done]
        first = blocked[0].current
        notes = [(f"tile {t.program.tile} is blocked here: {self.waiting_for(t)}", t.current)
                 for t in blocked if t.current is not None]
        names = ", ".join(str(t.program.tile) for t in blocked)
        return fail(first, f"deadlock: {len(blocked)} tile(s) blocked ({names}), none can proceed", *notes)

    def waiting_for(self, state: _Tile) -> str:
        op = state.current
        if isinstance(op, SendOp | RecvOp):
            what = "send to" if isinstance(op, SendOp) else "receive from"
            other = self.tiles.get(op.peer)
            there = "which has finished" if other is None or other.current is None else \
                f"which is at '{other.current.name}' ({_brief(other.current)})"
            return f"{what} tile {op.peer} with tag {op.tag}, {there}"
        if isinstance(op, BarrierOp):
            late = [t for t in op.tiles if t in self.tiles and not (
                isinstance(self.tiles[t].current, BarrierOp)
                and getattr(self.tiles[t].current, "barrier_id", None) == op.barrier_id)]
            return f"barrier {op.barrier_id} waits for tile(s) {', '.join(map(str, late))}"
        return "not blocked"

    # ----- instructions

    def execute(self, state: _Tile, op: Operation) -> None:
        sram = state.sram
        if isinstance(op, AllocOp):
            sram.allocate(op.buffer, op.offset, op.byte_size, op)
        elif isinstance(op, LoadOp):
            self.load(sram, op)
        elif isinstance(op, StoreOp):
            self.store(sram, op)
        elif isinstance(op, CopyOp):
            copy(sram, op)
        elif isinstance(op, ComputeOp):
            self.compute(sram, op)
        else:
            raise fail(op, f"is not a tile instruction the simulator can run (on tile {sram.tile})")

    def tensor(self, op: LoadOp | StoreOp) -> Array:
        array = self.dram.get(op.tensor)
        if array is None:
            raise fail(op, f"names DRAM tensor '{op.tensor}', which no tile.dram declares")
        check_box(op, f"DRAM tensor '{op.tensor}'", op.offsets, _buffer(op).shape, tuple(array.shape))
        return array

    def load(self, sram: Sram, op: LoadOp) -> None:
        array = self.tensor(op)
        target = sram.target(op.buffer, op)
        np.copyto(target, array[box(op.offsets, target.shape)], casting="unsafe")
        sram.wrote(op.buffer, op)
        self.counters.dma_bytes += _buffer(op).byte_size
        self.accessed(op.tensor)

    def store(self, sram: Sram, op: StoreOp) -> None:
        array = self.tensor(op)
        data = sram.read(op.buffer, op)
        index = box(op.offsets, data.shape)
        if op.accumulate:
            array[index] += data.astype(array.dtype)
        else:
            array[index] = data
        self.counters.dma_bytes += _buffer(op).byte_size
        self.accessed(op.tensor)

    def accessed(self, tensor: str) -> None:
        """Drop a releasable tensor from DRAM after its last load or store."""
        left = self.accesses_left.get(tensor)
        if left is None:
            return
        if left > 1:
            self.accesses_left[tensor] = left - 1
            return
        del self.accesses_left[tensor]
        del self.dram[tensor]

    def compute(self, sram: Sram, op: ComputeOp) -> None:
        inputs = [sram.read(v, op) for v in op.inputs]
        for k, (value, window) in enumerate(zip(op.inputs, op.input_windows, strict=False)):
            if window is not None:
                check_box(op, f"input window of {describe(value)}", window[0], window[1],
                          tuple(inputs[k].shape))
                inputs[k] = inputs[k][box(*window)]
        outputs = op.outputs
        shapes = [tuple(t.shape) for t in op.result_types()]
        window = op.window
        try:
            results = evaluate(op.op, op.op_attrs, inputs, shapes, dtype=np.float32, seed=self.seed,
                               training=self.training)
        except EvalError as problem:
            raise fail(op, f"cannot compute '{op.op}' on tile {sram.tile}: {problem.message}") from None
        except _KERNEL_ERRORS as problem:
            raise fail(op, f"'{op.op}' failed on tile {sram.tile}: {problem}") from None
        if len(results) != len(outputs):
            raise fail(op, f"'{op.op}' produces {len(results)} result(s) for {len(outputs)} output buffer(s)")
        for value, result in zip(outputs, results, strict=True):
            target = sram.target(value, op)
            if window is not None:
                check_box(op, f"output window of {describe(value)}", window[0], window[1],
                          tuple(target.shape))
                target = target[box(*window)]
            if tuple(result.shape) != target.shape:
                raise fail(op, f"'{op.op}' produces shape {list(result.shape)} for output "
                               f"{describe(value)} of shape {list(target.shape)}")
            np.copyto(target, result, casting="unsafe")
            sram.wrote(value, op)


def copy(sram: Sram, op: CopyOp) -> None:
    """``tile.copy``: a box of one buffer into another."""
    shape, src_at, dst_at = op.box, op.src_offsets, op.dst_offsets
    data = sram.read(op.src, op)
    check_box(op, f"source {describe(op.src)}", src_at, shape, tuple(data.shape))
    target = sram.target(op.dst, op)
    check_box(op, f"destination {describe(op.dst)}", dst_at, shape, tuple(target.shape))
    piece = data[box(src_at, shape)].copy()
    target[box(dst_at, shape)] = piece
    sram.wrote(op.dst, op)


def _moved(op: SendOp | RecvOp) -> str:
    """What a transfer moves, for messages: its buffer type, or the window of it."""
    btype = _buffer(op)
    if not op.windowed:
        return str(btype)
    shape = "x".join(str(d) for d in op.window[1])
    return f"a {shape}x{btype.element} window of {btype}"


def _buffer(op: Operation) -> BufferType:
    btype = op.operand(0).type
    assert isinstance(btype, BufferType)
    return btype


def _shape(btype: object) -> tuple[int, ...]:
    assert isinstance(btype, BufferType)
    return btype.shape


def _brief(op: Operation) -> str:
    if isinstance(op, SendOp | RecvOp):
        return f"peer {op.peer}, tag {op.tag}"
    if isinstance(op, BarrierOp):
        return f"barrier {op.barrier_id}"
    return op.name


def _tiles(module: Operation, capacity: int) -> dict[int, _Tile]:
    tiles: dict[int, _Tile] = {}
    for program in (op for op in module_ops(module) if isinstance(op, ProgramOp)):
        if program.tile in tiles:
            raise fail(program, f"is a second program for tile {program.tile}")
        ops = program.instructions
        tiles[program.tile] = _Tile(program, ops, Sram(program.tile, capacity), dead_after=last_uses(ops))
    return tiles


def scratch_tensors(module: Operation) -> frozenset[str]:
    """The DRAM tensors that are neither inputs, weights, state nor outputs."""
    return frozenset(t.tensor_name for t in module_ops(module)
                     if isinstance(t, DramOp) and t.role in ("activation", "gradient"))


def simulate(module: Operation, inputs: Mapping[str, Array] | None = None,
             weights: Mapping[str, Array] | None = None, *, seed: int = 0,
             check_ir: bool = True, release: frozenset[str] = frozenset()) -> tuple[Dram, Counters]:
    """Run every program of ``module``; the final DRAM and what the run did.

    The scratch tensors named in ``release`` leave DRAM after their last load or store, so
    a run holds the live ones only; they are absent from the final DRAM."""
    if check_ir:
        problems = verify(module)
        if problems:
            raise SimulationError(*problems)
    machine = machine_of(module)
    if machine is None:
        raise fail(module, "names no hw.machine (its 'crane.machine' attribute)")
    tiles = _tiles(module, machine.sram_bytes)
    if not tiles:
        raise fail(module, "holds no tile.program to simulate")
    func = graph_func(module)
    training = func is not None and is_training_step(func)
    dram = initial_dram(module, inputs, weights, seed)
    left = accesses((state.ops for state in tiles.values()), release & scratch_tensors(module))
    for unused in [name for name, n in left.items() if n == 0]:
        del left[unused], dram[unused]
    run = _Run(dram, tiles, seed, training, accesses_left=left)
    run.run()
    return run.dram, run.counters


def run_programs(module: Operation, inputs: Mapping[str, Array] | None = None,
                 weights: Mapping[str, Array] | None = None, *, seed: int = 0) -> Dram:
    """The final DRAM tensors, by name, after running every ``tile.program`` of ``module``."""
    return simulate(module, inputs, weights, seed=seed)[0]
