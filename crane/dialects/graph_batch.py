"""The batch a ``graph.func`` was elaborated at, and a copy of it at a larger batch.

``segment{batch=8}`` may schedule a network elaborated at batch 1. Codegen then lowers,
and the tile simulator checks against, a copy whose per-sample values (network inputs and
everything computed from them along the batch axis) have their leading dimension
multiplied by the factor; weights, optimizer state, weight gradients and reductions keep
their shapes. Only the func's ``batch`` attribute changes among the attributes (no graph
op's attributes name the batch), so the copy is only read, never verified or printed.
"""

from __future__ import annotations

from crane.dialects.graph import FuncOp, LayerOp
from crane.dialects.graph_grad import AccumulateOp, GradOp
from crane.ir.attributes import IntAttr
from crane.ir.core import Operation, Value
from crane.ir.types import TensorType


def graph_batch(func: Operation) -> int:
    """The batch size a ``graph.func`` was elaborated at (its ``batch`` attribute, else 1)."""
    attr = func.attributes.get("batch")
    return attr.value if isinstance(attr, IntAttr) and attr.value > 0 else 1


def _scale(value: Value, batch: int, factor: int) -> bool:
    ttype = value.type
    if not isinstance(ttype, TensorType) or not ttype.shape or ttype.shape[0] != batch:
        return False
    value.type = ttype.with_shape((batch * factor, *ttype.shape[1:]))
    return True


def _per_sample_inputs(op: Operation, scaled: set[Value]) -> bool:
    if isinstance(op, GradOp):
        return op.role == "input" and any(v in scaled for v in (op.grad_output, *op.forward_inputs))
    if isinstance(op, LayerOp):
        return not op.kind.is_loss and any(v in scaled for v in op.inputs)
    return isinstance(op, AccumulateOp) and any(v in scaled for v in op.operands)


def rebatched(func: FuncOp, batch: int) -> FuncOp | None:
    """``func`` at ``batch``: itself at its own batch, a copy at a multiple of it, None
    at any other batch."""
    have = graph_batch(func)
    if batch == have:
        return func
    if batch % have:
        return None
    copy = func.clone()
    assert isinstance(copy, FuncOp)
    if "batch" in copy.attributes:
        copy.attributes["batch"] = IntAttr(batch)
    factor = batch // have
    scaled: set[Value] = {arg for arg in copy.body.args if _scale(arg, have, factor)}
    for op in copy.body.ops:
        if _per_sample_inputs(op, scaled):
            scaled.update(r for r in op.results if _scale(r, have, factor))
    return copy
