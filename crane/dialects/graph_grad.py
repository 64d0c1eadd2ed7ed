"""Training ops of the ``graph`` dialect: gradients, accumulation, optimizer updates.

Generated from the layer table like the forward ops. For each layer kind ``K``:

- ``graph.K_grad_input`` takes ``(grad_out, forward operands...)`` and returns the
  gradients of the forward *inputs* listed in its ``wrt`` attribute (input positions);
- ``graph.K_grad_weight`` (kinds with weights) takes the same operands and returns the
  gradient of every forward weight, in operand order.

Both carry the forward op's attributes, so a backward op names every forward value it
needs (a later pass may keep or recompute them). For loss kinds ``grad_out`` is the
scalar seed ``d loss / d loss`` made by ``graph.fill``.

    %g = graph.fill {value = 1.0} : () -> tensor<f32>
    %dl = graph.cross_entropy_grad_input %g, %logits, %labels {wrt = array<i64: 0>} : ...
    %dw, %db = graph.linear_grad_weight %dl, %x, %w, %b {out = 10, bias = true} : ...
    %dx = graph.accumulate %d1, %d2 : (T, T) -> T
    %v = graph.optimizer_state {name = "w.velocity"} : () -> T
    %w2, %v2 = graph.momentum %w, %dw, %v {lr = 0.1, momentum = 0.9, ...} : ...

The dialect object holding forward and training ops is :data:`GRAPH_WITH_TRAINING`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from crane.dialects.graph import (
    _ATTR_CLASS,
    GRAPH,
    LayerOp,
    NamedTensorOp,
    from_attribute,
    to_attribute,
    verify_layer_attributes,
)
from crane.dialects.layers.definition import LayerKind
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.dialects.layers.rules import ShapeError, fmt
from crane.dialects.layers.values import AttrValue, Shape
from crane.ir.attributes import Attribute, BoolAttr, DenseIntsAttr, FloatAttr, IntAttr, StringAttr
from crane.ir.context import Dialect
from crane.ir.core import Operation, Value, VerifyError
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec, Result
from crane.ir.traits import Pure
from crane.ir.types import TensorType


def _shape(value: Value) -> Shape:
    if not isinstance(value.type, TensorType):
        raise VerifyError(f"expected a tensor, got {value.type}")
    return value.type.shape


def _bytes(values: Sequence[Value]) -> int:
    return sum(v.type.byte_size for v in values if isinstance(v.type, TensorType))


class GradOp(Operation):
    """Base of the generated ``graph.<kind>_grad_input`` / ``_grad_weight`` ops."""

    __slots__ = ()
    kind: ClassVar[LayerKind]
    role: ClassVar[str]
    """``"input"`` or ``"weight"``."""

    @classmethod
    def build(cls, grad_out: Value, forward: LayerOp, result_types: Sequence[TensorType],
              wrt: Sequence[int] = (), location: Location = UNKNOWN) -> GradOp:
        """The gradient op of ``forward`` given the gradient of its result."""
        attributes: dict[str, Attribute] = {k: to_attribute(v) for k, v in forward.layer_attrs.items()}
        if cls.role == "input":
            attributes["wrt"] = DenseIntsAttr(tuple(wrt))
        key = forward.attributes.get("key")
        if key is not None:
            attributes["key"] = key
        op = cls.create(None, (grad_out, *forward.operands), tuple(result_types), attributes, (), location)
        assert isinstance(op, GradOp)
        return op

    @property
    def grad_output(self) -> Value:
        return self._operands[0]

    @property
    def forward_operands(self) -> tuple[Value, ...]:
        return tuple(self._operands[1:])

    @property
    def layer_attrs(self) -> dict[str, AttrValue]:
        """The forward layer's attributes as plain Python values."""
        return {p.name: from_attribute(self.attributes[p.name]) for p in self.kind.params
                if p.name in self.attributes}

    @property
    def num_weights(self) -> int:
        if len(self._operands) < 2:
            return 0
        return len(self.kind.weights((_shape(self._operands[1]),), self.layer_attrs))

    @property
    def forward_inputs(self) -> tuple[Value, ...]:
        ops = self.forward_operands
        return ops[: len(ops) - self.num_weights]

    @property
    def forward_weights(self) -> tuple[Value, ...]:
        ops = self.forward_operands
        return ops[len(ops) - self.num_weights:]

    @property
    def wrt(self) -> tuple[int, ...]:
        """Input positions whose gradients this op returns (all weights for ``_grad_weight``)."""
        if self.role == "weight":
            return ()
        attr = self.attributes.get("wrt")
        return tuple(attr) if isinstance(attr, DenseIntsAttr) else ()

    def differentiated(self) -> tuple[Value, ...]:
        """The forward values whose gradients are the results, in result order."""
        if self.role == "weight":
            return self.forward_weights
        inputs = self.forward_inputs
        return tuple(inputs[i] for i in self.wrt)

    def verify_op(self) -> None:
        try:
            verify_layer_attributes(self.kind, self.layer_attrs)
            self._verify_forward()
            targets = self.differentiated()
        except (IndexError, KeyError, TypeError, ValueError, AssertionError, ArithmeticError) as problem:
            raise VerifyError(f"malformed operands or attributes ({problem})") from None
        if len(targets) != len(self.results):
            raise VerifyError(f"returns {len(self.results)} gradients for {len(targets)} differentiated values")
        for index, (value, result) in enumerate(zip(targets, self.results, strict=True)):
            if value.type != result.type:
                raise VerifyError(f"gradient #{index} has type {result.type}, expected {value.type}")

    def _verify_forward(self) -> None:
        """The forward layer's shape rule holds, and the incoming gradient has its result's shape."""
        shapes = tuple(_shape(v) for v in self.forward_inputs)
        try:
            out_shape, _ = self.kind.shape(shapes, self.layer_attrs)
        except ShapeError as problem:
            raise VerifyError(problem.message) from None
        got = _shape(self.grad_output)
        if got != out_shape:
            raise VerifyError(f"the incoming gradient has shape {fmt(got)}, but the forward "
                              f"{self.kind.name} returns {fmt(out_shape)}")

    def forward_macs(self) -> int:
        """MACs of the forward layer this op differentiates."""
        shapes = tuple(_shape(v) for v in self.forward_inputs)
        out = _shape(self.grad_output) if not self.kind.is_loss else ()
        return self.kind.macs(shapes, out, self.layer_attrs)

    def _sdpa_macs(self) -> int:
        if self.kind.name != "attention":
            return 0
        n, s, d = _shape(self.forward_inputs[0])
        return 2 * n * s * _shape(self.forward_inputs[-1])[1] * d

    def accounting(self) -> Mapping[str, int]:
        """Backward MACs: dX costs about the forward MACs, dW too (attention: dX adds the
        second score matmul pair, dW only the projections), so dX + dW is about 2x forward."""
        forward = self.forward_macs()
        sdpa = self._sdpa_macs()
        macs = forward + sdpa if self.role == "input" else forward - sdpa
        if self.role == "input" and len(self.wrt) > 1 and self.kind.name == "matmul":
            macs = forward * len(self.wrt)
        elementwise = sum(v.type.num_elements for v in self.results if isinstance(v.type, TensorType))
        return {"backward_macs": macs, "backward_flops": 2 * macs + elementwise,
                "gradient_bytes": _bytes(self.results) if self.role == "weight" else 0}


def _grad_class(kind: LayerKind, role: str) -> type[GradOp]:
    attributes = [Attr(p.name, _ATTR_CLASS[p.type], doc=p.doc) for p in kind.params]
    if role == "input":
        attributes.append(Attr("wrt", DenseIntsAttr, doc="input positions differentiated"))
    name = f"graph.{kind.name}_grad_{role}"
    spec = OpSpec(name, operands=(Operand("operands", variadic=True),),
                  results=(Result("grads", variadic=True),), attributes=tuple(attributes),
                  summary=f"gradient of {kind.name} wrt its {role}s")
    class_name = "".join(part.title() for part in kind.name.split("_")) + f"Grad{role.title()}Op"
    namespace = {"__slots__": (), "spec": spec, "traits": () if kind.is_random else (Pure(),),
                 "kind": kind, "role": role, "__doc__": f"``{name}``: {spec.summary}."}
    return type(class_name, (GradOp,), namespace)


GRAD_INPUT_OPS: Mapping[str, type[GradOp]] = {n: _grad_class(k, "input") for n, k in LAYER_KINDS.items()}
"""Layer kind -> its input-gradient op class."""
GRAD_WEIGHT_OPS: Mapping[str, type[GradOp]] = {
    n: _grad_class(k, "weight") for n, k in LAYER_KINDS.items() if k.has_weights}
"""Layer kind -> its weight-gradient op class (kinds with weights only)."""


class FillOp(Operation):
    """``%g = graph.fill {value = 1.0} : () -> tensor<f32>``: a constant tensor (the loss seed)."""

    __slots__ = ()
    spec = OpSpec("graph.fill", results=(Result("result"),), attributes=(Attr("value", FloatAttr),),
                  summary="a tensor filled with one value")
    traits = (Pure(),)

    @classmethod
    def build(cls, value: float, type: TensorType, location: Location = UNKNOWN) -> FillOp:
        op = cls.create(None, (), (type,), {"value": FloatAttr(value)}, (), location)
        assert isinstance(op, FillOp)
        return op


class AccumulateOp(Operation):
    """``%g = graph.accumulate %a, %b, ...``: the sum of the gradients of a value that fans out."""

    __slots__ = ()
    spec = OpSpec("graph.accumulate", operands=(Operand("grads", variadic=True),),
                  results=(Result("result"),), summary="sum of gradient contributions")
    traits = (Pure(),)

    @classmethod
    def build(cls, grads: Sequence[Value], location: Location = UNKNOWN) -> AccumulateOp:
        op = cls.create(None, tuple(grads), (grads[0].type,), {}, (), location)
        assert isinstance(op, AccumulateOp)
        return op

    def verify_op(self) -> None:
        if len(self._operands) < 2:
            raise VerifyError("needs at least two gradients")
        if any(v.type != self.results[0].type for v in self._operands):
            raise VerifyError("every gradient must have the result type")

    def accounting(self) -> Mapping[str, int]:
        out = self.results[0].type
        elements = out.num_elements if isinstance(out, TensorType) else 0
        return {"backward_flops": elements * (len(self._operands) - 1)}


class OptimizerStateOp(NamedTensorOp):
    """``%m = graph.optimizer_state {name = "w.m"} : () -> T``: zero-initialised optimizer state."""

    __slots__ = ()
    spec = OpSpec("graph.optimizer_state", results=(Result("result"),),
                  attributes=(Attr("name", StringAttr),), summary="optimizer state, zero at the start")
    traits = (Pure(),)

    @property
    def state_name(self) -> str:
        return self.tensor_name

    def accounting(self) -> Mapping[str, int]:
        return {"optimizer_state_bytes": _bytes(self.results)}


_HYPER_CLASS: Mapping[type, type[Attribute]] = {bool: BoolAttr, int: IntAttr, float: FloatAttr}


class UpdateOp(Operation):
    """Base of the optimizer updates: operands ``(weight, grad, state...)``, results
    ``(new weight, new state...)``; hyper-parameters are attributes."""

    __slots__ = ()
    states: ClassVar[tuple[str, ...]] = ()
    flops_per_element: ClassVar[int] = 2

    @classmethod
    def build(cls, weight: Value, grad: Value, states: Sequence[Value], hyper: Mapping[str, float | bool | int],
              location: Location = UNKNOWN) -> UpdateOp:
        attrs: dict[str, Attribute] = {k: _HYPER_CLASS[type(v)](v) for k, v in hyper.items()}  # type: ignore[call-arg]
        types = (weight.type, *(s.type for s in states))
        op = cls.create(None, (weight, grad, *states), types, attrs, (), location)
        assert isinstance(op, UpdateOp)
        return op

    def hyper(self) -> dict[str, AttrValue]:
        """The hyper-parameters as plain values."""
        return {k: from_attribute(v) for k, v in self.attributes.items()}

    def verify_op(self) -> None:
        if len(self._operands) != 2 + len(self.states):
            raise VerifyError(f"expects weight, gradient and {len(self.states)} state tensor(s)")
        if any(v.type != self._operands[0].type for v in self._operands):
            raise VerifyError("weight, gradient and state must have one type")

    def accounting(self) -> Mapping[str, int]:
        weight = self._operands[0].type
        elements = weight.num_elements if isinstance(weight, TensorType) else 0
        return {"optimizer_flops": self.flops_per_element * elements}


def _update_class(name: str, states: tuple[str, ...], flops: int, summary: str) -> type[UpdateOp]:
    spec = OpSpec(f"graph.{name}", operands=(Operand("operands", variadic=True),),
                  results=(Result("results", variadic=True),), summary=summary)
    namespace = {"__slots__": (), "spec": spec, "traits": (Pure(),), "states": states,
                 "flops_per_element": flops, "__doc__": f"``graph.{name}``: {summary}."}
    return type(f"{name.title()}Op", (UpdateOp,), namespace)


UPDATE_OPS: Mapping[str, type[UpdateOp]] = {
    "sgd": _update_class("sgd", (), 3, "w - lr (g + wd w)"),
    "momentum": _update_class("momentum", ("velocity",), 5, "heavy-ball momentum (optionally Nesterov)"),
    "adam": _update_class("adam", ("m", "v"), 12, "Adam with bias correction at step 'step'"),
}
"""Optimizer name -> update op class; ``states`` names the state tensors it threads."""

TRAINING_STEP_ATTR = "training_step"
"""Function attribute of a training step (``autodiff`` sets it): the optimizer and its
hyper-parameters."""


def is_training_step(func: Operation) -> bool:
    """Whether ``func`` is a training step (``autodiff`` has expanded it)."""
    return TRAINING_STEP_ATTR in func.attributes


TRAINING_OPS: tuple[type[Operation], ...] = (
    *GRAD_INPUT_OPS.values(), *GRAD_WEIGHT_OPS.values(), FillOp, AccumulateOp, OptimizerStateOp,
    *UPDATE_OPS.values())
"""Every op this module adds to the graph dialect."""

GRAPH_WITH_TRAINING = Dialect("graph", (*GRAPH.ops, *TRAINING_OPS), summary=GRAPH.summary)
"""The ``graph`` dialect with its training ops (what ``default_context()`` loads)."""
