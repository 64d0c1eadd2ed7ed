"""Per layer kind: which inputs carry gradients and how a backward step is emitted."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crane.dialects.graph import LayerOp
from crane.dialects.graph_grad import GRAD_INPUT_OPS, GRAD_WEIGHT_OPS, GradOp
from crane.ir.core import Value
from crane.ir.types import TensorType

Emit = Callable[[GradOp], None]
"""Appends a new backward op to the training graph."""


def is_float_tensor(value: Value) -> bool:
    """True for floating-point tensors (integer ids and labels have no gradient)."""
    return isinstance(value.type, TensorType) and value.type.element.is_float


def differentiable_inputs(op: LayerOp, requires_grad: Callable[[Value], bool]) -> tuple[int, ...]:
    """Positions of the inputs of ``op`` that need a gradient."""
    return tuple(i for i, v in enumerate(op.inputs) if is_float_tensor(v) and requires_grad(v))


def backward_step(op: LayerOp, grad_out: Value, wrt: Sequence[int], emit: Emit) -> list[tuple[Value, Value]]:
    """Emit the backward ops of ``op`` and return ``(forward value, gradient)`` pairs.

    The input-gradient op covers the inputs in ``wrt``; the weight-gradient op every weight.
    A self-attention's single input gets both its query and key/value contributions
    inside the one input-gradient op.
    """
    pairs: list[tuple[Value, Value]] = []
    location = op.location
    if wrt:
        types = [op.inputs[i].type for i in wrt]
        grad_in = GRAD_INPUT_OPS[op.kind.name].build(grad_out, op, types, wrt, location)  # type: ignore[arg-type]
        emit(grad_in)
        pairs.extend(zip((op.inputs[i] for i in wrt), grad_in.results, strict=True))
    weight_class = GRAD_WEIGHT_OPS.get(op.kind.name)
    if weight_class is None or not op.weights:
        return pairs
    grad_w = weight_class.build(grad_out, op, [w.type for w in op.weights], (), location)  # type: ignore[misc]
    emit(grad_w)
    pairs.extend(zip(op.weights, grad_w.results, strict=True))
    return pairs
