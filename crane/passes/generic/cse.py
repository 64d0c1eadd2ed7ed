"""``cse``: merge pure ops that compute the same thing."""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.core import Block, Operation
from crane.ir.traits import IsolatedFromAbove, Pure
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass

_Key = tuple[object, ...]


def _key(op: Operation) -> _Key | None:
    if op.regions or not op.has_trait(Pure):
        return None
    return (op.name, tuple(id(v) for v in op._operands), tuple(op.attributes.items()),
            tuple(r.type for r in op.results))


def eliminate_common_subexpressions(root: Operation) -> int:
    """Replace each pure op by an identical earlier one that dominates it; returns merges."""
    merged = 0
    for region in root.regions:
        for block in region.blocks:
            merged += _cse_block(block, [{}])
    return merged


def _cse_block(block: Block, scopes: list[dict[_Key, Operation]]) -> int:
    # Ops known in enclosing blocks are visible here; the innermost scope is this block's.
    scopes.append({})
    merged = 0
    for op in block.ops:
        merged += _cse_nested(op, scopes)
        key = _key(op)
        if key is None:
            continue
        earlier = next((s[key] for s in reversed(scopes) if key in s), None)
        if earlier is None:
            scopes[-1][key] = op
            continue
        op.replace_all_uses_with(earlier.results)
        op.erase()
        merged += 1
    scopes.pop()
    return merged


def _cse_nested(op: Operation, scopes: list[dict[_Key, Operation]]) -> int:
    if not op.regions:
        return 0
    inner = [{}] if op.has_trait(IsolatedFromAbove) else scopes
    return sum(_cse_block(b, inner) for r in op.regions for b in r.blocks)


@dataclass(frozen=True)
class CommonSubexpressionElimination(Pass):
    """Merge pure ops with the same name, operands, attributes and result types.

    An op is replaced by an identical one earlier in its block or in an enclosing block
    (which dominates it). Ops with regions or side effects are left alone.
    """

    name = "cse"
    summary = "eliminate common subexpressions"

    def run(self, op: Operation, ctx: PassContext) -> None:
        ctx.statistic("ops-merged", eliminate_common_subexpressions(op))
