"""Converters of the data-movement ops on activations that keep every element.

``Reshape``, ``Flatten``, ``Squeeze`` and ``Unsqueeze`` are ``graph.reshape`` (``graph.flatten``
for the usual ``Flatten(axis=1)``) to the concrete target shape, or nothing when the shape
does not change; ``Transpose`` is ``graph.transpose``; ``Concat`` is ``graph.concat``
(constant parts become weights); ``Expand`` is an ``add`` of zeros shaped to broadcast to
the target (weight ``<y>.zeros``). ``Identity``, inference ``Dropout`` and integer
``Cast`` pass their input on (casts to and of booleans: ``crane.frontend.onnx.ops_mask``);
``Shape`` and ``Size`` of an activation are constants (its shape is static), so the shape
arithmetic after them folds away. The ops that cut and pad are in
``crane.frontend.onnx.ops_slice``.
"""

from __future__ import annotations

import numpy as np

from crane.dialects.layers.values import numel
from crane.frontend.onnx.ops_mask import BOOL, cast_boolean, cast_to_bool
from crane.frontend.onnx.reader import ELEMENT_TYPES, Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.ir.core import Value
from crane.ir.types import TensorType


def activation_input(g: GraphState, node: Node) -> Value:
    x = g.activation(node, node.input(0))
    assert x is not None  # all-constant nodes are folded before conversion
    return x


def axes_of(g: GraphState, node: Node, rank: int, position: int = 1) -> list[int] | None:
    """An ``axes`` attribute (old opsets) or constant input (new ones), made non-negative
    for a tensor of ``rank``; None when the node gives none."""
    raw = raw_axes(g, node, position)
    if raw is None:
        return None
    for axis in raw:
        if not -rank <= axis < rank:
            raise node.error(f"axis {axis} is out of range for rank {rank}")
    return [a % rank for a in raw]


def raw_axes(g: GraphState, node: Node, position: int = 1) -> list[int] | None:
    """The axes as written: a constant input, else the ``axes`` attribute, else None."""
    if node.input(position):
        array = g.const(node.input(position))
        if array is None:
            raise node.error("the axes must be a constant")
        return [int(a) for a in np.asarray(array).reshape(-1)]
    if "axes" in node.attrs:
        return [int(a) for a in node.attrs["axes"]]
    return None


def reshaped(g: GraphState, node: Node, x: Value, shape: tuple[int, ...], name: str | None = None) -> Value:
    """``x`` with a new shape (itself when the shape is unchanged)."""
    if shape == shape_of(x):
        return x
    return g.layer(node, "reshape", [x], attrs={"shape": shape}, name=name)


def reshape(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    target = g.required_const(node, 1, "shape")
    source = shape_of(x)
    dims = [int(d) for d in target.reshape(-1)]
    if not int(node.attrs.get("allowzero", 0)):
        dims = [source[i] if d == 0 and i < len(source) else d for i, d in enumerate(dims)]
    if dims.count(-1) > 1 or any(d < -1 for d in dims):
        raise node.error(f"shape {dims} may hold at most one -1 and no other negative size")
    known = numel(tuple(d for d in dims if d != -1))
    if -1 in dims and known and numel(source) % known == 0:
        dims = [numel(source) // known if d == -1 else d for d in dims]
    if numel(tuple(dims)) != numel(source) or -1 in dims:
        raise node.error(f"cannot reshape {list(source)} ({numel(source)} elements) to "
                         f"{[int(d) for d in target.reshape(-1)]}")
    g.bind(node.outputs[0], reshaped(g, node, x, tuple(dims)))


def flatten(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    shape = shape_of(x)
    axis = int(node.attrs.get("axis", 1))
    if not -len(shape) <= axis <= len(shape):
        raise node.error(f"axis={axis} is out of range for rank {len(shape)}")
    axis %= len(shape) + 1
    target = (numel(shape[:axis]), numel(shape[axis:]))
    if axis == 1 and len(shape) > 2:
        g.bind(node.outputs[0], g.layer(node, "flatten", [x], attrs={"start": 1}))
        return
    g.bind(node.outputs[0], reshaped(g, node, x, target))


def squeeze(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    shape = shape_of(x)
    axes = axes_of(g, node, len(shape))
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    for axis in axes:
        if shape[axis] != 1:
            raise node.error(f"cannot squeeze axis {axis} of size {shape[axis]}")
    g.bind(node.outputs[0], reshaped(g, node, x, tuple(d for i, d in enumerate(shape) if i not in axes)))


def unsqueeze(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    shape = list(shape_of(x))
    raw = raw_axes(g, node)
    if raw is None:
        raise node.error("the axes are missing")
    axes = axes_of(g, node, len(shape) + len(raw))
    assert axes is not None
    for axis in sorted(axes):
        shape.insert(axis, 1)
    g.bind(node.outputs[0], reshaped(g, node, x, tuple(shape)))


def transpose(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    rank = len(shape_of(x))
    perm = tuple(int(p) for p in node.attrs.get("perm", range(rank - 1, -1, -1)))
    if perm == tuple(range(rank)):
        g.bind(node.outputs[0], x)
        return
    g.bind(node.outputs[0], g.layer(node, "transpose", [x], attrs={"perm": perm}))


def concat(g: GraphState, node: Node) -> None:
    parts = [g.tensor(node, name) for name in node.inputs if name]
    if len(parts) == 1:
        g.bind(node.outputs[0], parts[0])
        return
    axis = int(node.attrs.get("axis", 0))
    g.bind(node.outputs[0], g.layer(node, "concat", parts, attrs={"axis": axis}))


def clamp(index: int, size: int) -> int:
    return min(max(index + size if index < 0 else index, 0), size)


def expand(g: GraphState, node: Node) -> None:
    """``Expand(x, shape)``: ``x + zeros`` broadcast to the target (exact), nothing when
    the shape does not change."""
    x = activation_input(g, node)
    target = [int(d) for d in g.required_const(node, 1, "shape").reshape(-1)]
    source = shape_of(x)
    try:
        full = tuple(int(d) for d in np.broadcast_shapes(source, tuple(target)))
    except ValueError:
        raise node.error(f"cannot expand {list(source)} to {target}") from None
    if full == source:
        g.bind(node.outputs[0], x)
        return
    aligned = (1,) * (len(full) - len(source)) + source
    filler = tuple(1 if a == f else f for a, f in zip(aligned, full, strict=True))
    zeros = g.weight(f"{node.outputs[0]}.zeros", np.zeros(filler, numpy_dtype(x)), node.location, node)
    g.bind(node.outputs[0], g.layer(node, "add", [x, zeros]))


def identity(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], activation_input(g, node))


def dropout(g: GraphState, node: Node) -> None:
    training = g.const(node.input(2)) if node.input(2) else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise node.error("training_mode=true: Crane imports inference dropout (the identity)")
    if len(node.outputs) > 1 and node.outputs[1] and g.consumers.get(node.outputs[1], 0):
        raise node.error("the dropout mask is used; Crane imports inference dropout only")
    g.bind(node.outputs[0], activation_input(g, node))


_CRANE_DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i8": "int8", "i32": "int32", "i64": "int64"}


def cast(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
    if cast_boolean(g, node, x):
        return
    if int(node.attrs.get("to", 0)) == BOOL:
        cast_to_bool(g, node, x)
        return
    target = ELEMENT_TYPES.get(int(node.attrs.get("to", 0)))
    assert isinstance(x.type, TensorType)
    source = _CRANE_DTYPES.get(x.type.element.name, x.type.element.name)
    integers = {source, target} <= {"int8", "int32", "int64"}
    if target != source and not integers:
        raise node.error(f"casting an activation of {source} to {target or node.attrs.get('to')} is not "
                         f"supported (only integer-to-integer casts of indices pass through)")
    g.bind(node.outputs[0], x)


def shape(g: GraphState, node: Node) -> None:
    dims = shape_of(activation_input(g, node))
    rank = len(dims)
    start, end = int(node.attrs.get("start", 0)), int(node.attrs.get("end", rank))
    g.bind(node.outputs[0], np.array(dims[clamp(start, rank):clamp(end, rank)], np.int64))


def size(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], np.array(numel(shape_of(activation_input(g, node))), np.int64))
