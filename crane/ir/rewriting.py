"""Pattern rewriting: patterns dispatched by op name and one greedy driver.

The driver (:func:`apply_patterns_greedily`) works like this, and tests hold it to it:

1. The worklist starts with every op under the root in pre-order (parents before
   children, program order within a block), the root itself excluded.
2. Ops are taken from the front. A trivially dead op (pure, results unused) is erased.
   Otherwise the patterns registered for its name, then the patterns for any op, are
   tried in descending ``benefit`` (ties: registration order); the first that returns
   True wins.
3. When a pattern changes the IR, the ops it created and the users of values it replaced
   are appended to the worklist; erased ops are skipped when reached.
4. When the worklist is empty and anything changed in this sweep, a new sweep starts from
   step 1, up to ``max_iterations`` sweeps. ``converged`` is False if the cap stopped it.
5. Within one sweep, at most ``REWRITES_PER_OP`` rewrites per op of the initial worklist
   (plus a constant) are applied, so that patterns which keep feeding each other cannot
   loop forever inside a sweep; hitting that limit also ends the run unconverged.

Each successful pattern application is counted under the pattern's class name.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Operation, Value
from crane.ir.traits import Pure


class RewritePattern:
    """Match one op and rewrite it through the rewriter; return True if it changed IR."""

    op_name: ClassVar[str | None] = None
    """The op this pattern applies to; None for any op."""
    benefit: ClassVar[int] = 1

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        raise NotImplementedError


class PatternRewriter:
    """The only way patterns may change IR, so the driver sees every change."""

    def __init__(self) -> None:
        self.created: list[Operation] = []
        self.touched: list[Operation] = []
        self.erased: set[Operation] = set()
        self.changed = False

    def insert_before(self, anchor: Operation, op: Operation) -> Operation:
        """Insert a new op before ``anchor``."""
        Builder(InsertPoint.before(anchor)).insert(op)
        self.created.append(op)
        self.changed = True
        return op

    def replace_all_uses(self, old: Value, new: Value) -> None:
        self.touched.extend(old.users())
        old.replace_all_uses_with(new)
        self.changed = True

    def replace_op(self, op: Operation, values: Sequence[Value]) -> None:
        """Replace ``op``'s results with ``values`` and erase it."""
        for old, new in zip(op.results, values, strict=True):
            self.replace_all_uses(old, new)
        self.erase_op(op)

    def replace_op_with(self, op: Operation, new_op: Operation) -> None:
        """Insert ``new_op`` before ``op``, take over its uses, and erase ``op``."""
        self.insert_before(op, new_op)
        self.replace_op(op, new_op.results)

    def erase_op(self, op: Operation) -> None:
        for operand in op.operands:
            owner = operand.owner_op
            if owner is not None:
                self.touched.append(owner)
        self.erased.update(op.walk())
        op.erase()
        self.changed = True

    def notify_modified(self, op: Operation) -> None:
        """Call after changing an op in place (operands or attributes)."""
        self.touched.append(op)
        self.changed = True


@dataclass
class GreedyResult:
    changed: bool = False
    converged: bool = True
    iterations: int = 0
    hits: dict[str, int] = field(default_factory=dict)
    erased_dead: int = 0


class PatternSet:
    """Patterns indexed by op name, in the order the driver tries them."""

    def __init__(self, patterns: Iterable[RewritePattern]) -> None:
        ordered = sorted(enumerate(patterns), key=lambda p: (-p[1].benefit, p[0]))
        self._by_name: dict[str | None, list[RewritePattern]] = {}
        for _, pattern in ordered:
            self._by_name.setdefault(pattern.op_name, []).append(pattern)

    def for_op(self, name: str) -> list[RewritePattern]:
        return self._by_name.get(name, []) + self._by_name.get(None, [])


def is_trivially_dead(op: Operation) -> bool:
    return op.has_trait(Pure) and not op.regions and all(not r.uses for r in op.results)


def apply_patterns_greedily(root: Operation, patterns: Iterable[RewritePattern], *,
                            max_iterations: int = 10, erase_dead: bool = True) -> GreedyResult:
    """Apply patterns to everything under ``root`` until nothing changes (see module doc)."""
    pattern_set = PatternSet(patterns)
    result = GreedyResult()
    while result.iterations < max_iterations:
        result.iterations += 1
        try:
            if not _sweep(root, pattern_set, result, erase_dead):
                return result
        except _RewriteBudgetExceeded:
            result.changed = True
            break
        result.changed = True
    result.converged = False
    return result


REWRITES_PER_OP = 50


class _RewriteBudgetExceeded(Exception):
    pass


def _sweep(root: Operation, patterns: PatternSet, result: GreedyResult, erase_dead: bool) -> bool:
    worklist = deque(op for op in root.walk() if op is not root)
    budget = REWRITES_PER_OP * len(worklist) + 100
    # Erased ops are held (not their ids) so that a recycled id cannot hide a new op.
    erased: set[Operation] = set()
    changed = False
    while worklist:
        op = worklist.popleft()
        if op in erased or op.parent is None:
            continue
        if erase_dead and is_trivially_dead(op):
            worklist.extend(v.owner_op for v in op.operands if v.owner_op is not None)
            erased.update(op.walk())
            op.erase()
            result.erased_dead += 1
            changed = True
            continue
        rewriter = _apply_first(op, patterns, result)
        if rewriter is None:
            continue
        changed = True
        budget -= 1
        if budget < 0:
            raise _RewriteBudgetExceeded
        erased |= rewriter.erased
        worklist.extend(rewriter.created)
        worklist.extend(rewriter.touched)
    return changed


def _apply_first(op: Operation, patterns: PatternSet, result: GreedyResult) -> PatternRewriter | None:
    for pattern in patterns.for_op(op.name):
        rewriter = PatternRewriter()
        if pattern.match_and_rewrite(op, rewriter) or rewriter.changed:
            key = type(pattern).__name__
            result.hits[key] = result.hits.get(key, 0) + 1
            return rewriter
    return None
