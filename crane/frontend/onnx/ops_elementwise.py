"""Converters of activations, ``Softmax`` and the arithmetic ops.

* the operators a layer kind declares it imports from one to one (``LayerKind.onnx``:
  ``Relu``, ``Sigmoid``, ``Tanh``, ``Clip(min=0)`` without an upper bound as a ReLU,
  ``Clip(0, 6)`` as a ReLU6 ...) map onto that kind when their attributes (or ``Clip``'s
  bounds) are the declared ones; ``Gelu`` (exact, erf-based; ``approximate="tanh"`` has no
  ``graph`` op) too, and a recognised SiLU (``x * Sigmoid(x)``).
* ``Pow(x, 2)`` and ``Pow(x, 3)`` (the cube in the tanh approximation of GELU) are
  ``x * x`` and ``(x * x) * x``; other exponents have no ``graph`` op.
* ``Softmax`` normalises one axis (opset >= 13); before opset 13 it normalised the
  flattened trailing axes, which is the same only when ``axis`` is the last one.
* ``Add`` and ``Mul`` of two activations are ``graph.add`` / ``graph.mul``; a constant
  operand becomes a ``graph.weight`` (named after the ONNX tensor) that the op reads,
  placed second (both ops are commutative). The scheduler counts such a weight as weight
  bytes of the layer and code generation loads it like any weight.
* ``Sub(x, c)`` is ``x + (-c)`` (weight ``<c>.neg``); ``Sub`` with an activation on the
  right multiplies it by a ``-1`` weight (``<y>.neg``) first, which is exact.
* ``Div(x, c)`` is ``x * (1 / c)`` (weight ``<c>.reciprocal``; within one rounding of the
  quotient). Dividing by an activation has no ``graph`` op.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from crane.dialects.layers.definition import OnnxOp
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.frontend.onnx.ops_dense import fuse_linear_bias
from crane.frontend.onnx.ops_mask import soft_mask_of_sum
from crane.frontend.onnx.reader import Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.ir.core import Value


def _one_to_one() -> dict[str, list[tuple[OnnxOp, str]]]:
    found: dict[str, list[tuple[OnnxOp, str]]] = {}
    for kind in LAYER_KINDS.values():
        for op in kind.onnx.ops:
            found.setdefault(op.op_type, []).append((op, kind.name))
    return found


ONE_TO_ONE: Mapping[str, list[tuple[OnnxOp, str]]] = _one_to_one()
"""ONNX operator -> the (declared import, layer kind) pairs the layer kinds declare."""


def _x(g: GraphState, node: Node) -> Value:
    x = g.activation(node, node.input(0))
    assert x is not None  # all-constant nodes are folded before conversion
    return x


def one_to_one(g: GraphState, node: Node) -> None:
    """A node some layer kind declares it imports from (see the module docstring)."""
    declared = ONE_TO_ONE[node.op_type]
    for op, kind in declared:
        if _matches(g, node, op):
            g.bind(node.outputs[0], g.layer(node, kind, [_x(g, node)]))
            return
    imports = ", ".join(f"{_written_as(op)} as {kind}" for op, kind in declared)
    raise node.error(f"{_written(g, node, declared[0][0])} has no graph op; Crane imports {imports}")


def _matches(g: GraphState, node: Node, op: OnnxOp) -> bool:
    if op.clip is not None:
        low, high = _bound(g, node, 1, "min"), _bound(g, node, 2, "max")
        return (low, float("inf") if high is None else high) == op.clip
    return all(abs(float(node.attrs.get(a.name, a.default)) - a.value) <= 1e-6
               for a in op.attrs)


def _written(g: GraphState, node: Node, like: OnnxOp) -> str:
    """How the node reads, with the attributes the declarations look at."""
    if like.clip is not None:
        return f"Clip(min={_bound(g, node, 1, 'min')}, max={_bound(g, node, 2, 'max')})"
    given = ", ".join(f"{a.name}={node.attrs.get(a.name, a.default)}" for a in like.attrs)
    return f"{node.op_type}({given})"


def _written_as(op: OnnxOp) -> str:
    if op.clip is not None:
        high = "" if op.clip[1] == float("inf") else f", max={op.clip[1]:g}"
        return f"Clip(min={op.clip[0]:g}{high})"
    return f"{op.op_type}(" + ", ".join(f"{a.name}={a.value:.4g}" for a in op.attrs) + ")"


def gelu(g: GraphState, node: Node) -> None:
    mode = str(node.attrs.get("approximate", "none"))
    if mode != "none":
        raise node.error(f"approximate='{mode}': Crane's gelu is the exact (erf) form")
    g.bind(node.outputs[0], g.layer(node, "gelu", [_x(g, node)]))


def silu(g: GraphState, node: Node) -> None:
    g.bind(node.outputs[0], g.layer(node, "silu", [_x(g, node)]))


def power(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    exponent = g.const(node.input(1))
    if exponent is None or exponent.size != 1:
        raise node.error("the exponent must be a constant scalar")
    value = float(exponent.reshape(-1)[0])
    if value == 1.0:
        g.bind(node.outputs[0], x)
        return
    if value not in (2.0, 3.0):
        raise node.error(f"Pow by {value:g} has no graph op; Crane imports x^2 and x^3 as products")
    out = node.outputs[0]
    square = g.layer(node, "mul", [x, x], name=out if value == 2.0 else f"{out}.square")
    g.bind(out, square if value == 2.0 else g.layer(node, "mul", [square, x]))


def _bound(g: GraphState, node: Node, position: int, name: str) -> float | None:
    if node.input(position):
        array = g.const(node.input(position))
        if array is None or array.size != 1:
            raise node.error(f"the {name} bound must be a constant scalar")
        return float(array.reshape(-1)[0])
    value = node.attrs.get(name)
    return None if value is None else float(value)


def softmax(g: GraphState, node: Node) -> None:
    x = _x(g, node)
    rank = len(shape_of(x))
    axis = int(node.attrs.get("axis", -1 if g.opset >= 13 else 1))
    if not -rank <= axis < rank:
        raise node.error(f"axis={axis} is out of range for a rank-{rank} input")
    if g.opset < 13 and axis % rank != rank - 1:
        raise node.error(f"before opset 13 Softmax normalises axes {axis}.. flattened; Crane imports "
                         f"it only for the last axis (re-export at opset >= 13)")
    out = node.outputs[0]
    g.bind(out, g.layer(node, "softmax", [x], attrs={"axis": axis}))
    mask = g.soft_masks.get(node.input(0))
    if mask is not None:
        g.softmax_masks[out] = (mask, axis)


def add(g: GraphState, node: Node) -> None:
    a_name, b_name = _activation_first(g, node)
    if fuse_linear_bias(g, node, a_name, b_name):
        return
    g.bind(node.outputs[0], g.layer(node, "add", [_x_named(g, node, a_name), g.tensor(node, b_name)]))
    soft_mask_of_sum(g, node)


def mul(g: GraphState, node: Node) -> None:
    a_name, b_name = _activation_first(g, node)
    g.bind(node.outputs[0], g.layer(node, "mul", [_x_named(g, node, a_name), g.tensor(node, b_name)]))


def sub(g: GraphState, node: Node) -> None:
    a_name, b_name = node.input(0), node.input(1)
    b = g.const(b_name)
    if b is not None:
        neg = g.weight(f"{b_name}.neg", -b, node.location, node)
        g.bind(node.outputs[0], g.layer(node, "add", [_x_named(g, node, a_name), neg]))
        return
    y = _negated(g, node, g.tensor(node, b_name))
    g.bind(node.outputs[0], g.layer(node, "add", [y, g.tensor(node, a_name)]))


def div(g: GraphState, node: Node) -> None:
    a_name, b_name = node.input(0), node.input(1)
    b = g.const(b_name)
    if b is None:
        raise node.error("division by an activation has no graph op (Crane has no reciprocal layer)")
    x = g.tensor(node, a_name)
    if not np.issubdtype(b.dtype, np.floating):
        raise node.error("integer division of an activation is not supported")
    reciprocal = (1.0 / b.astype(np.float64)).astype(b.dtype)
    weight = g.weight(f"{b_name}.reciprocal", reciprocal, node.location, node)
    g.bind(node.outputs[0], g.layer(node, "mul", [x, weight]))


def _negated(g: GraphState, node: Node, value: Value) -> Value:
    minus_one = g.weight(f"{node.outputs[0]}.neg", np.array(-1, numpy_dtype(value)), node.location, node)
    return g.layer(node, "mul", [value, minus_one], name=f"{node.outputs[0]}.neg")


def _activation_first(g: GraphState, node: Node) -> tuple[str, str]:
    """The inputs of a commutative op with an activation first."""
    a_name, b_name = node.input(0), node.input(1)
    return (b_name, a_name) if g.is_const(a_name) else (a_name, b_name)


def _x_named(g: GraphState, node: Node, name: str) -> Value:
    return g.tensor(node, name)
