"""Recompute groups: forward ops whose activations backward recomputes instead of keeping.

A forward op carrying ``recompute = "<group>"`` (a string attribute; the ``spatial-tile`` pass sets
it on every op of a patch) belongs to that group. When the training step is expanded:

1. every backward op emitted for a forward op of group ``G`` is tagged ``recompute = G``
   too (:func:`tag_backward`);
2. :func:`recompute_groups` then inserts, right before the first backward op of ``G``, a
   copy of ``G``'s forward ops (same operands from outside the group: the kept segment
   input and the weights), each marked ``recomputed = G`` instead, and rewires ``G``'s
   backward ops to read the copies.

So no backward op of ``G`` reads a value ``G``'s forward pass produced: those values die
at the end of the forward pass (their last reader is the op that joins the patches), and
each patch is rebuilt just before its own backward. The different attribute keeps ``cse``
from merging a copy back into the original. Backward ops outside ``G`` that read ``G``'s
values (``graph.concat_grad_input``, which uses only their shapes) are left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from crane.dialects.graph import FuncOp
from crane.ir.attributes import StringAttr
from crane.ir.core import Operation, Value

RECOMPUTE_ATTR = "recompute"
"""On a forward op: the recompute group it belongs to. On a backward op: whose backward it is."""

RECOMPUTED_ATTR = "recomputed"
"""On a copy made by :func:`recompute_groups`: the group it recomputes."""


def group_of(op: Operation, key: str = RECOMPUTE_ATTR) -> str | None:
    """The recompute group named by ``op``'s ``key`` attribute, if any."""
    attr = op.attributes.get(key)
    return attr.value if isinstance(attr, StringAttr) else None


def tag_backward(forward: Operation, backward: Operation) -> None:
    """Mark ``backward`` (emitted for ``forward``) as part of ``forward``'s recompute group."""
    group = forward.attributes.get(RECOMPUTE_ATTR)
    if group is not None:
        backward.attributes[RECOMPUTE_ATTR] = group


def is_recomputed(value: Value) -> bool:
    """Whether ``value`` is made by a recomputation copy (it lives only inside backward)."""
    owner = value.owner_op
    return owner is not None and RECOMPUTED_ATTR in owner.attributes


def recompute_groups(func: FuncOp, forward: Sequence[Operation]) -> int:
    """Insert the recomputation of every group that backward reads; returns the ops added.

    ``forward`` are the function's forward ops in order (before the backward ops).
    """
    groups: dict[str, list[Operation]] = {}
    for op in forward:
        group = group_of(op)
        if group is not None:
            groups.setdefault(group, []).append(op)
    readers: dict[str, list[Operation]] = {}
    for op in func.body.ops:
        group = group_of(op)
        if group in groups and op not in groups[group]:
            readers.setdefault(group, []).append(op)
    added = 0
    for group, ops in groups.items():
        added += _recompute(group, ops, readers.get(group, []))
    return added


def _recompute(group: str, ops: Sequence[Operation], readers: Sequence[Operation]) -> int:
    """Copy ``ops`` before the first reader that needs them; rewire the readers."""
    produced = {result for op in ops for result in op.results}
    needing = [op for op in readers if any(v in produced for v in op.operands)]
    if not needing:
        return 0
    anchor = needing[0]
    block = anchor.parent
    assert block is not None
    mapping: dict[Value, Value] = {}
    for op in _needed(ops, [v for r in needing for v in r.operands if v in produced]):
        copy = op.clone(mapping)
        del copy.attributes[RECOMPUTE_ATTR]
        copy.attributes[RECOMPUTED_ATTR] = StringAttr(group)
        block.insert_before(anchor, copy)
    for op in needing:
        for index, value in enumerate(op.operands):
            if value in mapping:
                op.set_operand(index, mapping[value])
    return len(mapping)


def _needed(ops: Sequence[Operation], wanted: Sequence[Value]) -> list[Operation]:
    """The ops of ``ops`` (in order) that the values ``wanted`` depend on."""
    needed: set[Operation] = set()
    stack = [v.owner_op for v in wanted]
    members = set(ops)
    while stack:
        op = stack.pop()
        if op is None or op in needed or op not in members:
            continue
        needed.add(op)
        stack.extend(v.owner_op for v in op.operands)
    return [op for op in ops if op in needed]
