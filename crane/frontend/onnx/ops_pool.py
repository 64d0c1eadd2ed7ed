"""Converters of the pools: ``MaxPool``, ``AveragePool``, ``GlobalAveragePool``,
``GlobalMaxPool``, and of ``ReduceMean``.

ONNX strides default to 1 (``graph`` pools default to the kernel), so strides are always
given. ``graph.avg_pool2d`` divides by the real (unpadded) pixels of a window, ONNX's
default ``count_include_pad=0``. With ``count_include_pad=1`` ONNX divides by the window's
pixels inside the padded image instead; that is the ``graph`` average times
``real / padded`` pixels per output position, a constant map multiplied in (weight
``<y>.include_pad``, shaped ``(OH, OW)``), within one rounding of ONNX's quotient.
``GlobalMaxPool`` is a ``graph.max_pool2d`` whose window is the whole image.

``ReduceMean`` over H and W of an NCHW tensor (how the dynamo exporter writes
``AdaptiveAvgPool2d(1)`` and TorchScript ``x.mean([2, 3])``) is a ``global_avg_pool``
(then a ``reshape`` without ``keepdims``). Over the trailing axes of any tensor it is a
``linear`` with one output whose weight is ``1 / n`` (``<y>.mean``), after a ``reshape``
merging those axes: the same mean, summed in another order. Other axes have no ``graph``
op.
"""

from __future__ import annotations

import numpy as np

from crane.dialects.layers.values import AttrValue
from crane.frontend.onnx.ops_shape import raw_axes, reshaped
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.frontend.onnx.windows import padding, pair, require_4d
from crane.ir.core import Value


def _input(g: GraphState, node: Node) -> Value:
    x = g.activation(node, node.input(0))
    if x is None:
        raise node.error("the input is a constant")
    require_4d(node, shape_of(x))
    return x


def _window(node: Node, x: Value) -> dict[str, AttrValue]:
    shape = shape_of(x)
    kernel = pair(node, "kernel_shape", 0)
    if min(kernel) <= 0:
        raise node.error("kernel_shape is missing or not positive")
    if pair(node, "dilations", 1) != (1, 1):
        raise node.error(f"dilations={list(pair(node, 'dilations', 1))}: Crane's pools take no dilation")
    stride = pair(node, "strides", 1)
    pad = padding(node, (shape[2], shape[3]), kernel, stride, (1, 1))
    return {"kernel": kernel, "stride": stride, "padding": pad, "ceil_mode": bool(node.attrs.get("ceil_mode", 0))}


def max_pool(g: GraphState, node: Node) -> None:
    if len(node.outputs) > 1 and node.outputs[1] and g.consumers.get(node.outputs[1], 0):
        raise node.error(f"output '{node.outputs[1]}' (the argmax indices) is used; Crane imports only "
                         f"the pooled values")
    if int(node.attrs.get("storage_order", 0)):
        raise node.error("storage_order=1 is not supported")
    x = _input(g, node)
    g.bind(node.outputs[0], g.layer(node, "max_pool2d", [x], attrs=_window(node, x)))


def average_pool(g: GraphState, node: Node) -> None:
    x = _input(g, node)
    attrs = _window(node, x)
    out = node.outputs[0]
    include = bool(int(node.attrs.get("count_include_pad", 0))) and attrs["padding"] != (0, 0, 0, 0)
    pooled = g.layer(node, "avg_pool2d", [x], attrs=attrs, name=f"{out}.excluding_pad" if include else None)
    if not include:
        g.bind(out, pooled)
        return
    shape = shape_of(x)
    out_hw = shape_of(pooled)[2:4]
    kernel, stride, padding = attrs["kernel"], attrs["stride"], attrs["padding"]
    assert isinstance(kernel, tuple) and isinstance(stride, tuple) and isinstance(padding, tuple)
    rows = _counts(shape[2], out_hw[0], int(kernel[0]), int(stride[0]), (int(padding[0]), int(padding[1])))
    cols = _counts(shape[3], out_hw[1], int(kernel[1]), int(stride[1]), (int(padding[2]), int(padding[3])))
    ratio = (np.outer(rows[0], cols[0]) / np.outer(rows[1], cols[1])).astype(numpy_dtype(x))
    if np.all(ratio == 1):
        g.bind(out, pooled)
        return
    weight = g.weight(f"{out}.include_pad", ratio, node.location, node)
    g.bind(out, g.layer(node, "mul", [pooled, weight]))


def _counts(size: int, outputs: int, kernel: int, stride: int, pads: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Per output position along one axis: the window's real pixels, and its pixels
    inside the padded axis (ONNX's ``count_include_pad`` divisor)."""
    starts = np.arange(outputs) * stride - pads[0]
    ends = starts + kernel
    real = np.minimum(ends, size) - np.maximum(starts, 0)
    padded = np.minimum(ends, size + pads[1]) - np.maximum(starts, -pads[0])
    return real.astype(np.float64), padded.astype(np.float64)


def reduce_mean(g: GraphState, node: Node) -> None:
    x = g.activation(node, node.input(0))
    assert x is not None  # all-constant nodes are folded before conversion
    shape = shape_of(x)
    rank = len(shape)
    axes = _reduced_axes(g, node, rank)
    keep = bool(int(node.attrs.get("keepdims", 1)))
    out = node.outputs[0]
    kept = tuple(1 if k in axes else d for k, d in enumerate(shape))
    final = kept if keep else tuple(d for k, d in enumerate(shape) if k not in axes)
    if not axes:
        g.bind(out, x)
        return
    if rank == 4 and set(axes) == {2, 3}:
        pooled = g.layer(node, "global_avg_pool", [x], name=out if keep else f"{out}.pooled")
        g.bind(out, reshaped(g, node, pooled, final))
        return
    if sorted(axes) != list(range(rank - len(axes), rank)):
        raise node.error(f"ReduceMean over axes {sorted(axes)} of a rank-{rank} tensor has no graph op; "
                         f"Crane imports means over H and W of NCHW, or over trailing axes")
    width = int(np.prod([shape[k] for k in axes]))
    merged = reshaped(g, node, x, (*shape[:rank - len(axes)], width), name=f"{out}.merged")
    weight = g.weight(f"{out}.mean", np.full((width, 1), 1.0 / width, numpy_dtype(x)), node.location, node)
    mean = g.layer(node, "linear", [merged], [weight], {"out": 1, "bias": False},
                   name=out if final == shape_of(merged)[:-1] + (1,) else f"{out}.sum")
    g.bind(out, reshaped(g, node, mean, final))


def _reduced_axes(g: GraphState, node: Node, rank: int) -> list[int]:
    """The axes reduced: the ``axes`` input (opset 18) or attribute, all when none are given
    (none with ``noop_with_empty_axes``)."""
    raw = raw_axes(g, node)
    if not raw:
        return [] if int(node.attrs.get("noop_with_empty_axes", 0)) else list(range(rank))
    for axis in raw:
        if not -rank <= axis < rank:
            raise node.error(f"axis {axis} is out of range for rank {rank}")
    return sorted({a % rank for a in raw})


def global_average_pool(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], g.layer(node, "global_avg_pool", [_input(g, node)]))


def global_max_pool(g: GraphState, node: Node) -> None:
    x = _input(g, node)
    size = shape_of(x)[2:4]
    attrs: dict[str, AttrValue] = {"kernel": size, "stride": size, "padding": (0, 0, 0, 0), "ceil_mode": False}
    g.bind(node.outputs[0], g.layer(node, "max_pool2d", [x], attrs=attrs))
