"""The tile dialect's data movement inside a tile and to DRAM: ``tile.load``, ``tile.store``
and ``tile.copy`` (re-exported by ``crane.dialects.tile``, which documents the dialect).

Boxes are in elements: ``[offsets, offsets + shape)`` must lie inside the tensor or buffer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from crane.dialects.tile_context import BUFFER as _BUFFER
from crane.dialects.tile_context import SRAM as _SRAM
from crane.dialects.tile_context import TileInstruction, dram_named, mesh_of
from crane.dialects.tile_context import buffer_type as _buffer
from crane.dialects.tile_context import int_attr as _int
from crane.dialects.tile_context import ints_attr as _ints
from crane.dialects.tile_context import str_attr as _str
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr, IntAttr, StringAttr
from crane.ir.core import Operation, Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec


def check_box(what: str, box: Sequence[int], offsets: Sequence[int], bounds: Sequence[int]) -> None:
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
        target = dram_named(self, self.tensor)
        if target is None:
            raise VerifyError(f"no tile.dram tensor named '{self.tensor}'")
        buf, dtype = _buffer(self.buffer), _str(target, "dtype")
        if buf.element.name != dtype:
            raise VerifyError(f"buffer of {buf.element} but DRAM tensor '{self.tensor}' holds {dtype}")
        check_box(f"tensor '{self.tensor}'", buf.shape, self.offsets, _ints(target, "shape"))
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
        check_box("source", box, _ints(self, "src_offsets"), src.shape)
        check_box("destination", box, _ints(self, "dst_offsets"), dst.shape)
