"""The ``tile`` dialect: one straight-line program per mesh tile, over DRAM tensors and SRAM buffers.

Produced by ``codegen`` from a mapped schedule, allocated by ``alloc``, executed by
``crane.exec.tile_sim``. Everything sits at module level beside the ``hw.machine`` and the
``graph.func`` it was lowered from (the simulators' checker reruns that function)::

    tile.dram {name = "x", shape = array<i64: 1, 3, 8, 8>, dtype = "f32", role = "input"} : () -> ()
    tile.program ({
      %x = tile.alloc {offset = -1} : () -> buffer<1x3x8x8xf32, sram>
      tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 0, 0>, port = 0} : (buffer<1x3x8x8xf32, sram>) -> ()
      tile.compute %y, %x, %w {op = "conv2d", attrs = {...}} : (buffer<...>, ...) -> ()
      tile.send %y {peer = 1, tag = 7} : (buffer<1x2x8x8xf32, sram>) -> ()
      tile.barrier {id = 0, tiles = array<i64: 0, 1>} : () -> ()
    }) {tile = 0, row = 0, col = 0} : () -> ()

Units and conventions (all ops print in the default custom form, which parses back exactly):

- ``tile.dram``: one per DRAM tensor; ``name`` is unique. For ``role = "input"`` it is the
  name of a ``graph.func`` argument, ``"weight"`` a ``graph.weight`` name, ``"state"`` a
  ``graph.optimizer_state`` name, ``"output"`` a name the reference interpreter returns
  (``"y"``, ``"loss"``, ``"conv1.weight.new"``); ``"activation"`` and ``"gradient"`` are
  scratch tensors (zero at the start).
- ``tile.program {tile, row, col}``: the instruction stream of mesh tile ``tile = row *
  cols + col``; at most one per tile; isolated from above (its own SSA names).
- Buffers are SSA values of type ``buffer<shape x dtype, sram>``; instructions have no
  results and read or overwrite their buffer operands (memory semantics, not values).
- ``tile.alloc {offset}``: ``offset`` is a **byte** offset in the tile's SRAM, ``-1`` while
  unallocated; the buffer occupies ``[offset, offset + shape * bytes(dtype))`` and must fit
  in the machine's ``sram_bytes``.
- ``tile.load``/``tile.store {tensor, offsets, port}``: ``offsets`` are **element**
  indices, one per dimension of the DRAM tensor (the buffer has the tensor's rank); the DMA
  moves the box ``[offsets, offsets + shape(buffer))``, which must lie inside the tensor,
  through DRAM port ``port`` (an index into ``hw.machine``'s ``dram_ports`` pairs).
  ``accumulate = true`` on a store adds the buffer into DRAM (partial sums).
- ``tile.send``/``tile.recv {peer, tag}``: a blocking NoC transfer of a whole buffer; the
  send of tile ``a`` to ``peer = b`` with ``tag`` matches the recv of tile ``b`` with
  ``peer = a`` and the same ``tag``; both buffers have one type. A send may carry
  ``route``: the tile ids visited from sender to receiver, each a mesh neighbour of the last.
- ``tile.copy %dst, %src {src_offsets, dst_offsets, shape}``: copies the box of ``shape``
  at ``src_offsets`` of ``src`` to ``dst_offsets`` of ``dst`` (elements; same rank).
- ``tile.compute %out..., %in... {op, outputs, attrs}``: the first ``outputs`` (default 1)
  operands are written, the rest read. ``op`` is a graph op name without ``graph.``: a
  layer kind (``conv2d``, ``relu``, ...; inputs then weights, as the graph op), ``<kind>_grad_input``
  / ``<kind>_grad_weight`` (operands as the graph op: grad_out, forward inputs, weights),
  ``sgd``/``momentum``/``adam`` (weight, grad, states -> new weight, new states),
  ``accumulate`` (sum of the inputs) or ``fill``. ``attrs`` holds the graph op's attributes
  at tile level (e.g. the padding a border tile still needs) and the hyper-parameters.
- ``tile.barrier {id, tiles}``: every tile listed (the own tile included) waits until all
  have reached their ``tile.barrier`` with this ``id``.

Named constructors: ``DramOp.build(name, shape, role)``, ``ProgramOp.build(tile, row, col)``
(append to ``.body``), ``AllocOp.build(shape)``, ``LoadOp.build(buf, tensor, offsets, port)``,
``StoreOp.build(...)``, ``SendOp.build(buf, peer, tag)``, ``RecvOp.build(...)``,
``CopyOp.build(dst, src, ...)``, ``ComputeOp.build(op, outputs, inputs, attrs)``,
``BarrierOp.build(id, tiles)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crane.dialects.graph import from_attribute, to_attribute
from crane.dialects.graph_grad import UPDATE_OPS
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.rules import ShapeError, fmt
from crane.dialects.layers.values import AttrValue
from crane.ir.attributes import (
    Attribute,
    BoolAttr,
    DenseIntsAttr,
    DictAttr,
    IntAttr,
    StringAttr,
    SymbolRefAttr,
)
from crane.ir.context import Dialect
from crane.ir.core import Block, Operation, Region, Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec, Result, TypeConstraint
from crane.ir.traits import HasParent, IsolatedFromAbove, NoTerminator, SingleBlock
from crane.ir.types import SCALAR_NAMES, BufferType, ScalarType

ROLES = ("input", "weight", "output", "activation", "gradient", "state")
"""Values of ``tile.dram``'s ``role``."""

_SRAM = TypeConstraint("an sram buffer", lambda t: isinstance(t, BufferType) and t.space == "sram")
_BUFFER = Operand("buffer", _SRAM)


def _ints(op: Operation, name: str) -> tuple[int, ...]:
    attr = op.attributes.get(name)
    return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()


def _int(op: Operation, name: str, default: int = 0) -> int:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, IntAttr) else default


def _str(op: Operation, name: str) -> str:
    attr = op.attributes.get(name)
    return attr.value if isinstance(attr, StringAttr) else ""


def _buffer(value: Value) -> BufferType:
    assert isinstance(value.type, BufferType)
    return value.type


# ----- the module a tile op lives in: its DRAM tensors and its machine


class Mesh:
    """What the verifiers need of the targeted ``hw.machine`` (read live from its op)."""

    __slots__ = ("rows", "cols", "sram_bytes", "ports")

    def __init__(self, machine: Operation) -> None:
        self.rows, self.cols = _int(machine, "rows"), _int(machine, "cols")
        self.sram_bytes = _int(machine, "sram_bytes")
        self.ports = len(_ints(machine, "dram_ports")) // 2

    @property
    def tiles(self) -> int:
        return self.rows * self.cols

    def check_tile(self, tile: int, what: str) -> None:
        if not 0 <= tile < self.tiles:
            raise VerifyError(f"{what} {tile} is outside the {self.rows} x {self.cols} mesh "
                              f"(tiles 0..{self.tiles - 1})")


_TABLES: dict[int, tuple[Block, int, dict[str, DramOp]]] = {}
"""Module body -> its DRAM tensors by name; re-read when the body changes (see :func:`dram`)."""


def enclosing_module(op: Operation) -> Operation | None:
    """The op holding the ``tile.program`` (or ``tile.dram``) that ``op`` belongs to."""
    current: Operation | None = op
    while current is not None and not isinstance(current, ProgramOp | DramOp):
        current = current.parent_op
    return current.parent_op if current is not None else None


def _body(module: Operation) -> Block | None:
    return module.regions[0].blocks[0] if module.regions and module.regions[0].blocks else None


def dram(op: Operation, name: str) -> DramOp | None:
    """The ``tile.dram`` called ``name`` in the module of ``op`` (cached, validated on use)."""
    module = enclosing_module(op)
    body = _body(module) if module is not None else None
    if body is None:
        return None
    cached = _TABLES.get(id(body))
    found = cached[2].get(name) if cached is not None and cached[0] is body else None
    if found is not None and cached is not None and cached[1] == len(body) \
            and found.parent is body and found.tensor_name == name:
        return found
    table = {d.tensor_name: d for d in body.ops if isinstance(d, DramOp)}
    if len(_TABLES) > 8:
        _TABLES.clear()
    _TABLES[id(body)] = (body, len(body), table)
    return table.get(name)


def mesh_of(op: Operation) -> Mesh | None:
    """The mesh of the machine the module of ``op`` targets (``crane.machine``), if any."""
    module = enclosing_module(op)
    target = module.attributes.get("crane.machine") if module is not None else None
    body = _body(module) if module is not None else None
    if not isinstance(target, SymbolRefAttr) or body is None:
        return None
    for candidate in body.ops:
        if candidate.name == "hw.machine" and _str(candidate, "sym_name") == target.root:
            return Mesh(candidate)
    return None


def program_of(op: Operation) -> ProgramOp | None:
    parent = op.parent_op
    return parent if isinstance(parent, ProgramOp) else None


# ----- module-level ops


class DramOp(Operation):
    """``tile.dram``: a tensor in DRAM, named, with its shape, element type and role."""

    __slots__ = ()
    spec = OpSpec(
        "tile.dram",
        attributes=(
            Attr("name", StringAttr, doc="unique; the graph name for inputs, weights, outputs"),
            Attr("shape", DenseIntsAttr, doc="dimensions in elements"),
            Attr("dtype", StringAttr, doc="element type: f32, i64, ..."),
            Attr("role", StringAttr, doc="input, weight, output, activation, gradient or state"),
        ),
        summary="a DRAM tensor the tile programs load from and store to",
    )

    @classmethod
    def build(cls, name: str, shape: Sequence[int], role: str, dtype: str = "f32",
              location: Location = UNKNOWN) -> DramOp:
        attrs: dict[str, Attribute] = {"name": StringAttr(name), "shape": DenseIntsAttr(tuple(shape)),
                                       "dtype": StringAttr(dtype), "role": StringAttr(role)}
        op = cls.create(None, (), (), attrs, (), location)
        assert isinstance(op, DramOp)
        return op

    @property
    def tensor_name(self) -> str:
        return _str(self, "name")

    @property
    def shape(self) -> tuple[int, ...]:
        return _ints(self, "shape")

    @property
    def dtype(self) -> str:
        return _str(self, "dtype")

    @property
    def role(self) -> str:
        return _str(self, "role")

    @property
    def element(self) -> ScalarType:
        return ScalarType(self.dtype)

    def verify_op(self) -> None:
        if not self.tensor_name:
            raise VerifyError("'name' must not be empty")
        if any(d <= 0 for d in self.shape):
            raise VerifyError(f"'shape' must be positive dimensions, got {list(self.shape)}")
        if self.dtype not in SCALAR_NAMES:
            raise VerifyError(f"unknown 'dtype' \"{self.dtype}\" (expected one of {', '.join(SCALAR_NAMES)})")
        if self.role not in ROLES:
            raise VerifyError(f"unknown 'role' \"{self.role}\" (expected one of {', '.join(ROLES)})")
        first = dram(self, self.tensor_name)
        if first is not None and first is not self:
            raise VerifyError(f"DRAM tensor '{self.tensor_name}' is declared twice")


class ProgramOp(Operation):
    """``tile.program``: the straight-line instruction stream of one mesh tile."""

    __slots__ = ()
    spec = OpSpec(
        "tile.program",
        attributes=(Attr("tile", IntAttr, doc="row * cols + col"), Attr("row", IntAttr),
                    Attr("col", IntAttr)),
        regions=1,
        summary="the program of one tile: DMA, NoC, compute and barrier instructions",
    )
    traits = (NoTerminator(), SingleBlock(), IsolatedFromAbove())

    @classmethod
    def build(cls, tile: int, row: int, col: int, location: Location = UNKNOWN) -> ProgramOp:
        """An empty program; append instructions to ``.body``."""
        attrs: dict[str, Attribute] = {"tile": IntAttr(tile), "row": IntAttr(row), "col": IntAttr(col)}
        op = cls.create(None, (), (), attrs, [Region.with_block()], location)
        assert isinstance(op, ProgramOp)
        return op

    @property
    def tile(self) -> int:
        return _int(self, "tile")

    @property
    def body(self) -> Block:
        return self.regions[0].block

    @property
    def instructions(self) -> list[Operation]:
        return list(self.body.ops) if self.regions[0].blocks else []

    def verify_op(self) -> None:
        for op in self.instructions:
            if not isinstance(op, TileInstruction):
                raise VerifyError(f"may hold only tile instructions, found '{op.name}'")
        mesh = mesh_of(self)
        if mesh is None:
            return
        mesh.check_tile(self.tile, "tile")
        row, col = _int(self, "row"), _int(self, "col")
        if row * mesh.cols + col != self.tile:
            raise VerifyError(f"tile {self.tile} is at row {self.tile // mesh.cols}, col "
                              f"{self.tile % mesh.cols} of the mesh, not row {row}, col {col}")
        module = enclosing_module(self)
        body = _body(module) if module is not None else None
        twins = [p for p in body.ops if isinstance(p, ProgramOp) and p.tile == self.tile] if body else []
        if twins and twins[0] is not self:
            raise VerifyError(f"tile {self.tile} has more than one program")


# ----- instructions


class TileInstruction(Operation):
    """Base of the ops allowed in a ``tile.program``."""

    __slots__ = ()
    traits = (HasParent(("tile.program",)),)

    @property
    def own_tile(self) -> int:
        program = program_of(self)
        return program.tile if program is not None else -1


class AllocOp(TileInstruction):
    """``tile.alloc``: an SRAM buffer of the tile; ``offset`` in bytes, -1 = unallocated."""

    __slots__ = ()
    spec = OpSpec("tile.alloc", results=(Result("buffer", _SRAM),),
                  attributes=(Attr("offset", IntAttr, doc="byte offset in SRAM, -1 if unallocated"),),
                  summary="an SRAM buffer")

    @classmethod
    def build(cls, shape: Sequence[int], dtype: str = "f32", offset: int = -1,
              name: str | None = None, location: Location = UNKNOWN) -> AllocOp:
        """A buffer; ``name`` becomes its SSA name hint (``%x``)."""
        buffer = BufferType(tuple(shape), ScalarType(dtype), "sram")
        op = cls.create(None, (), (buffer,), {"offset": IntAttr(offset)}, (), location)
        op.results[0].name_hint = name
        assert isinstance(op, AllocOp)
        return op

    @property
    def buffer(self) -> Value:
        return self.results[0]

    @property
    def offset(self) -> int:
        return _int(self, "offset", -1)

    @property
    def byte_size(self) -> int:
        return _buffer(self.results[0]).byte_size

    def verify_op(self) -> None:
        if any(d <= 0 for d in _buffer(self.results[0]).shape):
            raise VerifyError(f"buffer dimensions must be positive, got {self.results[0].type}")
        if self.offset < -1:
            raise VerifyError(f"'offset' must be a byte offset or -1, got {self.offset}")
        mesh = mesh_of(self)
        if self.offset < 0 or mesh is None:
            return
        end = self.offset + self.byte_size
        if end > mesh.sram_bytes:
            raise VerifyError(f"buffer [{self.offset}, {end}) exceeds the tile's SRAM of "
                              f"{mesh.sram_bytes} bytes")


def _check_box(what: str, box: Sequence[int], offsets: Sequence[int], bounds: Sequence[int]) -> None:
    """``[offsets, offsets + box)`` must lie inside ``bounds`` (all in elements)."""
    if len(offsets) != len(bounds) or len(box) != len(bounds):
        raise VerifyError(f"{what}: rank mismatch: offsets {list(offsets)}, region {list(box)}, "
                          f"tensor {list(bounds)}")
    for dim, (o, b, n) in enumerate(zip(offsets, box, bounds, strict=True)):
        if o < 0 or o + b > n:
            raise VerifyError(f"{what}: dimension {dim} reads [{o}, {o + b}) outside [0, {n}) "
                              f"(offsets {list(offsets)}, region {list(box)}, shape {list(bounds)})")


class _DmaOp(TileInstruction):
    """Shared by load and store: a box of a DRAM tensor through a DRAM port."""

    __slots__ = ()

    @classmethod
    def _make(cls, buffer: Value, tensor: str, offsets: Sequence[int], port: int,
              extra: Mapping[str, Attribute], location: Location) -> Operation:
        attrs: dict[str, Attribute] = {"tensor": StringAttr(tensor),
                                       "offsets": DenseIntsAttr(tuple(offsets)), "port": IntAttr(port)}
        attrs.update(extra)
        return cls.create(None, (buffer,), (), attrs, (), location)

    @property
    def buffer(self) -> Value:
        return self._operands[0]

    @property
    def tensor(self) -> str:
        return _str(self, "tensor")

    @property
    def offsets(self) -> tuple[int, ...]:
        return _ints(self, "offsets")

    @property
    def port(self) -> int:
        return _int(self, "port")

    def verify_op(self) -> None:
        target = dram(self, self.tensor)
        if target is None:
            raise VerifyError(f"no tile.dram tensor named '{self.tensor}'")
        buf = _buffer(self.buffer)
        if buf.element != target.element:
            raise VerifyError(f"buffer of {buf.element} but DRAM tensor '{self.tensor}' holds {target.dtype}")
        _check_box(f"tensor '{self.tensor}'", buf.shape, self.offsets, target.shape)
        mesh = mesh_of(self)
        if mesh is not None and not 0 <= self.port < mesh.ports:
            raise VerifyError(f"DRAM port {self.port} does not exist (the machine has {mesh.ports})")


class LoadOp(_DmaOp):
    """``tile.load``: DMA a box of a DRAM tensor into an SRAM buffer."""

    __slots__ = ()
    spec = OpSpec("tile.load", operands=(_BUFFER,),
                  attributes=(Attr("tensor", StringAttr), Attr("offsets", DenseIntsAttr),
                              Attr("port", IntAttr)),
                  summary="DRAM box -> SRAM buffer")

    @classmethod
    def build(cls, buffer: Value, tensor: str, offsets: Sequence[int], port: int,
              location: Location = UNKNOWN) -> LoadOp:
        op = cls._make(buffer, tensor, offsets, port, {}, location)
        assert isinstance(op, LoadOp)
        return op


class StoreOp(_DmaOp):
    """``tile.store``: DMA an SRAM buffer into (or, accumulating, onto) a box of a DRAM tensor."""

    __slots__ = ()
    spec = OpSpec("tile.store", operands=(_BUFFER,),
                  attributes=(Attr("tensor", StringAttr), Attr("offsets", DenseIntsAttr),
                              Attr("port", IntAttr),
                              Attr("accumulate", BoolAttr, optional=True, doc="add instead of overwrite")),
                  summary="SRAM buffer -> DRAM box")

    @classmethod
    def build(cls, buffer: Value, tensor: str, offsets: Sequence[int], port: int,
              accumulate: bool = False, location: Location = UNKNOWN) -> StoreOp:
        op = cls._make(buffer, tensor, offsets, port, {"accumulate": BoolAttr(accumulate)}, location)
        assert isinstance(op, StoreOp)
        return op

    @property
    def accumulate(self) -> bool:
        attr = self.attributes.get("accumulate")
        return isinstance(attr, BoolAttr) and attr.value


class _TransferOp(TileInstruction):
    """Shared by send and recv: a whole buffer to or from a peer tile, matched by tag."""

    __slots__ = ()

    @property
    def buffer(self) -> Value:
        return self._operands[0]

    @property
    def peer(self) -> int:
        return _int(self, "peer")

    @property
    def tag(self) -> int:
        return _int(self, "tag")

    def verify_op(self) -> None:
        if self.peer == self.own_tile:
            raise VerifyError(f"tile {self.peer} cannot transfer to itself")
        mesh = mesh_of(self)
        if mesh is not None:
            mesh.check_tile(self.peer, "peer")


class SendOp(_TransferOp):
    """``tile.send``: send a buffer to ``peer``; blocks until the matching recv takes it."""

    __slots__ = ()
    spec = OpSpec("tile.send", operands=(_BUFFER,),
                  attributes=(Attr("peer", IntAttr, doc="receiving tile"), Attr("tag", IntAttr),
                              Attr("route", DenseIntsAttr, optional=True,
                                   doc="tiles visited from sender to receiver, inclusive")),
                  summary="NoC send of a whole buffer")

    @classmethod
    def build(cls, buffer: Value, peer: int, tag: int, route: Sequence[int] | None = None,
              location: Location = UNKNOWN) -> SendOp:
        attrs: dict[str, Attribute] = {"peer": IntAttr(peer), "tag": IntAttr(tag)}
        if route is not None:
            attrs["route"] = DenseIntsAttr(tuple(route))
        op = cls.create(None, (buffer,), (), attrs, (), location)
        assert isinstance(op, SendOp)
        return op

    @property
    def route(self) -> tuple[int, ...]:
        return _ints(self, "route")

    def verify_op(self) -> None:
        super().verify_op()
        route, mesh = self.route, mesh_of(self)
        if not route or mesh is None:
            return
        if route[0] != self.own_tile or route[-1] != self.peer:
            raise VerifyError(f"'route' must run from tile {self.own_tile} to tile {self.peer}, "
                              f"got {list(route)}")
        for a, b in zip(route, route[1:], strict=False):
            mesh.check_tile(b, "route tile")
            if abs(a // mesh.cols - b // mesh.cols) + abs(a % mesh.cols - b % mesh.cols) != 1:
                raise VerifyError(f"'route' hops from tile {a} to tile {b}, which are not neighbours")


class RecvOp(_TransferOp):
    """``tile.recv``: receive into a buffer from ``peer``; blocks until the matching send."""

    __slots__ = ()
    spec = OpSpec("tile.recv", operands=(_BUFFER,),
                  attributes=(Attr("peer", IntAttr, doc="sending tile"), Attr("tag", IntAttr)),
                  summary="NoC receive of a whole buffer")

    @classmethod
    def build(cls, buffer: Value, peer: int, tag: int, location: Location = UNKNOWN) -> RecvOp:
        attrs: dict[str, Attribute] = {"peer": IntAttr(peer), "tag": IntAttr(tag)}
        op = cls.create(None, (buffer,), (), attrs, (), location)
        assert isinstance(op, RecvOp)
        return op


class CopyOp(TileInstruction):
    """``tile.copy %dst, %src``: a box of ``src`` into ``dst`` inside the tile's SRAM."""

    __slots__ = ()
    spec = OpSpec("tile.copy", operands=(Operand("dst", _SRAM), Operand("src", _SRAM)),
                  attributes=(Attr("src_offsets", DenseIntsAttr), Attr("dst_offsets", DenseIntsAttr),
                              Attr("shape", DenseIntsAttr, doc="the box copied, in elements")),
                  summary="SRAM to SRAM copy of a box (slicing, concatenation, halos)")

    @classmethod
    def build(cls, dst: Value, src: Value, src_offsets: Sequence[int], dst_offsets: Sequence[int],
              shape: Sequence[int], location: Location = UNKNOWN) -> CopyOp:
        attrs: dict[str, Attribute] = {"src_offsets": DenseIntsAttr(tuple(src_offsets)),
                                       "dst_offsets": DenseIntsAttr(tuple(dst_offsets)),
                                       "shape": DenseIntsAttr(tuple(shape))}
        op = cls.create(None, (dst, src), (), attrs, (), location)
        assert isinstance(op, CopyOp)
        return op

    @property
    def dst(self) -> Value:
        return self._operands[0]

    @property
    def src(self) -> Value:
        return self._operands[1]

    @property
    def src_offsets(self) -> tuple[int, ...]:
        return _ints(self, "src_offsets")

    @property
    def dst_offsets(self) -> tuple[int, ...]:
        return _ints(self, "dst_offsets")

    @property
    def box(self) -> tuple[int, ...]:
        """The shape of the copied box."""
        return _ints(self, "shape")

    def verify_op(self) -> None:
        dst, src = _buffer(self.dst), _buffer(self.src)
        if dst.element != src.element:
            raise VerifyError(f"copies {src.element} into a buffer of {dst.element}")
        box = _ints(self, "shape")
        _check_box("source", box, _ints(self, "src_offsets"), src.shape)
        _check_box("destination", box, _ints(self, "dst_offsets"), dst.shape)


COMPUTE_EXTRA = ("accumulate", "fill")
"""Compute ops that are not graph layer kinds, gradients or optimizer updates."""


def compute_kind(op: str) -> tuple[str, str]:
    """``(family, base)`` of a compute op name: ``("forward", "conv2d")``,
    ``("grad_input", "conv2d")``, ``("update", "adam")``, ``("accumulate", "")`` ...;
    ``("", op)`` when the name is unknown."""
    if op in LAYER_KINDS:
        return "forward", op
    for role in ("input", "weight"):
        base = op.removesuffix(f"_grad_{role}")
        if base != op and base in LAYER_KINDS:
            return f"grad_{role}", base
    if op in UPDATE_OPS:
        return "update", op
    return (op, "") if op in COMPUTE_EXTRA else ("", op)


class ComputeOp(TileInstruction):
    """``tile.compute``: a graph op evaluated on SRAM buffers with tile-level shapes."""

    __slots__ = ()
    spec = OpSpec("tile.compute", operands=(Operand("buffers", _SRAM, variadic=True),),
                  attributes=(Attr("op", StringAttr, doc="graph op name without 'graph.'"),
                              Attr("outputs", IntAttr, optional=True,
                                   doc="how many leading operands are written (default 1)"),
                              Attr("attrs", DictAttr, optional=True,
                                   doc="the graph op's attributes at tile level")),
                  summary="compute on SRAM buffers: layers, gradients, updates, sums")

    @classmethod
    def build(cls, op: str, outputs: Sequence[Value], inputs: Sequence[Value],
              attrs: Mapping[str, AttrValue | Attribute] | None = None,
              location: Location = UNKNOWN) -> ComputeOp:
        """``attrs`` values may be plain layer values (``(1, 1)``, ``True``) or attributes."""
        entries = {k: v if isinstance(v, Attribute) else to_attribute(v) for k, v in (attrs or {}).items()}
        attributes: dict[str, Attribute] = {"op": StringAttr(op)}
        if len(outputs) != 1:
            attributes["outputs"] = IntAttr(len(outputs))
        attributes["attrs"] = DictAttr.of(entries)
        made = cls.create(None, (*outputs, *inputs), (), attributes, (), location)
        assert isinstance(made, ComputeOp)
        return made

    @property
    def op(self) -> str:
        return _str(self, "op")

    @property
    def num_outputs(self) -> int:
        return _int(self, "outputs", 1)

    @property
    def outputs(self) -> tuple[Value, ...]:
        return tuple(self._operands[: self.num_outputs])

    @property
    def inputs(self) -> tuple[Value, ...]:
        return tuple(self._operands[self.num_outputs:])

    @property
    def op_attrs(self) -> dict[str, AttrValue]:
        """``attrs`` as plain layer values (what the numpy kernels read)."""
        attr = self.attributes.get("attrs")
        return {k: from_attribute(v) for k, v in attr.entries} if isinstance(attr, DictAttr) else {}

    def verify_op(self) -> None:
        family, base = compute_kind(self.op)
        if not family:
            raise VerifyError(f"unknown compute op '{self.op}' (a graph layer kind, "
                              "<kind>_grad_input, <kind>_grad_weight, sgd, momentum, adam, "
                              "accumulate or fill)")
        if not 1 <= self.num_outputs <= len(self._operands):
            raise VerifyError(f"'outputs' = {self.num_outputs} but the op has "
                              f"{len(self._operands)} buffer operand(s)")
        attrs = self.op_attrs
        if family == "forward":
            self._verify_forward(base, attrs)
        elif family == "update":
            self._verify_same_shape(2 + len(UPDATE_OPS[base].states), 1 + len(UPDATE_OPS[base].states))
        elif family == "accumulate":
            self._verify_same_shape(None, 1)
        elif family == "fill" and len(self._operands) != 1:
            raise VerifyError("'fill' writes one buffer and reads none")

    def _verify_same_shape(self, inputs: int | None, outputs: int) -> None:
        if self.num_outputs != outputs or (inputs is not None and len(self.inputs) != inputs):
            expected = "at least one" if inputs is None else str(inputs)
            raise VerifyError(f"'{self.op}' writes {outputs} and reads {expected} buffer(s), "
                              f"got {self.num_outputs} and {len(self.inputs)}")
        if not self.inputs or any(v.type != self._operands[0].type for v in self._operands):
            raise VerifyError(f"'{self.op}' needs buffers of one type")

    def _verify_forward(self, base: str, attrs: Mapping[str, AttrValue]) -> None:
        kind = LAYER_KINDS[base]
        if self.num_outputs != 1:
            raise VerifyError(f"'{base}' writes one buffer, not {self.num_outputs}")
        operands = [_buffer(v) for v in self.inputs]
        if not operands:
            raise VerifyError(f"'{base}' reads no buffer")
        try:
            weights = kind.weights((operands[0].shape,), attrs)
            inputs = operands[: len(operands) - len(weights)]
            out_shape, resolved = kind.shape(tuple(b.shape for b in inputs), attrs)
            expected = kind.weights(tuple(b.shape for b in inputs), resolved)
        except ShapeError as problem:
            raise VerifyError(f"'{base}' at tile level: {problem.message}") from None
        except (KeyError, AssertionError, IndexError, TypeError, ValueError) as problem:
            raise VerifyError(f"'{base}': malformed attrs or operands ({type(problem).__name__}: "
                              f"{problem})") from None
        got = _buffer(self._operands[0]).shape
        if got != out_shape:
            raise VerifyError(f"'{base}' output buffer is {fmt(got)}, the inputs give {fmt(out_shape)}")
        for (name, shape), buf in zip(expected, operands[len(inputs):], strict=True):
            if buf.shape != shape:
                raise VerifyError(f"'{base}' weight '{name}' buffer is {fmt(buf.shape)}, expected {fmt(shape)}")


class BarrierOp(TileInstruction):
    """``tile.barrier``: wait until every listed tile reaches its barrier ``id``."""

    __slots__ = ()
    spec = OpSpec("tile.barrier",
                  attributes=(Attr("id", IntAttr), Attr("tiles", DenseIntsAttr, doc="participants")),
                  summary="synchronise a group of tiles")

    @classmethod
    def build(cls, id: int, tiles: Sequence[int], location: Location = UNKNOWN) -> BarrierOp:
        attrs: dict[str, Attribute] = {"id": IntAttr(id), "tiles": DenseIntsAttr(tuple(tiles))}
        op = cls.create(None, (), (), attrs, (), location)
        assert isinstance(op, BarrierOp)
        return op

    @property
    def barrier_id(self) -> int:
        return _int(self, "id")

    @property
    def tiles(self) -> tuple[int, ...]:
        return _ints(self, "tiles")

    def verify_op(self) -> None:
        tiles = self.tiles
        if len(set(tiles)) != len(tiles):
            raise VerifyError(f"'tiles' lists a tile twice: {list(tiles)}")
        if self.own_tile >= 0 and self.own_tile not in tiles:
            raise VerifyError(f"tile {self.own_tile} waits at a barrier it is not listed in")
        mesh = mesh_of(self)
        for tile in tiles if mesh is not None else ():
            assert mesh is not None
            mesh.check_tile(tile, "barrier tile")


INSTRUCTIONS: tuple[type[TileInstruction], ...] = (
    AllocOp, LoadOp, StoreOp, SendOp, RecvOp, CopyOp, ComputeOp, BarrierOp)

TILE = Dialect("tile", (DramOp, ProgramOp, *INSTRUCTIONS),
               summary="per-tile programs: SRAM buffers, DMA, NoC transfers, compute, barriers")
