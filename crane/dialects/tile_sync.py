"""Synchronisation instructions of the ``tile`` dialect: NoC send/recv and barriers.

A ``tile.send`` of tile ``a`` with ``peer = b, tag = t`` matches the ``tile.recv`` of tile ``b``
with ``peer = a, tag = t``; both move one whole buffer and block until the match. A
``tile.barrier`` lists every participating tile, its own included (see ``crane.dialects.tile``).
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.dialects.tile_context import BUFFER as _BUFFER
from crane.dialects.tile_context import TileInstruction, mesh_of
from crane.dialects.tile_context import int_attr as _int
from crane.dialects.tile_context import ints_attr as _ints
from crane.ir.attributes import Attribute, DenseIntsAttr, IntAttr
from crane.ir.core import Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, OpSpec


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
