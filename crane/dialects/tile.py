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
  operands are written, the rest read (all of each, or the boxes ``in_windows`` gives; the
  result may fill a box of the output, ``out_offsets`` and ``out_shape``). ``op`` is a graph op name without ``graph.``: a
  layer kind (``conv2d``, ``relu``, ...; inputs then weights, as the graph op), ``<kind>_grad_input``
  / ``<kind>_grad_weight`` (operands as the graph op: grad_out, forward inputs, weights),
  ``sgd``/``momentum``/``adam`` (weight, grad, states -> new weight, new states),
  ``accumulate`` (sum of the inputs), ``fill``, or a step of batchnorm over boxes of the batch
  (``batchnorm_sum`` ..., docs/tile-dialect.md). ``attrs`` holds the graph op's attributes
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
from crane.dialects.layers.values import AttrValue
from crane.dialects.tile_compute import COMPUTE_EXTRA as COMPUTE_EXTRA
from crane.dialects.tile_compute import check_compute
from crane.dialects.tile_compute import compute_kind as compute_kind
from crane.dialects.tile_context import SRAM as _SRAM
from crane.dialects.tile_context import Mesh as Mesh
from crane.dialects.tile_context import TileInstruction as TileInstruction
from crane.dialects.tile_context import buffer_type as _buffer
from crane.dialects.tile_context import dram_named, enclosing_module, mesh_of, module_body
from crane.dialects.tile_context import int_attr as _int
from crane.dialects.tile_context import ints_attr as _ints
from crane.dialects.tile_context import str_attr as _str
from crane.dialects.tile_dma import CopyOp as CopyOp
from crane.dialects.tile_dma import LoadOp as LoadOp
from crane.dialects.tile_dma import StoreOp as StoreOp
from crane.dialects.tile_dma import check_box as _check_box
from crane.dialects.tile_sync import BarrierOp as BarrierOp
from crane.dialects.tile_sync import RecvOp as RecvOp
from crane.dialects.tile_sync import SendOp as SendOp
from crane.ir.attributes import (
    ArrayAttr,
    Attribute,
    DenseIntsAttr,
    DictAttr,
    IntAttr,
    StringAttr,
)
from crane.ir.context import Dialect
from crane.ir.core import Block, Operation, Region, Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec, Result
from crane.ir.traits import IsolatedFromAbove, NoTerminator, SingleBlock
from crane.ir.types import SCALAR_NAMES, BufferType, ScalarType

ROLES = ("input", "weight", "output", "activation", "gradient", "state")
"""Values of ``tile.dram``'s ``role``."""


def dram(op: Operation, name: str) -> DramOp | None:
    """The ``tile.dram`` called ``name`` in the module of ``op``."""
    found = dram_named(op, name)
    return found if isinstance(found, DramOp) else None


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
        body = module_body(module) if module is not None else None
        twins = [p for p in body.ops if isinstance(p, ProgramOp) and p.tile == self.tile] if body else []
        if twins and twins[0] is not self:
            raise VerifyError(f"tile {self.tile} has more than one program")


# ----- instructions


class AllocOp(TileInstruction):
    """``tile.alloc``: an SRAM buffer of the tile; ``offset`` in bytes, -1 = unallocated.

    The buffer takes ``bytes`` of SRAM when given (e.g. elements x the machine's
    ``data_bytes``, the width the cost model and the schedule count), else its elements at
    the IR element type's width (f32: 4 bytes).
    """

    __slots__ = ()
    spec = OpSpec("tile.alloc", results=(Result("buffer", _SRAM),),
                  attributes=(Attr("offset", IntAttr, doc="byte offset in SRAM, -1 if unallocated"),
                              Attr("bytes", IntAttr, optional=True,
                                   doc="SRAM footprint in bytes (default: at the IR element width)")),
                  summary="an SRAM buffer")

    @classmethod
    def build(cls, shape: Sequence[int], dtype: str = "f32", offset: int = -1,
              name: str | None = None, nbytes: int | None = None,
              location: Location = UNKNOWN) -> AllocOp:
        """A buffer; ``name`` becomes its SSA name hint (``%x``); ``nbytes`` its ``bytes``."""
        buffer = BufferType(tuple(shape), ScalarType(dtype), "sram")
        attrs: dict[str, Attribute] = {"offset": IntAttr(offset)}
        if nbytes is not None:
            attrs["bytes"] = IntAttr(nbytes)
        op = cls.create(None, (), (buffer,), attrs, (), location)
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
        """The SRAM the buffer occupies: ``bytes``, else its size at the IR element width."""
        given = self.attributes.get("bytes")
        return given.value if isinstance(given, IntAttr) else _buffer(self.results[0]).byte_size

    def verify_op(self) -> None:
        if any(d <= 0 for d in _buffer(self.results[0]).shape):
            raise VerifyError(f"buffer dimensions must be positive, got {self.results[0].type}")
        if self.offset < -1:
            raise VerifyError(f"'offset' must be a byte offset or -1, got {self.offset}")
        if self.byte_size <= 0:
            raise VerifyError(f"'bytes' must be positive, got {self.byte_size}")
        mesh = mesh_of(self)
        if self.offset < 0 or mesh is None:
            return
        end = self.offset + self.byte_size
        if end > mesh.sram_bytes:
            raise VerifyError(f"buffer [{self.offset}, {end}) exceeds the tile's SRAM of "
                              f"{mesh.sram_bytes} bytes")


class ComputeOp(TileInstruction):
    """``tile.compute``: a graph op evaluated on SRAM buffers with tile-level shapes."""

    __slots__ = ()
    spec = OpSpec("tile.compute", operands=(Operand("buffers", _SRAM, variadic=True),),
                  attributes=(Attr("op", StringAttr, doc="graph op name without 'graph.'"),
                              Attr("outputs", IntAttr, optional=True,
                                   doc="how many leading operands are written (default 1)"),
                              Attr("attrs", DictAttr, optional=True,
                                   doc="the graph op's attributes at tile level"),
                              Attr("out_offsets", DenseIntsAttr, optional=True,
                                   doc="with out_shape: the box of the (single) output the result fills"),
                              Attr("out_shape", DenseIntsAttr, optional=True),
                              Attr("in_windows", ArrayAttr, optional=True,
                                   doc="per input: array<i64> (all of it) or the offsets "
                                       "then the shape of the box of it the op reads")),
                  summary="compute on SRAM buffers: layers, gradients, updates, sums")

    @classmethod
    def build(cls, op: str, outputs: Sequence[Value], inputs: Sequence[Value],
              attrs: Mapping[str, AttrValue | Attribute] | None = None,
              location: Location = UNKNOWN,
              window: tuple[Sequence[int], Sequence[int]] | None = None,
              in_windows: Sequence[tuple[Sequence[int], Sequence[int]] | None] = ()) -> ComputeOp:
        """``attrs`` values may be plain layer values (``(1, 1)``, ``True``) or attributes;
        ``window`` (offsets, shape) makes the result fill that box of the single output;
        ``in_windows`` (one per input, None for all of it) makes the op read boxes of its
        inputs."""
        entries = {k: v if isinstance(v, Attribute) else to_attribute(v) for k, v in (attrs or {}).items()}
        attributes: dict[str, Attribute] = {"op": StringAttr(op)}
        if len(outputs) != 1:
            attributes["outputs"] = IntAttr(len(outputs))
        attributes["attrs"] = DictAttr.of(entries)
        if window is not None:
            attributes["out_offsets"] = DenseIntsAttr(tuple(window[0]))
            attributes["out_shape"] = DenseIntsAttr(tuple(window[1]))
        if any(w is not None for w in in_windows):
            attributes["in_windows"] = ArrayAttr(tuple(
                DenseIntsAttr(() if w is None else (*w[0], *w[1])) for w in in_windows))
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

    @property
    def window(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(offsets, shape) of the output box the result fills (None: the whole output)."""
        shape = _ints(self, "out_shape")
        if not shape:
            return None
        return _ints(self, "out_offsets") or (0,) * len(shape), shape

    @property
    def input_windows(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]] | None, ...]:
        """Per input, (offsets, shape) of the box the op reads (None: all of it)."""
        attr = self.attributes.get("in_windows")
        count = len(self._operands) - self.num_outputs
        if not isinstance(attr, ArrayAttr):
            return (None,) * count
        found: list[tuple[tuple[int, ...], tuple[int, ...]] | None] = []
        for entry in attr.elements:
            flat = tuple(entry) if isinstance(entry, DenseIntsAttr) else ()
            half = len(flat) // 2
            found.append((flat[:half], flat[half:]) if flat else None)
        return tuple(found)

    def input_types(self) -> list[BufferType]:
        """The types the op reads: its inputs', or their windows'."""
        types = [_buffer(v) for v in self.inputs]
        return [t if w is None else BufferType(w[1], t.element, t.space)
                for t, w in zip(types, self.input_windows, strict=False)]

    def result_types(self) -> list[BufferType]:
        """The types the op's results have: the outputs', or the window's."""
        outputs = [_buffer(v) for v in self.outputs]
        window = self.window
        if window is None or len(outputs) != 1:
            return outputs
        return [BufferType(window[1], outputs[0].element, outputs[0].space)]

    def verify_op(self) -> None:
        if not 1 <= self.num_outputs <= len(self._operands):
            raise VerifyError(f"'outputs' = {self.num_outputs} but the op has "
                              f"{len(self._operands)} buffer operand(s)")
        if ("out_offsets" in self.attributes) != ("out_shape" in self.attributes):
            raise VerifyError("'out_offsets' and 'out_shape' go together")
        window = self.window
        if window is not None:
            if self.num_outputs != 1:
                raise VerifyError("an output window needs exactly one output")
            _check_box("output", window[1], window[0], _buffer(self.outputs[0]).shape)
        self._verify_input_windows()
        check_compute(self.op, self.result_types(), self.input_types(), self.op_attrs)

    def _verify_input_windows(self) -> None:
        attr = self.attributes.get("in_windows")
        if attr is None:
            return
        if not isinstance(attr, ArrayAttr) or len(attr.elements) != len(self.inputs):
            raise VerifyError(f"'in_windows' needs one entry per input ({len(self.inputs)})")
        for index, (value, entry) in enumerate(zip(self.inputs, attr.elements, strict=True)):
            flat = tuple(entry) if isinstance(entry, DenseIntsAttr) else None
            bounds = _buffer(value).shape
            if flat is None or len(flat) not in (0, 2 * len(bounds)):
                raise VerifyError(f"'in_windows' #{index}: expected array<i64> or "
                                  f"{2 * len(bounds)} offsets and sizes, got {entry}")
            if flat:
                _check_box(f"input window #{index}", flat[len(bounds):], flat[:len(bounds)], bounds)


INSTRUCTIONS: tuple[type[TileInstruction], ...] = (
    AllocOp, LoadOp, StoreOp, SendOp, RecvOp, CopyOp, ComputeOp, BarrierOp)

TILE = Dialect("tile", (DramOp, ProgramOp, *INSTRUCTIONS),
               summary="per-tile programs: SRAM buffers, DMA, NoC transfers, compute, barriers")
