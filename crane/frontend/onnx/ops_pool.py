"""Converters of the pools: ``MaxPool``, ``AveragePool``, ``GlobalAveragePool``,
``GlobalMaxPool``.

ONNX strides default to 1 (``graph`` pools default to the kernel), so strides are always
given. ``graph.avg_pool2d`` divides by the real (unpadded) pixels of a window, ONNX's
default ``count_include_pad=0``; ``count_include_pad=1`` imports only without padding.
``GlobalMaxPool`` is a ``graph.max_pool2d`` whose window is the whole image.
"""

from __future__ import annotations

from crane.dialects.layers.values import AttrValue
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, shape_of
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
    if int(node.attrs.get("count_include_pad", 0)) and attrs["padding"] != (0, 0, 0, 0):
        raise node.error("count_include_pad=1 with padding: Crane's average pool divides by the "
                         "unpadded window only")
    g.bind(node.outputs[0], g.layer(node, "avg_pool2d", [x], attrs=attrs))


def global_average_pool(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], g.layer(node, "global_avg_pool", [_input(g, node)]))


def global_max_pool(g: GraphState, node: Node) -> None:
    x = _input(g, node)
    size = shape_of(x)[2:4]
    attrs: dict[str, AttrValue] = {"kernel": size, "stride": size, "padding": (0, 0, 0, 0), "ceil_mode": False}
    g.bind(node.outputs[0], g.layer(node, "max_pool2d", [x], attrs=attrs))
