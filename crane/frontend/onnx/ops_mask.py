"""Boolean activations (attention masks) as float 0.0 / 1.0 values: ``Cast`` to bool,
``And``, ``Or``, ``Not``, ``Where``, and the NaN guard after a softmax.

Exporters build attention masks from the model's integer ``attention_mask`` input:
``Cast`` to bool, index and broadcast it (``GatherND``, ``Expand``...), combine it with a
constant causal mask (``And``), then turn it into an additive bias
``Where(mask, 0, -big)`` that is added to the attention scores before ``Softmax``. The
``graph`` dialect has no boolean type and no select, so a boolean activation is held as a
float tensor of 0.0 and 1.0 (its ONNX tensor name is in ``GraphState.booleans``), and:

* ``Cast(ids -> bool)`` of an integer activation is an ``embedding`` lookup in the table
  ``[[0], [1]]`` (weight ``<ids>.as_bool``): exact for the ids 0 and 1 that attention
  masks hold; any other id is out of the table's range, an error when the model runs;
* ``And(a, b)`` is ``a * b``; ``Or(a, b)`` is ``a + b - a * b``; ``Not(a)`` is ``1 - a``;
* ``Where(c, x, y)`` of constants ``x``, ``y`` is ``y + c * (x - y)``, imported only when
  that gives ``x`` exactly where ``c`` holds (``x - y`` rounded to float32 and added back
  to ``y`` is ``x``); with an activation operand it is ``x * c + y * (1 - c)``, exact for
  finite operands.

``-inf`` in ``Where(c, x, -inf)`` (the TorchScript exporter's mask bias) has no exact
arithmetic form (``0 * -inf`` is NaN): it becomes ``-FLT_MAX``, the most negative
float32, and the result is recorded as a *soft* mask (``GraphState.soft_masks``). Added
to finite scores and normalised by ``Softmax``, ``-FLT_MAX`` gives exactly the same
zero probabilities as ``-inf`` wherever a row keeps one unmasked entry (``exp`` of
``-FLT_MAX - max`` underflows to 0), whenever the scores are below 1e31 in magnitude. A
row whose every entry is masked differs: ONNX computes NaN there and the exporters follow
the softmax with a guard, ``Where(IsNaN(p), 0, p)``, that makes it 0.
:func:`nan_guard` imports that guard exactly: as nothing when the softmax input holds
no infinite constant (so it is provably never NaN, given finite model inputs), and as a
product with ``any(mask)`` over the row (``1 - relu(1 - sum(mask))``) after a soft mask.
"""

from __future__ import annotations

import numpy as np

from crane.frontend.onnx.reader import ELEMENT_TYPES, Node
from crane.frontend.onnx.state import GraphState, numpy_dtype, shape_of
from crane.ir.core import Value
from crane.ir.types import TensorType

FLT_MAX = float(np.finfo(np.float32).max)
BOOL = 9
"""ONNX ``TensorProto.BOOL``."""


def is_boolean(g: GraphState, name: str) -> bool:
    """Whether tensor ``name`` is a boolean: a masked activation or a bool constant."""
    const = g.const(name)
    return name in g.booleans if const is None else const.dtype == np.bool_


def _mask(g: GraphState, node: Node, name: str) -> Value:
    """Boolean input ``name`` as a float 0/1 operand (a bool constant becomes a weight)."""
    if name in g.booleans:
        return g.values[name]
    const = g.const(name)
    if const is not None and const.dtype == np.bool_:
        return g.weight(f"{name}.f32", const.astype(np.float32), node.location, node)
    raise node.error(f"input '{name}' is not a boolean Crane can compute (only casts of integer "
                     f"activations to bool, constants and their combinations are)")


def _scalar(g: GraphState, node: Node, value: float, like: Value, what: str) -> Value:
    return g.weight(f"{node.outputs[0]}.{what}", np.array(value, numpy_dtype(like)), node.location, node)


def _not(g: GraphState, node: Node, mask: Value, name: str) -> Value:
    """``1 - mask`` as ``mask * -1 + 1`` (exact on 0 and 1)."""
    negated = g.layer(node, "mul", [mask, _scalar(g, node, -1.0, mask, "minus_one")], name=f"{name}.neg")
    return g.layer(node, "add", [negated, _scalar(g, node, 1.0, mask, "one")], name=name)


def cast_to_bool(g: GraphState, node: Node, x: Value) -> None:
    """``Cast(x, to=BOOL)`` (see the module docstring)."""
    name, out = node.input(0), node.outputs[0]
    if name in g.booleans:
        g.bind(out, x)
        g.booleans.add(out)
        return
    assert isinstance(x.type, TensorType)
    if x.type.element.is_float:
        raise node.error("casting a float activation to bool (x != 0) has no graph op; only integer "
                         "masks of 0 and 1 import")
    table = g.weight(f"{name}.as_bool", np.array([[0.0], [1.0]], np.float32), node.location, node)
    looked_up = g.layer(node, "embedding", [x], [table], {"vocab": 2, "dim": 1, "dtype": "f32"},
                        name=f"{out}.lookup")
    g.bind(out, g.layer(node, "reshape", [looked_up], attrs={"shape": shape_of(x)}))
    g.booleans.add(out)


def cast_boolean(g: GraphState, node: Node, x: Value) -> bool:
    """``Cast`` of a boolean activation: to bool or a float type it passes through (its
    values already are 0.0 and 1.0). Returns whether it handled the node."""
    if node.input(0) not in g.booleans:
        return False
    target = int(node.attrs.get("to", 0))
    if target == BOOL:
        g.booleans.add(node.outputs[0])
    elif ELEMENT_TYPES.get(target) not in ("f32", "f16", "bf16"):
        raise node.error(f"casting a boolean activation to {ELEMENT_TYPES.get(target, target)} is not "
                         f"supported (only to bool or float)")
    g.bind(node.outputs[0], x)
    return True


def and_(g: GraphState, node: Node) -> None:
    a, b = (_mask(g, node, name) for name in node.inputs[:2])
    g.bind(node.outputs[0], g.layer(node, "mul", [a, b]))
    g.booleans.add(node.outputs[0])


def or_(g: GraphState, node: Node) -> None:
    a, b = (_mask(g, node, name) for name in node.inputs[:2])
    out = node.outputs[0]
    both = g.layer(node, "mul", [a, b], name=f"{out}.both")
    either = g.layer(node, "add", [a, b], name=f"{out}.sum")
    minus = g.layer(node, "mul", [both, _scalar(g, node, -1.0, both, "minus_one")], name=f"{out}.minus")
    g.bind(out, g.layer(node, "add", [either, minus]))
    g.booleans.add(out)


def not_(g: GraphState, node: Node) -> None:
    out = node.outputs[0]
    g.bind(out, _not(g, node, _mask(g, node, node.input(0)), out))
    g.booleans.add(out)


def where(g: GraphState, node: Node) -> None:
    condition = _mask(g, node, node.input(0))
    x_name, y_name = node.input(1), node.input(2)
    x, y = g.const(x_name), g.const(y_name)
    if x is not None and y is not None:
        _where_constants(g, node, condition, x, y)
        return
    out = node.outputs[0]
    for name, array in ((x_name, x), (y_name, y)):
        if array is not None and not np.isfinite(array).all():
            raise node.error(f"Where selects between an activation and the non-finite constant '{name}'; "
                             f"Crane imports it as x * c + y * (1 - c), which needs finite operands")
    taken = g.layer(node, "mul", [g.tensor(node, x_name), condition], name=f"{out}.then")
    others = g.layer(node, "mul", [g.tensor(node, y_name), _not(g, node, condition, f"{out}.not")],
                     name=f"{out}.else")
    g.bind(out, g.layer(node, "add", [taken, others]))
    if is_boolean(g, x_name) and is_boolean(g, y_name):
        g.booleans.add(out)


def _where_constants(g: GraphState, node: Node, condition: Value, x: np.ndarray, y: np.ndarray) -> None:
    """``y + c * (x - y)``; ``y = -inf`` becomes ``-FLT_MAX`` and a soft mask."""
    out = node.outputs[0]
    dtype = numpy_dtype(condition) if x.dtype == np.bool_ else x.dtype
    soft = bool(np.isneginf(y).all()) and bool(np.isfinite(x).all())
    base = np.full(y.shape, -FLT_MAX) if soft else y.astype(np.float64)
    step = (x.astype(np.float64) - base).astype(dtype)
    back = (base.astype(dtype) + step).astype(dtype)
    if not (np.isfinite(step).all() and np.array_equal(back, np.broadcast_to(x, back.shape).astype(dtype))):
        raise node.error("Where(c, x, y) of constants imports as y + c * (x - y), which is not exact "
                         "for these x and y in float32")
    scaled = g.layer(node, "mul", [condition, g.weight(f"{out}.step", step, node.location, node)],
                     name=f"{out}.scaled")
    g.bind(out, g.layer(node, "add", [scaled, g.weight(f"{out}.base", base.astype(dtype), node.location, node)]))
    if soft:
        g.soft_masks[out] = condition


def soft_mask_of_sum(g: GraphState, node: Node) -> None:
    """After ``Add``: a sum with one soft mask is a soft mask for the same condition."""
    masks = [g.soft_masks[name] for name in node.inputs[:2] if name in g.soft_masks]
    if len(masks) == 1:
        g.soft_masks[node.outputs[0]] = masks[0]


def nan_guard(g: GraphState, node: Node) -> None:
    """``Where(IsNaN(p), 0, p)`` after ``p = Softmax(z)`` (see the module docstring)."""
    p = g.activation(node, node.input(0))
    assert p is not None  # a constant p folds
    out = node.outputs[0]
    masked = g.softmax_masks.get(node.input(0))
    if masked is not None:
        g.bind(out, g.layer(node, "mul", [p, _any_in_row(g, node, *masked)]))
        return
    if not node.attrs.get("finite", False):
        raise node.error(f"the softmax input may be -inf or NaN (constant '{node.attrs.get('culprit', '?')}'), "
                         f"so this NaN guard is not a no-op, and it has no graph form")
    g.bind(out, p)


def _any_in_row(g: GraphState, node: Node, mask: Value, axis: int) -> Value:
    """1 where ``mask`` holds a 1 along the softmax's (last) axis, else 0:
    ``1 - relu(1 - sum(mask))``, shaped to broadcast against the softmax output."""
    shape = shape_of(mask)
    if axis not in (-1, len(shape) - 1):
        raise node.error(f"a masked softmax along axis {axis}: Crane imports the NaN guard of a "
                         f"softmax over the last axis only")
    found = g.any_rows.get(mask)
    if found is not None:
        return found
    name = f"{node.outputs[0]}.any"
    ones = g.weight(f"{name}.ones", np.ones((shape[-1], 1), numpy_dtype(mask)), node.location, node)
    count = g.layer(node, "linear", [mask], [ones], {"out": 1, "bias": False}, name=f"{name}.count")
    none = _not(g, node, count, f"{name}.none")
    clipped = g.layer(node, "relu", [none], name=f"{name}.relu")
    found = _not(g, node, clipped, name)
    g.any_rows[mask] = found
    return found
