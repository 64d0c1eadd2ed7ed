"""Converters of the data-movement ops on activations.

``Reshape``, ``Flatten``, ``Squeeze`` and ``Unsqueeze`` are ``graph.reshape`` (``graph.flatten``
for the usual ``Flatten(axis=1)``) to the concrete target shape, or nothing when the shape
does not change; ``Transpose`` is ``graph.transpose``; ``Concat`` is ``graph.concat``
(constant parts become weights); ``Slice`` with unit steps and ``Split`` are
``graph.slice`` ops, one per cut axis; ``Gather`` of a constant 2-d table by integer ids is
``graph.embedding`` (the table its weight), and ``Gather`` of an activation at a constant
index or contiguous range is a slice. ``Identity``, inference ``Dropout`` and integer
``Cast`` pass their input on; ``Shape`` and ``Size`` of an activation are constants (its
shape is static), so the shape arithmetic after them folds away.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crane.dialects.layers.values import numel
from crane.frontend.onnx.reader import ELEMENT_TYPES, Node
from crane.frontend.onnx.state import GraphState, shape_of
from crane.ir.core import Value
from crane.ir.types import TensorType


def _x(g: GraphState, node: Node) -> Value:
    x = g.activation(node, node.input(0))
    assert x is not None  # all-constant nodes are folded before conversion
    return x


def _axes(g: GraphState, node: Node, rank: int, position: int = 1) -> list[int] | None:
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
    x = _x(g, node)
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
    x = _x(g, node)
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
    x = _x(g, node)
    shape = shape_of(x)
    axes = _axes(g, node, len(shape))
    if axes is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    for axis in axes:
        if shape[axis] != 1:
            raise node.error(f"cannot squeeze axis {axis} of size {shape[axis]}")
    g.bind(node.outputs[0], reshaped(g, node, x, tuple(d for i, d in enumerate(shape) if i not in axes)))


def unsqueeze(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    shape = list(shape_of(x))
    raw = raw_axes(g, node)
    if raw is None:
        raise node.error("the axes are missing")
    axes = _axes(g, node, len(shape) + len(raw))
    assert axes is not None
    for axis in sorted(axes):
        shape.insert(axis, 1)
    g.bind(node.outputs[0], reshaped(g, node, x, tuple(shape)))


def transpose(g: GraphState, node: Node) -> None:
    x = _x(g, node)
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


def sliced(g: GraphState, node: Node, x: Value, cuts: Sequence[tuple[int, int, int]], name: str) -> Value:
    """``x`` cut to ``start..stop`` along each ``(axis, start, stop)`` (whole axes skipped)."""
    for k, (axis, start, stop) in enumerate(cuts):
        if (start, stop) == (0, shape_of(x)[axis]):
            continue
        if start >= stop:
            raise node.error(f"the slice {start}..{stop} of axis {axis} is empty")
        last = all((s, e) == (0, shape_of(x)[a]) for a, s, e in cuts[k + 1:])
        x = g.layer(node, "slice", [x], attrs={"axis": axis, "start": start, "stop": stop},
                    name=name if last else f"{name}.{axis}")
    return x


def slice_(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    shape = shape_of(x)
    starts, ends = (_ints(g, node, k, what) for k, what in ((1, "starts"), (2, "ends")))
    axes = _axes(g, node, len(shape), 3) or list(range(len(starts)))
    steps = _ints(g, node, 4, "steps") if node.input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    if any(step != 1 for step in steps):
        raise node.error(f"steps={steps}: Crane's slice takes unit steps only")
    cuts = [(axis, _clamp(start, shape[axis]), _clamp(end, shape[axis]))
            for axis, start, end in zip(axes, starts, ends, strict=True)]
    g.bind(node.outputs[0], sliced(g, node, x, cuts, node.outputs[0]))


def _ints(g: GraphState, node: Node, position: int, what: str) -> list[int]:
    if g.opset < 10 and what in node.attrs:
        return [int(v) for v in node.attrs[what]]
    return [int(v) for v in g.required_const(node, position, what).reshape(-1)]


def _clamp(index: int, size: int) -> int:
    return min(max(index + size if index < 0 else index, 0), size)


def split(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    shape = shape_of(x)
    axis = int(node.attrs.get("axis", 0)) % len(shape)
    outputs = list(node.outputs)
    sizes = _split_sizes(g, node, shape[axis], len(outputs))
    start = 0
    for name, size in zip(outputs, sizes, strict=True):
        if name:
            g.bind(name, sliced(g, node, x, [(axis, start, start + size)], name))
        start += size


def _split_sizes(g: GraphState, node: Node, total: int, count: int) -> list[int]:
    given = g.const(node.input(1)) if node.input(1) else node.attrs.get("split")
    if given is not None:
        sizes = [int(s) for s in np.asarray(given).reshape(-1)]
    else:
        chunk = -(-total // count)
        sizes = [min(chunk, total - k * chunk) for k in range(count)]
    if len(sizes) != count or sum(sizes) != total or min(sizes) <= 0:
        raise node.error(f"cannot split {total} elements into {sizes} for {count} outputs")
    return sizes


def gather(g: GraphState, node: Node) -> None:
    data_name, ids_name = node.input(0), node.input(1)
    table, ids = g.const(data_name), g.activation(node, ids_name)
    axis = int(node.attrs.get("axis", 0))
    if table is not None and ids is not None:
        g.bind(node.outputs[0], _embedding(g, node, table, ids, axis))
        return
    indices = g.const(ids_name)
    if indices is None:
        raise node.error("gathering from an activation by activation indices has no graph op")
    g.bind(node.outputs[0], _gather_constant(g, node, _x(g, node), indices, axis))


def _embedding(g: GraphState, node: Node, table: np.ndarray, ids: Value, axis: int) -> Value:
    if table.ndim != 2 or axis not in (0, -2):
        raise node.error(f"an embedding lookup needs a 2-d table gathered along axis 0, got a "
                         f"{table.ndim}-d table and axis {axis}")
    element = ids.type.element if isinstance(ids.type, TensorType) else None
    if element is None or element.is_float:
        raise node.error("the indices of an embedding lookup must be integers")
    weight = g.weight(node.input(0), table, node.location, node)
    vocab, dim = (int(d) for d in table.shape)
    dtype = "f16" if table.dtype == np.float16 else "f32"
    return g.layer(node, "embedding", [ids], [weight], {"vocab": vocab, "dim": dim, "dtype": dtype})


def _gather_constant(g: GraphState, node: Node, x: Value, indices: np.ndarray, axis: int) -> Value:
    shape = shape_of(x)
    if not -len(shape) <= axis < len(shape):
        raise node.error(f"axis={axis} is out of range for rank {len(shape)}")
    axis %= len(shape)
    flat = [int(i) + shape[axis] if int(i) < 0 else int(i) for i in indices.reshape(-1)]
    if not flat or flat != list(range(flat[0], flat[0] + len(flat))) or not 0 <= flat[0] <= flat[-1] < shape[axis]:
        raise node.error(f"gathers indices {flat[:8]} of an activation; Crane imports a single index "
                         f"or a contiguous range only")
    out = node.outputs[0]
    part = sliced(g, node, x, [(axis, flat[0], flat[-1] + 1)], f"{out}.slice" if indices.ndim != 1 else out)
    target = (*shape[:axis], *indices.shape, *shape[axis + 1:])
    return reshaped(g, node, part, tuple(int(d) for d in target))


def identity(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], _x(g, node))


def dropout(g: GraphState, node: Node) -> None:
    training = g.const(node.input(2)) if node.input(2) else None
    if training is not None and bool(np.asarray(training).reshape(-1)[0]):
        raise node.error("training_mode=true: Crane imports inference dropout (the identity)")
    if len(node.outputs) > 1 and node.outputs[1] and g.consumers.get(node.outputs[1], 0):
        raise node.error("the dropout mask is used; Crane imports inference dropout only")
    g.bind(node.outputs[0], _x(g, node))


_CRANE_DTYPES = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i8": "int8", "i32": "int32", "i64": "int64"}


def cast(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    target = ELEMENT_TYPES.get(int(node.attrs.get("to", 0)))
    assert isinstance(x.type, TensorType)
    source = _CRANE_DTYPES.get(x.type.element.name, x.type.element.name)
    integers = {source, target} <= {"int8", "int32", "int64"}
    if target != source and not integers:
        raise node.error(f"casting an activation of {source} to {target or node.attrs.get('to')} is not "
                         f"supported (only integer-to-integer casts of indices pass through)")
    g.bind(node.outputs[0], x)


def shape(g: GraphState, node: Node) -> None:
    dims = shape_of(_x(g, node))
    rank = len(dims)
    start, end = int(node.attrs.get("start", 0)), int(node.attrs.get("end", rank))
    g.bind(node.outputs[0], np.array(dims[_clamp(start, rank):_clamp(end, rank)], np.int64))


def size(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], np.array(numel(shape_of(_x(g, node))), np.int64))
