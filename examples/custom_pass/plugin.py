"""An out-of-tree Crane plugin: a one-op dialect (``demo``) and a pass that rewrites it.

    demo.scale %x {factor = 3} : i32          // x * 3, with a verifier: factor >= 1

The pass ``demo-expand-scale{max-factor=N}`` replaces every ``demo.scale`` whose factor is
at most N by a chain of ``test.addi`` (``x + x + x``) and counts what it did::

    crane-opt --load-pass-plugin examples/custom_pass/plugin.py input.mlir \\
        -p 'demo-expand-scale{max-factor=4}' --pass-statistics

Crane imports this file and calls :func:`register` with a registrar; the same function
works as a ``crane.plugins`` entry point of an installed package (see README.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.dialects.test import AddOp
from crane.ir.attributes import IntAttr
from crane.ir.context import Dialect
from crane.ir.core import Operation, Value, VerifyError
from crane.ir.opspec import Attr, Operand, OpSpec, Result
from crane.ir.parser import Parser
from crane.ir.printer import Printer
from crane.ir.rewriting import PatternRewriter, RewritePattern, apply_patterns_greedily
from crane.ir.traits import Pure, SameOperandsAndResultType
from crane.passes.context import PassContext
from crane.passes.pass_base import Pass
from crane.passes.plugins import PluginRegistrar


class ScaleOp(Operation):
    """``%r = demo.scale %x {factor = 3} : i32`` multiplies by a positive constant."""

    __slots__ = ()
    spec = OpSpec("demo.scale", operands=(Operand("input"),), results=(Result("result"),),
                  attributes=(Attr("factor", IntAttr),), summary="multiply by a constant")
    traits = (Pure(), SameOperandsAndResultType())

    @property
    def factor(self) -> int:
        attr = self.attributes["factor"]
        assert isinstance(attr, IntAttr)
        return attr.value

    def verify_op(self) -> None:
        if self.factor < 1:
            raise VerifyError(f"requires 'factor' >= 1, got {self.factor}")

    def print_custom(self, p: Printer) -> None:
        p.write(" ")
        p.print_operand(self.operand(0))
        p.print_attr_dict(self.attributes)
        p.write(f" : {self.results[0].type}")

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        ref = p.parse_operand_ref()
        attrs = p.parse_optional_attr_dict()
        p.parse_punct(":", "before the type")
        type = p.parse_type()
        (operand,) = p.resolve_all([ref], [type])
        return cls.create(None, (operand,), (type,), attrs)


DEMO = Dialect("demo", (ScaleOp,), summary="an example out-of-tree dialect")


@dataclass(frozen=True)
class ExpandScale(RewritePattern):
    """``demo.scale %x {factor = k}`` with k <= limit -> ``x + x + ... + x``."""

    limit: int
    op_name = "demo.scale"

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if not isinstance(op, ScaleOp) or op.factor > self.limit:
            return False
        x = op.operand(0)
        total: Value = x
        for _ in range(op.factor - 1):
            total = rewriter.insert_before(op, AddOp.build(total, x, op.location)).results[0]
        rewriter.replace_op(op, [total])
        return True


@dataclass(frozen=True)
class DemoExpandScale(Pass):
    """Turn small ``demo.scale`` ops into additions."""

    name = "demo-expand-scale"
    summary = "replace demo.scale by a chain of test.addi when the factor is small"
    anchor = None

    max_factor: int = 4
    """Largest factor to expand; bigger ones are left alone."""

    def run(self, op: Operation, ctx: PassContext) -> None:
        if self.max_factor < 1:
            ctx.emit_error(op, f"demo-expand-scale: max-factor must be >= 1, got {self.max_factor}")
            return
        result = apply_patterns_greedily(op, [ExpandScale(self.max_factor)], erase_dead=False)
        ctx.statistic("scales-expanded", sum(result.hits.values()))


def register(registrar: PluginRegistrar) -> None:
    """Called by ``crane-opt --load-pass-plugin`` and by the ``crane.plugins`` entry point."""
    registrar.register_dialect(DEMO)
    registrar.register_pass(DemoExpandScale)
