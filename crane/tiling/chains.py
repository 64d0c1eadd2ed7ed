"""Find the spatial chains of a ``graph.func`` that the ``spatial-tile`` pass can split into patches.

A *chain* is a path of layer ops, each feeding only the next one, along which every op maps
an NCHW tensor to an NCHW tensor so that an output pixel depends on a bounded window of
input pixels of the same sample:

* ``graph.conv2d`` (any kernel, stride, dilation, padding, groups),
* ``graph.max_pool2d`` / ``graph.avg_pool2d`` without ``ceil_mode``,
* the activations (``graph.relu``, ``gelu``, ``silu``, ``sigmoid``, ``tanh``, ...).

Which kinds these are, and why every other kind ends a chain (batch norm: training-mode
statistics over the whole image; layer norm and softmax normalise along an axis; dropout's
mask is drawn for the whole tensor; global pooling reads the whole plane; ...), each kind
declares (``LayerKind.tiling``); :func:`why_not_tileable` reports it. Intermediate values of
a chain have exactly one user; the last op's result may have many.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from crane.dialects.graph import FuncOp, LayerOp
from crane.dialects.layers.definition import Spatial
from crane.ir.core import Value
from crane.ir.types import TensorType
from crane.tiling.layers import Layer, SpatialOp, Window

SPATIAL_OPS: Mapping[Spatial, SpatialOp] = {
    Spatial.POINTWISE: SpatialOp.RELU,
    Spatial.CONV: SpatialOp.CONV,
    Spatial.MAX_POOL: SpatialOp.MAX_POOL,
    Spatial.AVG_POOL: SpatialOp.AVG_POOL,
}
"""How tiling models each spatial role a kind declares (every activation as a ReLU: one
tensor saved, one pass over it)."""


@dataclass(frozen=True)
class Chain:
    """Layer ops ``ops[0] -> ... -> ops[-1]`` of one function, and their tiling layers."""

    ops: tuple[LayerOp, ...]
    layers: tuple[Layer, ...]

    @property
    def input(self) -> Value:
        """The chain's input value (what a segment starting at op 0 keeps)."""
        return self.ops[0].inputs[0]

    def hw(self, index: int) -> tuple[int, int]:
        """(H, W) of the input of op ``index`` (``index == len(ops)``: the chain output)."""
        value = self.ops[index].inputs[0] if index < len(self.ops) else self.ops[-1].results[0]
        shape = _nchw(value)
        assert shape is not None
        return shape[2], shape[3]


def _nchw(value: Value) -> tuple[int, ...] | None:
    """The shape of a 4-d floating-point tensor, else None."""
    ttype = value.type
    if not isinstance(ttype, TensorType) or len(ttype.shape) != 4 or not ttype.element.is_float:
        return None
    return ttype.shape


def why_not_tileable(op: LayerOp) -> str | None:
    """None if ``op`` can sit in a chain, else why it cannot (for remarks and docs)."""
    tiling = op.kind.tiling
    if tiling.spatial is None:
        return tiling.reason
    if len(op.inputs) != 1 or _nchw(op.inputs[0]) is None or _nchw(op.results[0]) is None:
        return "its input is not one 4-d floating-point NCHW tensor"
    if op.layer_attrs.get("ceil_mode") is True:
        return "ceil_mode pools are not tiled"
    return None


def to_layer(op: LayerOp) -> Layer:
    """The tiling description of a tileable op (its window and channel counts)."""
    attrs = op.layer_attrs
    in_shape, out_shape = _nchw(op.inputs[0]), _nchw(op.results[0])
    assert in_shape is not None and out_shape is not None
    channels_in, channels_out = in_shape[1], out_shape[1]
    spatial = op.kind.tiling.spatial
    assert spatial is not None, "to_layer of an op that ends chains"
    if spatial is Spatial.POINTWISE:
        return Layer(SPATIAL_OPS[spatial], channels_in, channels_out, Window.identity())
    window = Window(kernel=_pair(attrs["kernel"]), stride=_pair(attrs["stride"]),
                    dilation=_pair(attrs.get("dilation", (1, 1))), padding=_pad4(attrs["padding"]))
    if spatial is Spatial.CONV:
        groups = channels_in if attrs.get("depthwise") else int(attrs.get("groups", 1))  # type: ignore[arg-type]
        # Per-group input channels: the weight count and MACs are then exact.
        return Layer(SPATIAL_OPS[spatial], channels_in // groups, channels_out, window, bool(attrs.get("bias")))
    return Layer(SPATIAL_OPS[spatial], channels_in, channels_out, window)


def find_chains(func: FuncOp, min_ops: int = 1) -> list[Chain]:
    """The maximal chains of ``func`` in program order (of their first op)."""
    chains: list[Chain] = []
    for op in func.body.ops:
        if not isinstance(op, LayerOp) or why_not_tileable(op) is not None or _continues(op):
            continue
        ops = _follow(op)
        if len(ops) >= min_ops:
            chains.append(Chain(tuple(ops), tuple(to_layer(o) for o in ops)))
    return chains


def _continues(op: LayerOp) -> bool:
    """Whether ``op`` extends a chain started by the op that produces its input."""
    producer = op.inputs[0].owner_op
    return (isinstance(producer, LayerOp) and why_not_tileable(producer) is None
            and _sole_user(producer) is op)


def _sole_user(op: LayerOp) -> LayerOp | None:
    """The op's only user, if it has exactly one use and it is a tileable op reading input 0."""
    uses = op.results[0].uses
    if len(uses) != 1:
        return None
    user = uses[0].owner
    if not isinstance(user, LayerOp) or uses[0].index != 0 or why_not_tileable(user) is not None:
        return None
    return user


def _follow(first: LayerOp) -> list[LayerOp]:
    ops = [first]
    nxt = _sole_user(first)
    while nxt is not None:
        ops.append(nxt)
        nxt = _sole_user(nxt)
    return ops


def _pair(value: object) -> tuple[int, int]:
    assert isinstance(value, Sequence)
    return int(value[0]), int(value[1])


def _pad4(value: object) -> tuple[int, int, int, int]:
    assert isinstance(value, Sequence) and len(value) == 4
    return int(value[0]), int(value[1]), int(value[2]), int(value[3])
