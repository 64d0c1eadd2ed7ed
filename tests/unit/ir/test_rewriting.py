"""The greedy pattern driver: order, fixpoint, iteration cap and hit counts."""

from __future__ import annotations

from ir_testing import parse

from crane.dialects.test import ConstantOp
from crane.ir.core import Operation
from crane.ir.printer import print_op
from crane.ir.rewriting import PatternRewriter, RewritePattern, apply_patterns_greedily
from crane.passes.generic.canonicalize import collect_patterns

FOLDABLE = """test.func @f(%a: i32) -> i32 {
  %c1 = test.constant 1 : i32
  %c2 = test.constant 2 : i32
  %s = test.addi %c1, %c2 : i32
  %z = test.constant 0 : i32
  %t = test.muli %s, %a : i32
  %u = test.addi %t, %z : i32
  test.return %u : i32
}
"""


def test_canonicalization_reaches_a_fixpoint() -> None:
    module = parse(FOLDABLE)
    result = apply_patterns_greedily(module, collect_patterns(module))
    text = print_op(module)
    assert result.changed and result.converged
    assert "test.constant 3 : i32" in text
    assert "test.muli %a, %" in text  # the constant moved to the right
    assert "test.addi" not in text  # folded, and x + 0 dropped
    assert result.hits["FoldConstantArithmetic"] == 1
    assert result.hits["DropNeutralOperand"] == 1
    assert result.erased_dead >= 3


class _RecordOrder(RewritePattern):
    op_name = "test.constant"

    def __init__(self) -> None:
        self.seen: list[int] = []

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        assert isinstance(op, ConstantOp)
        self.seen.append(op.value)
        return False


def test_worklist_visits_ops_in_program_order() -> None:
    module = parse("""test.func @f() {
  %a = test.constant 1 : i32
  %b = test.constant 2 : i32
  test.effect %a, %b : (i32, i32) -> ()
  test.return
}
""")
    pattern = _RecordOrder()
    result = apply_patterns_greedily(module, [pattern])
    assert pattern.seen == [1, 2] and not result.changed and result.iterations == 1


class _Increment(RewritePattern):
    """Never reaches a fixpoint: rewrites every constant to itself plus one."""

    op_name = "test.constant"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        assert isinstance(op, ConstantOp)
        rewriter.replace_op_with(op, ConstantOp.build(op.value + 1, op.result.type))
        return True


def test_iteration_cap_stops_a_non_terminating_rewrite() -> None:
    module = parse('%a = test.constant 1 : i32\ntest.effect %a : (i32) -> ()\n')
    result = apply_patterns_greedily(module, [_Increment()], max_iterations=3)
    assert not result.converged and result.changed
    assert result.hits["_Increment"] >= 3


def test_dead_pure_ops_are_erased_but_effects_stay() -> None:
    module = parse('%a = test.constant 1 : i32\n%b = test.effect : () -> i32\n')
    apply_patterns_greedily(module, [])
    names = [op.name for op in module.walk()]
    assert "test.constant" not in names and "test.effect" in names
