"""The importer's state while it walks one ONNX graph: what every tensor name stands for.

An ONNX tensor is either an *activation*, an IR :class:`Value` (a function argument or a
layer op's result), or a *constant* known at import time, a numpy array (initializers,
``Constant`` nodes, and everything computed from constants alone, shapes included). A
constant that an op needs as a tensor operand becomes a ``graph.weight`` named after the
ONNX tensor, and its array is recorded in :attr:`GraphState.weights` under that name: the
reference interpreter takes them as ``run_function(func, weights=state.weights)``.

Value names follow the ONNX tensor names, made valid IR names (``/conv1/Conv_output_0``
becomes ``_conv1_Conv_output_0``, ``117`` becomes ``v117``: see :meth:`NameTable.clean`)
and unique, so that the IR printed and parsed again names its arguments and outputs as
the in-memory IR does.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from crane.dialects.graph import ELEMENT_TYPES, LAYER_OPS, WeightOp, verify_layer_attributes
from crane.dialects.layers.kinds import DEFAULT_ATTRS, LAYER_KINDS
from crane.dialects.layers.rules import ShapeError
from crane.dialects.layers.values import AttrValue
from crane.frontend.onnx.reader import Node
from crane.ir.core import Block, Operation, Value, VerifyError
from crane.ir.diagnostics import DiagnosticError
from crane.ir.location import UNKNOWN, Location
from crane.ir.types import TensorType

_BAD_CHARS = re.compile(r"[^A-Za-z0-9_$.-]")

_NUMPY_DTYPES: Mapping[str, str] = {
    "float32": "f32", "float64": "f32", "float16": "f16", "int8": "int8", "int32": "int32",
    "int64": "int64", "uint8": "int32", "int16": "int32", "uint16": "int32", "uint32": "int64",
}
"""numpy dtype of a constant -> Crane dtype of its weight (doubles are stored as f32,
narrow integers widened)."""


class NameTable:
    """Unique, printable IR value names derived from ONNX tensor names."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.reserved: dict[str, str] = {}
        """Clean name -> the ONNX name it is kept for (the graph's outputs)."""

    @staticmethod
    def clean(name: str) -> str:
        """``name`` as an IR value name: characters the IR printer would replace become
        ``_``, and a name of digits only gets a ``v`` prefix (``117`` -> ``v117``), since
        the IR numbers its unnamed values ``%0``, ``%1``... and so would not keep it."""
        text = _BAD_CHARS.sub("_", name) or "v"
        return f"v{text}" if text.isdigit() else text

    def reserve(self, names: Iterable[str]) -> None:
        """Keep the clean forms of ``names`` for exactly those names."""
        for name in names:
            self.reserved.setdefault(self.clean(name), name)

    def fresh(self, name: str) -> str:
        """A new unique name based on ``name``."""
        base = self.clean(name)
        found, k = base, 1
        while found in self.used or self.reserved.get(found, name) != name:
            found = f"{base}_{k}"
            k += 1
        self.used.add(found)
        return found


def weight_dtype(array: np.ndarray, what: str, node: Node | None) -> str:
    """The Crane dtype a constant becomes as a weight."""
    dtype = _NUMPY_DTYPES.get(array.dtype.name)
    if dtype is not None:
        return dtype
    message = f"constant '{what}' has element type {array.dtype.name}, which Crane cannot hold"
    if node is None:
        raise DiagnosticError.at(UNKNOWN, message)
    raise node.error(message)


class GraphState:
    """Tensor names to IR values or constants, the block being built and the weights."""

    def __init__(self, filename: str, opset: int, consumers: Mapping[str, int]) -> None:
        self.filename = filename
        self.opset = opset
        self.consumers = consumers
        """How many node inputs (and graph outputs) read each tensor name."""
        self.block = Block()
        self.names = NameTable()
        self.values: dict[str, Value] = {}
        self.consts: dict[str, np.ndarray] = {}
        self.weights: dict[str, np.ndarray] = {}
        """Weight name -> array, for every ``graph.weight`` made."""
        self._weight_values: dict[str, Value] = {}
        self._aliases: Counter[Value] = Counter()
        """How many tensor names stand for each value (``Identity`` adds one)."""
        self.booleans: set[str] = set()
        """Activations that are ONNX booleans, held as float 0.0 / 1.0 (``ops_mask``)."""
        self.soft_masks: dict[str, Value] = {}
        """Tensor -> the mask ``c`` where it is finite; it holds ``-FLT_MAX`` where ONNX
        has ``-inf`` (``ops_mask``)."""
        self.softmax_masks: dict[str, tuple[Value, int]] = {}
        """Softmax output -> the mask of its soft-masked input and its axis."""
        self.any_rows: dict[Value, Value] = {}
        """Mask -> whether each of its rows holds a 1 (made once, for every NaN guard)."""

    # ----- looking tensors up

    def const(self, name: str) -> np.ndarray | None:
        """The constant ``name`` stands for, or None (an activation, or omitted)."""
        return self.consts.get(name) if name else None

    def is_const(self, name: str) -> bool:
        return bool(name) and name in self.consts

    def activation(self, node: Node, name: str) -> Value | None:
        """The IR value of an activation input, None if ``name`` is a constant."""
        if name in self.values:
            return self.values[name]
        if name in self.consts:
            return None
        raise node.error(f"reads tensor '{name}', which no earlier node produces"
                         if name else "a required input is missing")

    def tensor(self, node: Node, name: str) -> Value:
        """``name`` as an operand: its activation, or its constant made a ``graph.weight``."""
        found = self.activation(node, name)
        if found is not None:
            return found
        return self.weight(name, self.consts[name], node.location, node)

    def required_const(self, node: Node, position: int, what: str) -> np.ndarray:
        """Input ``position`` of ``node``, which must be a constant."""
        name = node.input(position)
        found = self.const(name)
        if found is not None:
            return found
        if not name:
            raise node.error(f"the {what} input is missing")
        raise node.error(f"the {what} ('{name}') must be a constant (an initializer or computed "
                         f"from constants); Crane imports weights as graph.weight values")

    # ----- making IR

    def weight(self, name: str, array: np.ndarray, location: Location, node: Node | None = None) -> Value:
        """A ``graph.weight`` holding ``array`` (one op per distinct name and value)."""
        found = self._weight_values.get(name)
        if found is not None and _same(self.weights[name], array):
            return found
        unique, k = name, 1
        while unique in self.weights and not _same(self.weights[unique], array):
            k += 1
            unique = f"{name}#{k}"
        if unique in self._weight_values:
            return self._weight_values[unique]
        dtype = weight_dtype(array, name, node)
        stored = array.astype(np.float32) if dtype == "f32" else array
        op = WeightOp.build(unique, TensorType(tuple(int(d) for d in stored.shape), ELEMENT_TYPES[dtype]), location)
        op.results[0].name_hint = self.names.fresh(unique)
        self.block.append(op)
        self.weights[unique] = stored
        self._weight_values[unique] = op.results[0]
        return op.results[0]

    def layer(self, node: Node, kind: str, inputs: Sequence[Value], weights: Sequence[Value] = (),
              attrs: Mapping[str, AttrValue] | None = None, name: str | None = None) -> Value:
        """Append a ``graph.<kind>`` op; its shape comes from the kind's rule."""
        layer_kind = LAYER_KINDS[kind]
        full = {**DEFAULT_ATTRS[kind], **(attrs or {})}
        shapes = tuple(shape_of(v) for v in inputs)
        try:
            verify_layer_attributes(layer_kind, full)  # no shape rule divides by a stride of 0
            out_shape, resolved = layer_kind.shape(shapes, full)
        except VerifyError as problem:
            raise node.error(str(problem)) from None
        except ShapeError as problem:
            raise node.error(problem.message) from None
        source = weights[0] if kind == "embedding" else inputs[0]
        assert isinstance(source.type, TensorType)
        op = LAYER_OPS[kind].build(inputs, weights, resolved, TensorType(out_shape, source.type.element),
                                   node.location)
        op.results[0].name_hint = self.names.fresh(name or node.outputs[0])
        self.block.append(op)
        return op.results[0]

    def bind(self, name: str, value: Value | np.ndarray) -> None:
        """``name`` now stands for ``value``."""
        if isinstance(value, np.ndarray):
            self.consts[name] = value
            return
        self.values[name] = value
        self._aliases[value] += 1

    def erase(self, op: Operation) -> None:
        """Remove an op made earlier (a fold replaced it) and the weights left unused."""
        operands = op.operands
        op.erase()
        for value in operands:
            owner = value.owner_op
            if isinstance(owner, WeightOp) and not value.uses:
                owner.erase()
                self.weights.pop(owner.weight_name, None)
                self._weight_values.pop(owner.weight_name, None)

    def exclusive(self, name: str) -> bool:
        """Whether the node reading activation ``name`` now is the only reader of its value:
        one node input reads ``name``, it is no graph output, no other tensor name stands
        for the same value and no op uses it yet. Then the value's producer may be rebuilt."""
        value = self.values.get(name)
        if value is None or value.uses or self.consumers.get(name, 0) != 1:
            return False
        return self._aliases[value] == 1


def shape_of(value: Value) -> tuple[int, ...]:
    """The static shape of a tensor value."""
    assert isinstance(value.type, TensorType)
    return tuple(value.type.shape)


def numpy_dtype(value: Value) -> type[np.generic]:
    """The numpy type constants combined with ``value`` are stored in."""
    assert isinstance(value.type, TensorType)
    element = value.type.element.name
    if element == "f16":
        return np.float16
    return np.float32 if value.type.element.is_float else np.int64


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a is b or (a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b)))
