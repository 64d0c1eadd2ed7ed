"""Which workload layer (schedule column) executes each graph op.

The scheduler's layers come from :mod:`crane.schedule.from_graph`: one per compute op,
unary ops and norms merged into their producer, a whole attention one layer. Codegen
replays the same walk and records, for every op, the layer whose tiles run it:

* a compute op and the unary ops merged into it run on that layer's tiles;
* transparent ops (reshape, flatten, transpose, slice, concat, dropout) and embeddings run
  with the earliest layer that reads their result (else with the layer of their input);
* a loss runs with the layer of its prediction;
* training ops (after ``autodiff``) are *backward* ops: a gradient op runs on the tiles of
  the forward op it differentiates, an optimizer update with the layer reading the weight,
  an accumulation with the operand produced last (in backward order), a fill with its user.

The merge rule counts only forward users, so a training step (whose backward ops read
every forward value) maps onto the forward layers its inference graph was scheduled with;
codegen falls back to counting every user (``from_graph`` on the training step itself)
when that is what the schedule's layers say.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from crane.cost.workload import Dims
from crane.dialects.graph import FuncOp, LayerOp, ReturnOp, WeightOp
from crane.dialects.graph_batch import graph_batch
from crane.dialects.graph_grad import AccumulateOp, FillOp, GradOp, OptimizerStateOp, UpdateOp
from crane.ir.core import Operation, Value
from crane.schedule.from_graph import WorkloadBuilder


class CodegenError(Exception):
    """The module cannot be lowered; ``op`` (if any) locates the problem."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.op = op


class _ForwardBuilder(WorkloadBuilder):
    """``from_graph``'s walk, with merges decided on forward users only."""

    def __init__(self, batch: int, elem_bytes: int, training: bool, forward_only: bool) -> None:
        super().__init__(batch, elem_bytes)
        self.training = training
        self.forward_only = forward_only

    def mergeable(self, op: LayerOp) -> bool:
        if not self.forward_only:
            return super().mergeable(op)
        source = op.inputs[0]
        users = [u for u in source.users()
                 if isinstance(u, LayerOp) or (isinstance(u, ReturnOp) and not self.training)]
        return source in self.owner and len(users) == 1


@dataclass
class Ownership:
    """Layer of every live op, in graph order; ``forward`` ops first, then ``backward``."""

    forward: list[tuple[Operation, str]]
    backward: list[tuple[Operation, str]]
    layers: list[str]
    anchors: dict[Operation, str] = field(default_factory=dict)
    """The op that makes each layer (its compute op; ops merged into it follow its parts)."""
    dims: dict[str, Dims] = field(default_factory=dict)
    """Each layer's extents, as the scheduler factorises them over tiles."""


def _live(func: FuncOp) -> set[Operation]:
    """Ops whose results reach the function's return (the rest is dead code)."""
    live: set[Operation] = set()
    stack: list[Operation] = [op for op in func.body.ops if isinstance(op, ReturnOp)]
    while stack:
        op = stack.pop()
        if op in live:
            continue
        live.add(op)
        stack += [v.owner_op for v in op.operands if v.owner_op is not None]
    return live


def owners(func: FuncOp, training: bool, forward_only: bool = True) -> Ownership:
    """Assign every live op of ``func`` to a workload layer (see the module docstring).

    ``forward_only=False`` merges as ``from_graph`` does on the function as it stands
    (counting backward users too): the layers of a schedule made after ``autodiff``.
    """
    builder = _ForwardBuilder(graph_batch(func), 1, training, forward_only)
    live = _live(func)
    direct: dict[Operation, str] = {}
    anchors: dict[Operation, str] = {}
    pending: list[Operation] = []
    order = [op for op in func.body.ops if op in live and not isinstance(op, ReturnOp)]
    for op in order:
        if isinstance(op, WeightOp | OptimizerStateOp):
            builder.visit(op) if isinstance(op, WeightOp) else None
            continue
        if not isinstance(op, LayerOp):
            continue
        if not op.kind.is_loss:
            made = len(builder.layers)
            builder.visit(op)
            if len(builder.layers) > made:
                anchors[op] = builder.layers[-1].name
        owner = builder.owner.get(op.results[0])
        if owner is not None and not op.kind.is_loss:
            direct[op] = owner.name
        else:
            pending.append(op)
    _adopt(pending, direct, {op: k for k, op in enumerate(order)},
           {layer.name: k for k, layer in enumerate(builder.layers)})
    forward = [(op, direct[op]) for op in order if op in direct]
    backward_ops = [op for op in order if not isinstance(op, LayerOp | WeightOp | OptimizerStateOp)]
    backward = _backward_owners(backward_ops, direct)
    return Ownership(forward, backward, [layer.name for layer in builder.layers], anchors,
                     {layer.name: layer.dims for layer in builder.layers})


def _producer_layer(value: Value, direct: dict[Operation, str]) -> str | None:
    owner = value.owner_op
    return direct.get(owner) if owner is not None else None


def _adopt(pending: list[Operation], direct: dict[Operation, str],
           position: dict[Operation, int], layer_rank: dict[str, int]) -> None:
    """Transparent ops, embeddings and losses join the layer of their user that runs first
    (the earliest layer in the workload's order, then the first in graph order; not
    use-list order, which a rewrite inserting users reorders), else of a producer. A value
    that a later layer also reads through a chain of transparent ops (ShuffleNet's channel
    split and shuffle feed both the next unit and, unchanged, the one after) is then made
    before its first reader needs it, and stored for the later one."""
    for op in reversed(pending):
        if isinstance(op, LayerOp) and op.kind.is_loss:
            continue
        readers = sorted((u for v in op.results for u in v.users() if u in direct),
                         key=lambda u: (layer_rank.get(direct[u], len(layer_rank)),
                                        position.get(u, len(position))))
        users = [direct[u] for u in readers]
        if users:
            direct[op] = users[0]
    for op in pending:
        if op in direct:
            continue
        found = [p for p in (_producer_layer(v, direct) for v in op.operands) if p]
        users = [direct[u] for v in op.results for u in v.users() if u in direct]
        name = (found or users or [""])[0]
        if not name:
            raise CodegenError(f"cannot place '{op.name}': it reads no layer's result and "
                               "feeds none", op)
        direct[op] = name


def _forward_of(op: GradOp, direct: dict[Operation, str]) -> str | None:
    """The layer of the forward op a gradient op differentiates (same kind and operands)."""
    operands = op.forward_operands
    for user in operands[0].users() if operands else ():
        if isinstance(user, LayerOp) and user.kind.name == op.kind.name \
                and tuple(user.operands) == operands:
            return direct.get(user)
    return None


def _backward_owners(ops: list[Operation], direct: dict[Operation, str]) -> list[tuple[Operation, str]]:
    found: dict[Operation, str] = {}
    for op in ops:
        name = None
        if isinstance(op, GradOp):
            name = _forward_of(op, direct)
        elif isinstance(op, UpdateOp):
            users = [direct[u] for u in op.operands[0].users() if u in direct]
            name = users[0] if users else None
        if name is not None:
            found[op] = name
    for op in reversed(ops):
        if op in found or isinstance(op, AccumulateOp):
            continue
        users = [found[u] for v in op.results for u in v.users() if u in found]
        if isinstance(op, FillOp) and users:
            found[op] = users[0]
    for op in ops:
        if op in found:
            continue
        producers = [found.get(v.owner_op) or direct.get(v.owner_op) for v in op.operands
                     if v.owner_op is not None]
        named = [p for p in producers if p]
        if not named:
            raise CodegenError(f"cannot place the training op '{op.name}' on any layer", op)
        found[op] = named[-1]
    return [(op, found[op]) for op in ops]
