"""Converters of the ops that cut, pick and pad: ``Slice``, ``Split``, the gathers and
``Pad``.

``Slice`` and ``Split`` are ``graph.slice`` ops, one per cut axis. A ``Slice`` with a step
``s > 1`` along an axis is exact with a reshape: the cut window of ``n * s`` elements
reshaped to ``(n, s)``, the one column kept sliced out, and the axis merged back.
Negative steps have no ``graph`` op. ``Gather`` of a constant 2-d table by integer ids is
``graph.embedding`` (the table its weight); ``Gather``, ``GatherElements`` and
``GatherND`` of an activation at constant indices are a slice and a reshape when they
pick one contiguous block of one axis in order (``crane.frontend.onnx.gathers``).
``Pad`` in ``constant`` mode is a ``concat`` with constant blocks (negative pads are
slices).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from crane.dialects.layers.values import numel
from crane.frontend.onnx.gathers import GATHERS, GatherError, as_slice, gather_parameter
from crane.frontend.onnx.ops_shape import activation_input, axes_of, clamp, reshaped
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.ir.core import Value
from crane.ir.types import TensorType


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
    x = activation_input(g, node)
    shape = shape_of(x)
    starts, ends = (_ints(g, node, k, what) for k, what in ((1, "starts"), (2, "ends")))
    axes = axes_of(g, node, len(shape), 3) or list(range(len(starts)))
    steps = _ints(g, node, 4, "steps") if node.input(4) else [1] * len(starts)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise node.error("starts, ends, axes and steps differ in length")
    if any(step <= 0 for step in steps):
        raise node.error(f"steps={steps}: Crane imports slices with positive steps only")
    cuts = [(axis, clamp(start, shape[axis]), clamp(end, shape[axis]))
            for axis, start, end in zip(axes, starts, ends, strict=True)]
    out = node.outputs[0]
    strided = [(axis, start, stop, step) for (axis, start, stop), step in zip(cuts, steps, strict=True) if step > 1]
    x = sliced(g, node, x, [c for c, step in zip(cuts, steps, strict=True) if step == 1],
               out if not strided else f"{out}.cut")
    for k, (axis, start, stop, step) in enumerate(strided):
        x = _every(g, node, x, (axis, start, stop), step, out if k == len(strided) - 1 else f"{out}.{axis}")
    g.bind(out, x)


def _every(g: GraphState, node: Node, x: Value, cut: tuple[int, int, int], step: int, name: str) -> Value:
    """Elements ``start, start + step, ...`` (below ``stop``) of one axis: a window of
    ``n * step`` elements holding them (the axis padded with zeros at its end when none
    fits), reshaped to ``(n, step)``, the kept column sliced, the axis merged back."""
    axis, start, stop = cut
    count = max(0, -(-(stop - start) // step))
    if count == 0:
        raise node.error(f"the slice {start}..{stop} by {step} of axis {axis} is empty")
    offset = max(0, start + count * step - shape_of(x)[axis])
    if offset > start or offset >= step:
        # no window of whole steps fits: pad the axis with zeros, which are never kept
        x = _pad_axis(g, node, x, axis, (0, offset), 0.0, f"{name}.padded")
        offset = 0
    shape = shape_of(x)
    window = sliced(g, node, x, [(axis, start - offset, start - offset + count * step)], f"{name}.window")
    split = (*shape[:axis], count, step, *shape[axis + 1:])
    grid = reshaped(g, node, window, split, name=f"{name}.grid")
    column = sliced(g, node, grid, [(axis + 1, offset, offset + 1)], f"{name}.column")
    return reshaped(g, node, column, (*shape[:axis], count, *shape[axis + 1:]), name=name)


def _ints(g: GraphState, node: Node, position: int, what: str) -> list[int]:
    if g.opset < 10 and what in node.attrs:
        return [int(v) for v in node.attrs[what]]
    return [int(v) for v in g.required_const(node, position, what).reshape(-1)]


def split(g: GraphState, node: Node) -> None:
    x = activation_input(g, node)
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
    gather_constant(g, node)


def gather_constant(g: GraphState, node: Node) -> None:
    """``Gather``, ``GatherElements`` or ``GatherND`` of an activation at constant indices:
    a slice of one axis and a reshape, when the indices pick such a block in order
    (``crane.frontend.onnx.gathers.as_slice``)."""
    indices = g.const(node.input(1))
    if indices is None:
        raise node.error("gathering from an activation by activation indices has no graph op")
    x = activation_input(g, node)
    shape = shape_of(x)
    try:
        positions = GATHERS[node.op_type](np.arange(numel(shape)).reshape(shape), indices,
                                          gather_parameter(node.op_type, dict(node.attrs)))
    except GatherError as problem:
        raise node.error(str(problem)) from None
    cut = as_slice(shape, positions)
    if cut is None:
        flat = [int(i) for i in positions.reshape(-1)[:8]]
        raise node.error(f"gathers elements {flat}... of an activation; Crane imports a gather that "
                         f"picks one contiguous block of one axis, in order, only")
    out = node.outputs[0]
    part = sliced(g, node, x, [cut], f"{out}.slice" if positions.shape != shape_of_cut(shape, cut) else out)
    g.bind(out, reshaped(g, node, part, tuple(int(d) for d in positions.shape)))


def shape_of_cut(shape: tuple[int, ...], cut: tuple[int, int, int]) -> tuple[int, ...]:
    axis, start, stop = cut
    return tuple(stop - start if k == axis else d for k, d in enumerate(shape))


def pad(g: GraphState, node: Node) -> None:
    """``Pad`` in ``constant`` mode: a ``concat`` with constant blocks of the pad value on
    each padded axis (exact); negative pads are slices."""
    x = activation_input(g, node)
    mode = str(node.attrs.get("mode", "constant"))
    if mode != "constant":
        raise node.error(f"mode='{mode}' has no graph op; Crane imports constant padding only")
    rank = len(shape_of(x))
    pads = [int(p) for p in (g.required_const(node, 1, "pads") if g.opset >= 11
                             else np.asarray(node.attrs.get("pads", []))).reshape(-1)]
    axes = axes_of(g, node, rank, 3) or list(range(rank))
    if len(pads) != 2 * len(axes):
        raise node.error(f"pads={pads} must hold 2 values per padded axis ({len(axes)} axes)")
    value = g.const(node.input(2)) if node.input(2) else np.array(node.attrs.get("value", 0.0))
    if value is None or value.size > 1:
        raise node.error("the pad value must be a constant scalar")
    fill = float(value.reshape(-1)[0]) if value.size else 0.0
    out = node.outputs[0]
    for k, axis in enumerate(axes):
        before, after = pads[k], pads[k + len(axes)]
        x = _pad_axis(g, node, x, axis, (before, after), fill, f"{out}.{axis}" if k < len(axes) - 1 else out)
    g.bind(out, x)


def _pad_axis(g: GraphState, node: Node, x: Value, axis: int, amounts: tuple[int, int], fill: float,
              name: str) -> Value:
    shape = shape_of(x)
    start, stop = max(-amounts[0], 0), shape[axis] - max(-amounts[1], 0)
    if start or stop != shape[axis]:
        x = sliced(g, node, x, [(axis, start, stop)], f"{name}.cut")
    parts = [x]
    for side, amount in enumerate(amounts):
        if amount <= 0:
            continue
        block = tuple(amount if k == axis else d for k, d in enumerate(shape_of(x)))
        weight = g.weight(f"{name}.{'before' if side == 0 else 'after'}",
                          np.full(block, fill, numpy_dtype(x)), node.location, node)
        parts.insert(0 if side == 0 else len(parts), weight)
    if len(parts) == 1:
        return x
    return g.layer(node, "concat", parts, attrs={"axis": axis}, name=name)


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
