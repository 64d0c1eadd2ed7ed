"""Converters of the weight-carrying ONNX operators: ``Conv``, ``Gemm`` and ``MatMul``.

* ``Conv`` (4-d NCHW input, constant kernel and bias) is ``graph.conv2d`` with its
  ``groups``, any number of them; one group per channel is also marked ``depthwise``.
* ``Gemm`` is ``graph.linear`` with weight ``alpha * B`` in ``(in, out)`` layout (named
  ``<B>.T`` when ``transB`` transposed it, ``<B>.scaled`` when ``alpha != 1``) and bias
  ``beta * C`` when ``C`` is a per-column constant; any other ``C`` is a ``graph.add``.
* ``MatMul`` by a constant 2-d matrix is ``graph.linear`` without bias (a following
  ``Add`` of a per-column constant becomes its bias, see :func:`fuse_linear_bias`); any
  other ``MatMul`` is a ``graph.matmul`` (batched, broadcasting like numpy).
"""

from __future__ import annotations

import numpy as np

from crane.dialects.graph import LayerOp, WeightOp
from crane.dialects.layers.values import AttrValue
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, shape_of
from crane.frontend.onnx.windows import padding, pair, require_4d
from crane.ir.core import Value
from crane.ir.location import FusedLoc


def conv(g: GraphState, node: Node) -> None:
    x = _activation(g, node, 0, "data input")
    kernel = g.required_const(node, 1, "kernel")
    shape = shape_of(x)
    require_4d(node, shape)
    if kernel.ndim != 4:
        raise node.error(f"the kernel must be 4-d (O, I/groups, kH, kW), got shape {list(kernel.shape)}")
    out, _, kh, kw = (int(d) for d in kernel.shape)
    declared = node.attrs.get("kernel_shape")
    if declared is not None and tuple(declared) != (kh, kw):
        raise node.error(f"kernel_shape={list(declared)} does not match the kernel's {[kh, kw]}")
    groups = int(node.attrs.get("group", 1))
    stride, dilation = pair(node, "strides", 1), pair(node, "dilations", 1)
    weights = [g.weight(node.input(1), kernel, node.location, node)]
    bias = None
    if node.input(2):
        bias = g.required_const(node, 2, "bias")
        weights.append(g.weight(node.input(2), bias.reshape(out), node.location, node))
    depthwise = groups > 1 and groups == shape[1] == out
    attrs: dict[str, AttrValue] = {"out": out, "kernel": (kh, kw), "stride": stride, "dilation": dilation,
             "padding": padding(node, (shape[2], shape[3]), (kh, kw), stride, dilation),
             "groups": groups, "depthwise": depthwise, "bias": bias is not None}
    g.bind(node.outputs[0], g.layer(node, "conv2d", [x], weights, attrs))


def gemm(g: GraphState, node: Node) -> None:
    a = _activation(g, node, 0, "A input")
    if len(shape_of(a)) != 2:
        raise node.error(f"A must be 2-d, got shape {list(shape_of(a))}")
    if int(node.attrs.get("transA", 0)):
        a = g.layer(node, "transpose", [a], attrs={"perm": (1, 0)}, name=f"{node.outputs[0]}.a")
    b = g.required_const(node, 1, "B matrix")
    if b.ndim != 2:
        raise node.error(f"B must be 2-d, got shape {list(b.shape)}")
    name, matrix = node.input(1), b
    if int(node.attrs.get("transB", 0)):
        name, matrix = f"{name}.T", np.ascontiguousarray(b.T)
    alpha, beta = float(node.attrs.get("alpha", 1.0)), float(node.attrs.get("beta", 1.0))
    if alpha != 1.0:
        name, matrix = f"{name}.scaled", (alpha * matrix.astype(np.float64)).astype(b.dtype)
    columns = int(matrix.shape[1])
    weight = g.weight(name, matrix, node.location, node)
    c_name = node.input(2)
    c = g.const(c_name)
    if c is not None and c.size == columns and c.shape[-1:] == (columns,) and c.ndim <= 2:
        bias_name, vector = c_name, c.reshape(columns)
        if beta != 1.0:
            bias_name, vector = f"{c_name}.scaled", (beta * vector.astype(np.float64)).astype(c.dtype)
        bias = g.weight(bias_name, vector, node.location, node)
        g.bind(node.outputs[0], g.layer(node, "linear", [a], [weight, bias], {"out": columns, "bias": True}))
        return
    y = g.layer(node, "linear", [a], [weight], {"out": columns, "bias": False},
                name=f"{node.outputs[0]}.ab" if c_name else None)
    if c_name:
        y = g.layer(node, "add", [y, _scaled_c(g, node, c_name, c, beta)])
    g.bind(node.outputs[0], y)


def _scaled_c(g: GraphState, node: Node, name: str, c: np.ndarray | None, beta: float) -> Value:
    if c is None:
        if beta != 1.0:
            raise node.error(f"beta={beta} scales an activation C; Crane only imports beta=1 then")
        return g.tensor(node, name)
    if beta == 1.0:
        return g.weight(name, c, node.location, node)
    return g.weight(f"{name}.scaled", (beta * c.astype(np.float64)).astype(c.dtype), node.location, node)


def matmul(g: GraphState, node: Node) -> None:
    a_name, b_name = node.input(0), node.input(1)
    a, b = g.activation(node, a_name), g.const(b_name)
    if a is not None and b is not None and b.ndim == 2 and len(shape_of(a)) >= 2:
        weight = g.weight(b_name, b, node.location, node)
        out = int(b.shape[1])
        g.bind(node.outputs[0], g.layer(node, "linear", [a], [weight], {"out": out, "bias": False}))
        return
    left, right = g.tensor(node, a_name), g.tensor(node, b_name)
    for value, label in ((left, "A"), (right, "B")):
        if len(shape_of(value)) < 2:
            raise node.error(f"{label} is {len(shape_of(value))}-d; Crane imports MatMul of operands "
                             f"of rank >= 2")
    g.bind(node.outputs[0], g.layer(node, "matmul", [left, right], attrs={"transpose_b": False}))


def fuse_linear_bias(g: GraphState, node: Node, x_name: str, c_name: str) -> bool:
    """``Add(MatMul(x, W), c)`` with ``c`` a per-column constant: the linear takes ``c`` as
    its bias (the same sum, one layer). Returns whether it fused."""
    x, c = g.values.get(x_name), g.const(c_name)
    op = x.owner_op if x is not None else None
    if c is None or not isinstance(op, LayerOp) or op.kind.name != "linear" or not g.exclusive(x_name):
        return False
    assert x is not None
    attrs = op.layer_attrs
    out = int(attrs["out"])  # type: ignore[arg-type]
    if attrs["bias"] or c.size != out or c.shape[-1:] != (out,) or c.ndim > len(shape_of(x)):
        return False
    weight = op.weights[0]
    bias = g.weight(c_name, c.reshape(out), node.location, node)
    fused = g.layer(node, "linear", [op.inputs[0]], [weight, bias], {"out": out, "bias": True})
    owner = fused.owner_op
    assert owner is not None
    owner.location = FusedLoc.of(op.location, node.location)
    g.erase(op)
    g.bind(node.outputs[0], fused)
    return True


def _activation(g: GraphState, node: Node, position: int, what: str) -> Value:
    value = g.activation(node, node.input(position))
    if value is None:
        raise node.error(f"the {what} is a constant while another input is not; Crane imports "
                         f"{node.op_type} with an activation {what}")
    return value


def weight_array(g: GraphState, value: Value) -> np.ndarray | None:
    """The array of a ``graph.weight`` value made by this import (None for other values)."""
    owner = value.owner_op
    if not isinstance(owner, WeightOp):
        return None
    return g.weights.get(owner.weight_name)
