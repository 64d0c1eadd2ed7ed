"""``dce``: remove pure ops whose results are unused."""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.core import Operation
from crane.ir.rewriting import is_trivially_dead
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


def eliminate_dead_code(root: Operation) -> int:
    """Erase trivially dead ops under ``root`` (users first); returns how many."""
    erased = 0
    for op in list(root.walk(reverse=True)):
        if op is not root and op.parent is not None and is_trivially_dead(op):
            op.erase()
            erased += 1
    return erased


@dataclass(frozen=True)
class DeadCodeElimination(Pass):
    """Erase ops that have no side effects (the ``Pure`` trait) and whose results are unused.

    Ops are visited in reverse order, so a chain of dead ops goes in one run.
    """

    name = "dce"
    summary = "remove pure ops whose results are unused"

    def run(self, op: Operation, ctx: PassContext) -> None:
        ctx.statistic("ops-erased", eliminate_dead_code(op))
