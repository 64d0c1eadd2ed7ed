"""``canonicalize``: apply every op's canonicalisation patterns greedily, dropping dead ops."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from crane.ir.core import Operation
from crane.ir.rewriting import RewritePattern, apply_patterns_greedily
from crane.limits.ranges import Between
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass


def collect_patterns(root: Operation) -> list[RewritePattern]:
    """The canonicalisation patterns of every op class that occurs under ``root``.

    An op class offers patterns through a ``canonicalization_patterns`` class attribute
    (a tuple of pattern instances).
    """
    patterns: list[RewritePattern] = []
    seen: set[type[Operation]] = set()
    for op in root.walk():
        cls = type(op)
        if cls in seen:
            continue
        seen.add(cls)
        patterns.extend(getattr(cls, "canonicalization_patterns", ()))
    return patterns


@dataclass(frozen=True)
class Canonicalize(Pass):
    """Rewrite ops into canonical form with their own patterns, and erase dead pure ops.

    Uses the greedy driver of :mod:`crane.ir.rewriting` (its order and fixpoint rules are
    documented there). Reports a warning when the sweep cap stops it before a fixpoint.
    """

    name = "canonicalize"
    summary = "canonicalize ops with their patterns and erase dead ones"

    max_iterations: Annotated[int, Between(1, 10_000)] = 10
    """Sweeps of the greedy driver before it gives up on reaching a fixpoint."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        result = apply_patterns_greedily(op, collect_patterns(op), max_iterations=self.max_iterations)
        for pattern, hits in result.hits.items():
            ctx.statistic(f"pattern {pattern}", hits)
        ctx.statistic("dead-ops-erased", result.erased_dead)
        if not result.converged:
            ctx.emit_warning(op, f"canonicalize did not converge in {self.max_iterations} sweeps")
