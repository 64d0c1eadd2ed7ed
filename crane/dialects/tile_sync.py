"""Synchronisation instructions of the ``tile`` dialect: NoC send/recv and barriers.

A ``tile.send`` of tile ``a`` with ``peer = b, tag = t`` matches the ``tile.recv`` of tile ``b``
with ``peer = a, tag = t``; both block until the match. Each moves its whole buffer, or the
window ``{offsets, shape}`` of it (a strided DMA: the sender reads a box of a larger buffer,
the receiver writes a box of one); the two boxes must have the same shape. A
``tile.barrier`` lists every participating tile, its own included (see ``crane.dialects.tile``).
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.dialects.tile_context import BUFFER as _BUFFER
from crane.dialects.tile_context import TileInstruction, mesh_of
from crane.dialects.tile_context import int_attr as _int
from crane.dialects.tile_context import ints_attr as _ints
from crane.ir.attributes import Attribute, DenseIntsAttr, IntAttr, StringAttr
from crane.ir.core import Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, OpSpec
from crane.ir.types import BufferType

_WINDOW = (Attr("offsets", DenseIntsAttr, optional=True, doc="start of the window in the buffer"),
           Attr("shape", DenseIntsAttr, optional=True, doc="the window moved (default: the buffer)"))


def _window_attrs(window: tuple[Sequence[int], Sequence[int]] | None) -> dict[str, Attribute]:
    if window is None:
        return {}
    offsets, shape = window
    return {"offsets": DenseIntsAttr(tuple(offsets)), "shape": DenseIntsAttr(tuple(shape))}


class _TransferOp(TileInstruction):
    """Shared by send and recv: a buffer (or a window of it) to or from a peer tile, by tag."""

    __slots__ = ()

    @property
    def buffer(self) -> Value:
        return self._operands[0]

    @property
    def buffer_shape(self) -> tuple[int, ...]:
        btype = self._operands[0].type
        return tuple(btype.shape) if isinstance(btype, BufferType) else ()

    @property
    def window(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(offsets, shape) of the box moved: the whole buffer unless the op names one."""
        shape = _ints(self, "shape")
        if not shape:
            full = self.buffer_shape
            return (0,) * len(full), full
        return _ints(self, "offsets") or (0,) * len(shape), shape

    @property
    def windowed(self) -> bool:
        return "shape" in self.attributes

    def _verify_window(self) -> None:
        if "offsets" in self.attributes and "shape" not in self.attributes:
            raise VerifyError("'offsets' needs a 'shape' (the window moved)")
        if not self.windowed:
            return
        offsets, shape = self.window
        bounds = self.buffer_shape
        inside = len(offsets) == len(shape) == len(bounds) and all(
            o >= 0 and n > 0 and o + n <= b for o, n, b in zip(offsets, shape, bounds, strict=True))
        if not inside:
            raise VerifyError(f"window at {list(offsets)} of shape {list(shape)} does not lie "
                              f"inside the buffer of shape {list(bounds)}")

    @property
    def peer(self) -> int:
        return _int(self, "peer")

    @property
    def tag(self) -> int:
        return _int(self, "tag")

    def verify_op(self) -> None:
        if self.peer == self.own_tile:
            raise VerifyError(f"tile {self.peer} cannot transfer to itself")
        self._verify_window()
        mesh = mesh_of(self)
        if mesh is not None:
            mesh.check_tile(self.peer, "peer")


class SendOp(_TransferOp):
    """``tile.send``: send a buffer to ``peer``; blocks until the matching recv takes it."""

    __slots__ = ()
    spec = OpSpec("tile.send", operands=(_BUFFER,),
                  attributes=(Attr("peer", IntAttr, doc="receiving tile"), Attr("tag", IntAttr),
                              Attr("route", DenseIntsAttr, optional=True,
                                   doc="tiles visited from sender to receiver, inclusive"),
                              *_WINDOW),
                  summary="NoC send of a buffer or a window of it")

    @classmethod
    def build(cls, buffer: Value, peer: int, tag: int, route: Sequence[int] | None = None,
              location: Location = UNKNOWN,
              window: tuple[Sequence[int], Sequence[int]] | None = None) -> SendOp:
        attrs: dict[str, Attribute] = {"peer": IntAttr(peer), "tag": IntAttr(tag),
                                       **_window_attrs(window)}
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
                  attributes=(Attr("peer", IntAttr, doc="sending tile"), Attr("tag", IntAttr),
                              *_WINDOW),
                  summary="NoC receive into a buffer or a window of it")

    @classmethod
    def build(cls, buffer: Value, peer: int, tag: int, location: Location = UNKNOWN,
              window: tuple[Sequence[int], Sequence[int]] | None = None) -> RecvOp:
        attrs: dict[str, Attribute] = {"peer": IntAttr(peer), "tag": IntAttr(tag),
                                       **_window_attrs(window)}
        op = cls.create(None, (buffer,), (), attrs, (), location)
        assert isinstance(op, RecvOp)
        return op




class BarrierOp(TileInstruction):
    """``tile.barrier``: wait until every listed tile reaches its barrier ``id``."""

    __slots__ = ()
    spec = OpSpec("tile.barrier",
                  attributes=(Attr("id", IntAttr), Attr("tiles", DenseIntsAttr, doc="participants"),
                              Attr("label", StringAttr, optional=True,
                                   doc="the phase it ends, e.g. 'conv1..conv3:state2'")),
                  summary="synchronise a group of tiles")

    @classmethod
    def build(cls, id: int, tiles: Sequence[int], location: Location = UNKNOWN,
              label: str = "") -> BarrierOp:
        attrs: dict[str, Attribute] = {"id": IntAttr(id), "tiles": DenseIntsAttr(tuple(tiles))}
        if label:
            attrs["label"] = StringAttr(label)
        op = cls.create(None, (), (), attrs, (), location)
        assert isinstance(op, BarrierOp)
        return op

    @property
    def label(self) -> str:
        attr = self.attributes.get("label")
        return attr.value if isinstance(attr, StringAttr) else ""

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
