"""Expand a forward ``graph.func`` into one training step, in place.

Batchnorms that normalise with running statistics switch to batch statistics first
(``crane.autodiff.train_mode``), as a training step does.

Order of the new body: the forward ops (unchanged), the loss seed, the backward ops in
reverse topological order of the forward ops (with ``graph.accumulate`` where a value fans
out), then per weight its optimizer state and update. The function then returns
``(loss, updated weights..., updated optimizer states...)`` and carries a
``training_step`` attribute (optimizer and hyper-parameters) so the expansion is not
repeated.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from crane.autodiff.config import TrainingConfig
from crane.autodiff.recompute import recompute_groups, tag_backward
from crane.autodiff.rules import backward_step, differentiable_inputs, is_float_tensor
from crane.autodiff.train_mode import use_batch_statistics
from crane.dialects.graph import LAYER_OPS, FuncOp, LayerOp, ReturnOp, WeightOp
from crane.dialects.graph_grad import (
    TRAINING_STEP_ATTR,
    UPDATE_OPS,
    AccumulateOp,
    FillOp,
    GradOp,
    OptimizerStateOp,
)
from crane.ir.attributes import BoolAttr, DictAttr, FloatAttr, IntAttr, StringAttr, TypeAttr
from crane.ir.core import Operation, Value
from crane.ir.types import FunctionType, ScalarType, TensorType


class AutodiffError(Exception):
    """A training step cannot be built; ``op`` locates the problem."""

    def __init__(self, message: str, op: Operation) -> None:
        super().__init__(message)
        self.message = message
        self.op = op


def find_loss(func: FuncOp, name: str) -> LayerOp:
    """The loss op: the op whose result is named ``name``, else the only loss-kind op."""
    layers = [op for op in func.body.ops if isinstance(op, LayerOp)]
    named = [op for op in layers if name and op.results[0].name_hint == name]
    losses = named or [op for op in layers if op.kind.is_loss]
    if len(losses) == 1:
        return losses[0]
    if not losses:
        raise AutodiffError("training needs a loss, but the network has none "
                            "(add 'loss cross_entropy(...)' to a train section)", func)
    raise AutodiffError(f"{len(losses)} loss layers and no unique loss named '{name}'", func)


def _ancestors(loss: Operation) -> set[Operation]:
    seen: set[Operation] = set()
    stack = [loss]
    while stack:
        op = stack.pop()
        if op in seen:
            continue
        seen.add(op)
        stack.extend(v.owner_op for v in op.operands if v.owner_op is not None)
    return seen


class _Grads:
    """Gradient contributions per forward value; sums them on first read."""

    def __init__(self, body: list[Operation]) -> None:
        self.parts: dict[Value, list[Value]] = {}
        self.body = body

    def add(self, value: Value, grad: Value) -> None:
        self.parts.setdefault(value, []).append(grad)

    def total(self, value: Value) -> Value | None:
        parts = self.parts.get(value)
        if not parts:
            return None
        if len(parts) == 1:
            return parts[0]
        op = AccumulateOp.build(parts)
        op.results[0].name_hint = f"{value.name_hint or 'v'}.grad"
        self.body.append(op)
        self.parts[value] = [op.results[0]]
        return op.results[0]


def _requires_grad(ops: Sequence[Operation]) -> set[Value]:
    needed: set[Value] = set()
    for op in ops:
        if isinstance(op, WeightOp):
            needed.add(op.results[0])
            continue
        if any(v in needed for v in op.operands) and all(is_float_tensor(r) for r in op.results):
            needed.update(op.results)
    return needed


def _backward(forward: Sequence[Operation], loss: LayerOp, body: list[Operation]) -> _Grads:
    active = _ancestors(loss)
    needed = _requires_grad([op for op in forward if op in active])
    grads = _Grads(body)
    seed = FillOp.build(1.0, loss.results[0].type)  # type: ignore[arg-type]
    seed.results[0].name_hint = "loss.seed"
    body.append(seed)
    grads.add(loss.results[0], seed.results[0])
    for op in reversed(forward):
        if not isinstance(op, LayerOp) or op not in active:
            continue
        grad_out = grads.total(op.results[0])
        if grad_out is None:
            continue
        base = op.results[0].name_hint or op.kind.name
        emit = _emitter(op, body)
        for value, grad in backward_step(op, grad_out, differentiable_inputs(op, needed.__contains__), emit):
            grad.name_hint = f"{value.name_hint or base}.grad"
            grads.add(value, grad)
    return grads


def _emitter(forward: LayerOp, body: list[Operation]) -> Callable[[GradOp], None]:
    """Appends the backward ops of ``forward``, tagged with its recompute group if it has one."""
    def emit(grad: GradOp) -> None:
        tag_backward(forward, grad)
        body.append(grad)
    return emit


def _hyper(config: TrainingConfig) -> dict[str, float | bool | int]:
    hyper: dict[str, float | bool | int] = dict(config.hyper)
    if config.optimizer == "adam":
        hyper["step"] = config.step
    return hyper


def _update(weight: WeightOp, grad: Value, config: TrainingConfig, body: list[Operation]) -> tuple[Value, list[Value]]:
    update_class = UPDATE_OPS[config.optimizer]
    name = weight.weight_name
    wtype = weight.results[0].type
    assert isinstance(wtype, TensorType)
    states: list[Value] = []
    for state in update_class.states:
        op = OptimizerStateOp.build(f"{name}.{state}", wtype)
        op.results[0].name_hint = f"{name}.{state}"
        body.append(op)
        states.append(op.results[0])
    update = update_class.build(weight.results[0], grad, states, _hyper(config), weight.location)
    body.append(update)
    update.results[0].name_hint = f"{name}.new"
    for result, state in zip(update.results[1:], update_class.states, strict=True):
        result.name_hint = f"{name}.{state}.new"
    return update.results[0], list(update.results[1:])


def expand_training_step(func: FuncOp, config: TrainingConfig) -> int:
    """Turn ``func`` into one training step; returns the number of ops added.

    Raises :class:`AutodiffError` when the loss is missing or ambiguous.
    """
    loss = find_loss(func, config.loss)
    use_batch_statistics(func)
    ops = list(func.body.ops)
    terminator = ops[-1]
    forward = ops[:-1] if isinstance(terminator, ReturnOp) else ops
    for index, op in enumerate(forward):
        if isinstance(op, LayerOp) and op.kind.is_random and "key" not in op.attributes:
            op.attributes["key"] = StringAttr(op.results[0].name_hint or f"{op.kind.name}{index}")
    body: list[Operation] = []
    grads = _backward(forward, loss, body)
    new_weights: list[Value] = []
    new_states: list[Value] = []
    for weight in (op for op in forward if isinstance(op, WeightOp)):
        grad = grads.total(weight.results[0])
        if grad is None:
            continue
        new_weight, states = _update(weight, grad, config, body)
        new_weights.append(new_weight)
        new_states.extend(states)
    outputs = [loss.results[0], *new_weights, *new_states]
    body.append(ReturnOp.build(outputs, terminator.location))
    for op in body[:-1]:
        func.body.insert_before(terminator, op)
    terminator.erase()
    func.body.append(body[-1])
    _retype(func, outputs, config)
    # Patches marked for recomputation (the spatial-tile pass) are rebuilt inside backward.
    return len(body) + recompute_groups(func, forward)


def _retype(func: FuncOp, outputs: Sequence[Value], config: TrainingConfig | None = None) -> None:
    inputs = tuple(a.type for a in func.body.args)
    func.attributes["function_type"] = TypeAttr(FunctionType(inputs, tuple(v.type for v in outputs)))
    if config is None:
        return
    hyper = {k: BoolAttr(v) if isinstance(v, bool) else FloatAttr(float(v)) for k, v in config.hyper.items()}
    func.attributes[TRAINING_STEP_ATTR] = DictAttr.of({
        "optimizer": StringAttr(config.optimizer), "hyper": DictAttr.of(hyper), "step": IntAttr(config.step)})


LOSS_TARGETS = ("mse", "cross_entropy")
"""Loss kinds :func:`attach_loss` can add."""


def attach_loss(func: FuncOp, kind: str) -> LayerOp:
    """Add a ``kind`` loss on the function's first output against a new ``%target`` argument
    (same shape for ``mse``; int32 class labels for ``cross_entropy``), named ``loss``.

    For networks bundled without a training section. Raises :class:`AutodiffError`.
    """
    ops = list(func.body.ops)
    terminator = ops[-1] if ops else None
    if not isinstance(terminator, ReturnOp) or not terminator.operands or kind not in LOSS_TARGETS:
        raise AutodiffError(f"cannot attach a '{kind}' loss (expected {' or '.join(LOSS_TARGETS)} "
                            "and a function with an output)", func)
    output = terminator.operands[0]
    otype = output.type
    assert isinstance(otype, TensorType)
    ttype = otype if kind == "mse" else TensorType(otype.shape[:-1], ScalarType("i32"))
    target = func.body.add_argument(ttype, "target")
    loss = LAYER_OPS[kind].build([output, target], [], {}, TensorType((), otype.element), func.location)
    loss.results[0].name_hint = "loss"
    func.body.insert_before(terminator, loss)
    _retype(func, terminator.operands)
    return loss


def backward_ops(func: FuncOp) -> list[GradOp]:
    """The gradient ops of a training step, in order."""
    return [op for op in func.body.ops if isinstance(op, GradOp)]
