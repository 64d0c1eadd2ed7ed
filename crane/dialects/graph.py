"""The ``graph`` dialect: a network as one function, one op per layer.

Layer ops mirror :data:`crane.dialects.layers.kinds.LAYER_KINDS` one to one: ``graph.<kind>``
takes its tensor inputs then its weights as operands, carries the kind's parameters as
attributes (resolved: padding is ``(top, bottom, left, right)``), and its verifier reruns
the kind's shape rule. Weights are explicit values made by ``graph.weight``.

    graph.func @tiny(%x: tensor<1x3x8x8xf32>) -> tensor<1x4x8x8xf32> attributes {batch = 1} {
      %w = graph.weight {name = "y.weight"} : () -> tensor<4x3x3x3xf32>
      %y = graph.conv2d %x, %w {bias = false, ...} : (...) -> tensor<1x4x8x8xf32>
      graph.return %y : tensor<1x4x8x8xf32>
    }
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import ClassVar, Self

from crane.dialects.layers.definition import LayerKind, Param, ParamError, ParamType, coerce
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.rules import ShapeError, fmt
from crane.dialects.layers.values import AttrValue, Shape
from crane.ir.attributes import (
    Attribute,
    BoolAttr,
    DenseIntsAttr,
    FloatAttr,
    IntAttr,
    StringAttr,
    TypeAttr,
)
from crane.ir.context import Dialect
from crane.ir.core import Block, Operation, Region, Value, VerifyError
from crane.ir.function_syntax import (
    parse_function,
    parse_return,
    print_function,
    print_return,
    verify_returned_types,
    verify_signature,
)
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec, Result
from crane.ir.parser import Parser
from crane.ir.printer import Printer
from crane.ir.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, SingleBlock, Symbol
from crane.ir.types import FunctionType, ScalarType, TensorType, Type
from crane.limits import BATCH, tensor_size_problem

_ATTR_CLASS: Mapping[ParamType, type[Attribute]] = {
    ParamType.POS_INT: IntAttr, ParamType.INT: IntAttr, ParamType.FLOAT: FloatAttr,
    ParamType.BOOL: BoolAttr, ParamType.PAIR: DenseIntsAttr, ParamType.PADDING: DenseIntsAttr,
    ParamType.INTS: DenseIntsAttr, ParamType.DTYPE: StringAttr,
}

ELEMENT_TYPES: Mapping[str, ScalarType] = {
    "f32": ScalarType("f32"), "bf16": ScalarType("bf16"), "f16": ScalarType("f16"),
    "int8": ScalarType("i8"), "int32": ScalarType("i32"), "int64": ScalarType("i64"),
}
"""`.crn` dtype -> IR element type."""


def to_attribute(value: AttrValue) -> Attribute:
    """The IR attribute of a resolved layer attribute value."""
    if isinstance(value, bool):
        return BoolAttr(value)
    if isinstance(value, int):
        return IntAttr(value)
    if isinstance(value, float):
        return FloatAttr(value)
    if isinstance(value, str):
        return StringAttr(value)
    return DenseIntsAttr(tuple(value))


def from_attribute(attr: Attribute) -> AttrValue:
    """The layer attribute value of an IR attribute (inverse of :func:`to_attribute`)."""
    if isinstance(attr, BoolAttr | IntAttr | FloatAttr | StringAttr):
        return attr.value
    if isinstance(attr, DenseIntsAttr):
        return tuple(attr)
    raise VerifyError(f"unexpected attribute {attr}")


def verify_layer_attributes(kind: LayerKind, attrs: Mapping[str, AttrValue]) -> None:
    """Raise VerifyError for an attribute its parameter does not accept (``stride`` 0,
    ``groups`` 0, ``heads`` 0, a NaN ``eps``) or not in resolved form (a 2-value
    ``padding``), so that no shape rule, cost rule or lowering divides by it."""
    for param in kind.params:
        if param.name in attrs:
            _verify_attribute(param, attrs[param.name])


def _verify_attribute(param: Param, value: AttrValue) -> None:
    try:
        coerce(param, value)
    except ParamError as problem:
        raise VerifyError(f"attribute '{param.name}' {problem}") from None
    if param.type is ParamType.PADDING and isinstance(value, tuple) and len(value) != 4:
        raise VerifyError(f"attribute 'padding' must be resolved to 4 values (top, bottom, left, "
                          f"right), got {len(value)}")
    if param.type is ParamType.FLOAT and isinstance(value, float) and not math.isfinite(value):
        raise VerifyError(f"attribute '{param.name}' must be a finite number, got {value}")


def _tensor_shape(value: Value, what: str) -> Shape:
    if not isinstance(value.type, TensorType):
        raise VerifyError(f"{what} must be a tensor, got {value.type}")
    return value.type.shape


class LayerOp(Operation):
    """Base of the ``graph.<kind>`` ops; ``kind`` is the table entry the op mirrors."""

    __slots__ = ()
    kind: ClassVar[LayerKind]

    @classmethod
    def build(cls, inputs: Sequence[Value], weights: Sequence[Value], attrs: Mapping[str, AttrValue],
              result_type: TensorType, location: Location = UNKNOWN) -> LayerOp:
        """A layer op; ``attrs`` are the resolved attributes of an elaborated layer."""
        # In the table's parameter order, so printed IR is stable whatever order the user wrote.
        attributes = {p.name: to_attribute(attrs[p.name]) for p in cls.kind.params if p.name in attrs}
        op = cls.create(None, (*inputs, *weights), (result_type,), attributes, (), location)
        assert isinstance(op, LayerOp)
        return op

    @property
    def layer_attrs(self) -> dict[str, AttrValue]:
        """The op's declared attributes as plain Python values."""
        return {p.name: from_attribute(self.attributes[p.name]) for p in self.kind.params
                if p.name in self.attributes}

    @property
    def normalises_by_batch(self) -> bool:
        """A batchnorm over the batch's own statistics, not its running ones."""
        return self.kind.normalises_by_batch(self.layer_attrs)

    @property
    def needs_whole_batch(self) -> bool:
        """Whether the op needs every sample at once (a loss, statistics of the batch), so
        it cannot run on a slice of the batch."""
        return self.kind.is_loss or self.normalises_by_batch

    @property
    def num_weights(self) -> int:
        """How many trailing operands are weights (fixed by the attributes, e.g. ``bias``)."""
        if not self._operands:
            return 0
        first = _tensor_shape(self._operands[0], "operand #0")
        return len(self.kind.weights((first,), self.layer_attrs))

    @property
    def inputs(self) -> tuple[Value, ...]:
        return tuple(self._operands[: len(self._operands) - self.num_weights])

    @property
    def weights(self) -> tuple[Value, ...]:
        return tuple(self._operands[len(self._operands) - self.num_weights :])

    def verify_op(self) -> None:
        try:
            self._verify_layer()
        except (KeyError, AssertionError, IndexError, TypeError, ValueError, ArithmeticError) as problem:
            # A backstop: the checks below should name every bad attribute themselves.
            raise VerifyError(f"malformed attributes or operands ({type(problem).__name__}: {problem})") from None

    def _verify_layer(self) -> None:
        kind, attrs = self.kind, self.layer_attrs
        verify_layer_attributes(kind, attrs)
        inputs = self.inputs
        shapes = tuple(_tensor_shape(v, f"input #{i}") for i, v in enumerate(inputs))
        high = kind.max_inputs
        if len(inputs) < kind.min_inputs or (high is not None and len(inputs) > high):
            raise VerifyError(f"expects {kind.min_inputs}{'+' if high is None else f'..{high}'} "
                              f"tensor inputs ({', '.join(kind.inputs)}), got {len(inputs)}")
        for index in kind.int_inputs:
            element = getattr(inputs[index].type, "element", None) if index < len(inputs) else None
            if element is not None and element.is_float:
                raise VerifyError(f"input '{kind.inputs[index]}' must have an integer element type, got {element}")
        try:
            out_shape, resolved = kind.shape(shapes, attrs)
        except ShapeError as problem:
            raise VerifyError(problem.message) from None
        result = _tensor_shape(self.results[0], "the result")
        if result != out_shape:
            raise VerifyError(f"result shape {fmt(result)} does not match the inferred {fmt(out_shape)}")
        too_large = tensor_size_problem(result)
        if too_large is not None:
            raise VerifyError(f"the result is too large: {too_large}")
        expected = kind.weights(shapes, resolved)
        for (name, shape), value in zip(expected, self.weights, strict=True):
            got = _tensor_shape(value, f"weight '{name}'")
            if got != shape:
                raise VerifyError(f"weight '{name}' has shape {fmt(got)}, expected {fmt(shape)}")

    def accounting(self) -> Mapping[str, int]:
        """Per-op figures for ``print-op-stats``: MACs, FLOPs, parameter and activation bytes."""
        shapes = tuple(_tensor_shape(v, "input") for v in self.inputs)
        out = self.results[0].type
        assert isinstance(out, TensorType)
        attrs = self.layer_attrs
        names = [name for name, _ in self.kind.weights(shapes[:1], attrs)] if shapes else []
        param_bytes = sum(v.type.byte_size for name, v in zip(names, self.weights, strict=False)
                          if isinstance(v.type, TensorType) and name not in self.kind.buffers)
        return {
            "macs": self.kind.macs(shapes, out.shape, attrs),
            "flops": self.kind.flops(shapes, out.shape, attrs),
            "param_bytes": param_bytes,
            "activation_bytes": out.byte_size,
        }


def _layer_op_class(kind: LayerKind) -> type[LayerOp]:
    """The op class mirroring one table entry (generated, so the table stays the one source)."""
    attributes = tuple(Attr(p.name, _ATTR_CLASS[p.type], doc=p.doc) for p in kind.params)
    spec = OpSpec(f"graph.{kind.name}", operands=(Operand("operands", variadic=True),),
                  results=(Result("result"),), attributes=attributes, summary=kind.summary)
    # A kind drawing random masks (dropout): CSE must not merge two of them.
    traits = () if kind.is_random else (Pure(),)
    name = "".join(part.title() for part in kind.name.split("_")) + "Op"
    namespace = {"__slots__": (), "spec": spec, "traits": traits, "kind": kind,
                 "__doc__": f"``graph.{kind.name}``: {kind.summary}."}
    return type(name, (LayerOp,), namespace)


LAYER_OPS: Mapping[str, type[LayerOp]] = {name: _layer_op_class(kind) for name, kind in LAYER_KINDS.items()}
"""The op class of each layer kind."""


class NamedTensorOp(Operation):
    """Base of ops that introduce one named tensor (``{name = "..."}``, no operands)."""

    __slots__ = ()

    @classmethod
    def build(cls, name: str, type: TensorType, location: Location = UNKNOWN) -> Self:
        op = cls.create(None, (), (type,), {"name": StringAttr(name)}, (), location)
        assert isinstance(op, cls)
        return op

    @property
    def tensor_name(self) -> str:
        attr = self.attributes["name"]
        assert isinstance(attr, StringAttr)
        return attr.value


class WeightOp(NamedTensorOp):
    """``%w = graph.weight {name = "conv1.weight"} : () -> tensor<...>``: a trainable tensor."""

    __slots__ = ()
    spec = OpSpec("graph.weight", results=(Result("result"),),
                  attributes=(Attr("name", StringAttr, doc="layer name and weight role"),),
                  summary="a trainable tensor owned by one layer")
    traits = (Pure(),)

    @property
    def weight_name(self) -> str:
        return self.tensor_name

    def verify_op(self) -> None:
        _tensor_shape(self.results[0], "a weight")


class FuncOp(Operation):
    """``graph.func @net(%inputs...) -> (outputs...) {...}``: one network."""

    __slots__ = ()
    spec = OpSpec("graph.func", regions=1, summary="a network: inputs to outputs through layer ops")
    traits = (Symbol(), IsolatedFromAbove(), SingleBlock())

    @classmethod
    def build(cls, name: str, body: Block, result_types: Sequence[Type],
              attributes: Mapping[str, Attribute] | None = None, location: Location = UNKNOWN) -> FuncOp:
        ftype = FunctionType(tuple(a.type for a in body.args), tuple(result_types))
        attrs: dict[str, Attribute] = {"sym_name": StringAttr(name), "function_type": TypeAttr(ftype),
                                       **(attributes or {})}
        op = cls.create(None, (), (), attrs, [Region([body])], location)
        assert isinstance(op, FuncOp)
        return op

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    def verify_op(self) -> None:
        verify_signature(self)
        batch = self.attributes.get("batch")
        problem = BATCH.check("'batch'", batch.value) if isinstance(batch, IntAttr) else None
        if problem is not None:
            raise VerifyError(problem)
        for index, arg in enumerate(self.body.args if self.regions and self.regions[0].blocks else ()):
            too_large = tensor_size_problem(arg.type.shape) if isinstance(arg.type, TensorType) else None
            if too_large is not None:
                raise VerifyError(f"argument #{index} is too large: {too_large}")

    def print_custom(self, p: Printer) -> None:
        print_function(p, self)

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        return parse_function(p, cls)


class ReturnOp(Operation):
    """``graph.return %a, %b : T, U`` ends a network and names its outputs."""

    __slots__ = ()
    spec = OpSpec("graph.return", operands=(Operand("values", variadic=True),))
    traits = (IsTerminator(), HasParent(("graph.func",)))

    @classmethod
    def build(cls, values: Sequence[Value], location: Location = UNKNOWN) -> ReturnOp:
        op = cls.create(None, values, (), {}, (), location)
        assert isinstance(op, ReturnOp)
        return op

    def verify_op(self) -> None:
        verify_returned_types(self, "network")

    def print_custom(self, p: Printer) -> None:
        print_return(p, self)

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        return parse_return(p, cls)


GRAPH = Dialect(
    "graph",
    (FuncOp, ReturnOp, WeightOp, *LAYER_OPS.values()),
    summary="networks: one function per network, one op per layer, weights as values",
)
