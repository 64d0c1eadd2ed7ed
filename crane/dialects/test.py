"""The ``test`` dialect: a few small ops for exercising the IR core, passes and tools.

    test.func @f(%a: i32) -> i32 {
      %c = test.constant 3 : i32
      %s = test.addi %a, %c : i32
      test.return %s : i32
    }
"""

from __future__ import annotations

from typing import ClassVar

from crane.ir.attributes import EnumAttr, IntAttr
from crane.ir.context import Dialect
from crane.ir.core import Operation, Value, VerifyError
from crane.ir.function_syntax import (
    parse_function,
    parse_return,
    print_function,
    print_return,
    verify_returned_types,
    verify_signature,
)
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import Attr, Operand, OpSpec, Result
from crane.ir.parser import Parser
from crane.ir.printer import Printer
from crane.ir.rewriting import PatternRewriter, RewritePattern
from crane.ir.traits import (
    Commutative,
    HasParent,
    IsolatedFromAbove,
    IsTerminator,
    NoTerminator,
    Pure,
    SameOperandsAndResultType,
    SingleBlock,
    Symbol,
)
from crane.ir.types import Type


class ConstantOp(Operation):
    """``%c = test.constant 3 : i32``"""

    __slots__ = ()
    spec = OpSpec("test.constant", results=(Result("result"),),
                  attributes=(Attr("value", IntAttr),), summary="an integer constant")
    traits = (Pure(),)

    @classmethod
    def build(cls, value: int, type: Type, location: Location = UNKNOWN) -> ConstantOp:
        op = cls.create(None, (), (type,), {"value": IntAttr(value)}, (), location)
        assert isinstance(op, ConstantOp)
        return op

    @property
    def value(self) -> int:
        attr = self.attributes["value"]
        assert isinstance(attr, IntAttr)
        return attr.value

    def print_custom(self, p: Printer) -> None:
        p.write(f" {self.value}")
        p.print_attr_dict(self.attributes, exclude=("value",))
        p.write(f" : {self.results[0].type}")

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        value = p.parse_integer()
        attrs = p.parse_optional_attr_dict()
        p.parse_punct(":", "before the constant's type")
        return cls.create(None, (), (p.parse_type(),), {"value": IntAttr(value), **attrs})


class _BinaryOp(Operation):
    """``%r = test.<op> %a, %b : T``: both operands and the result have type T."""

    __slots__ = ()
    canonicalization_patterns: ClassVar[tuple[RewritePattern, ...]] = ()

    @classmethod
    def build(cls, lhs: Value, rhs: Value, location: Location = UNKNOWN) -> Operation:
        return cls.create(None, (lhs, rhs), (lhs.type,), {}, (), location)

    def print_custom(self, p: Printer) -> None:
        p.write(" ")
        p.print_operands(self._operands)
        p.print_attr_dict(self.attributes)
        p.write(f" : {self.results[0].type}")

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        lhs = p.parse_operand_ref()
        p.parse_punct(",", "between the operands")
        rhs = p.parse_operand_ref()
        attrs = p.parse_optional_attr_dict()
        p.parse_punct(":", "before the type")
        type = p.parse_type()
        operands = p.resolve_all([lhs, rhs], [type, type])
        return cls.create(None, operands, (type,), attrs)


def _binary_spec(name: str) -> OpSpec:
    return OpSpec(name, operands=(Operand("lhs"), Operand("rhs")), results=(Result("result"),))


class AddOp(_BinaryOp):
    __slots__ = ()
    spec = _binary_spec("test.addi")
    traits = (Pure(), Commutative(), SameOperandsAndResultType())


class MulOp(_BinaryOp):
    __slots__ = ()
    spec = _binary_spec("test.muli")
    traits = (Pure(), Commutative(), SameOperandsAndResultType())


class SubOp(_BinaryOp):
    __slots__ = ()
    spec = _binary_spec("test.subi")
    traits = (Pure(), SameOperandsAndResultType())


class XorOp(_BinaryOp):
    __slots__ = ()
    spec = _binary_spec("test.xori")
    traits = (Pure(), Commutative(), SameOperandsAndResultType())


class EffectOp(Operation):
    """An op with side effects (never removed by DCE or merged by CSE), default custom form."""

    __slots__ = ()
    spec = OpSpec("test.effect", operands=(Operand("inputs", variadic=True),),
                  results=(Result("outputs", variadic=True),),
                  attributes=(Attr("kind", EnumAttr, optional=True),))


class PositiveOp(Operation):
    """Verifier demo: ``value`` must be positive."""

    __slots__ = ()
    spec = OpSpec("test.positive", results=(Result("result"),), attributes=(Attr("value", IntAttr),))
    traits = (Pure(),)

    def verify_op(self) -> None:
        value = self.attributes["value"]
        if isinstance(value, IntAttr) and value.value <= 0:
            raise VerifyError(f"requires a positive 'value', got {value.value}")


class RegionOp(Operation):
    """An op with one region that needs no terminator (default custom form)."""

    __slots__ = ()
    spec = OpSpec("test.region", operands=(Operand("inputs", variadic=True),),
                  results=(Result("outputs", variadic=True),), regions=1)
    traits = (NoTerminator(), SingleBlock())


class FuncOp(Operation):
    """A function: symbol, isolated body ending in ``test.return``."""

    __slots__ = ()
    spec = OpSpec("test.func", regions=1, summary="a function")
    traits = (Symbol(), IsolatedFromAbove(), SingleBlock())

    def verify_op(self) -> None:
        verify_signature(self)

    def print_custom(self, p: Printer) -> None:
        print_function(p, self)

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        return parse_function(p, cls)


class ReturnOp(Operation):
    """``test.return %a : i32`` ends a function body."""

    __slots__ = ()
    spec = OpSpec("test.return", operands=(Operand("values", variadic=True),))
    traits = (IsTerminator(), HasParent(("test.func",)))

    def verify_op(self) -> None:
        verify_returned_types(self, "function")

    def print_custom(self, p: Printer) -> None:
        print_return(p, self)

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        return parse_return(p, cls)


TEST = Dialect(
    "test",
    (ConstantOp, AddOp, MulOp, SubOp, XorOp, EffectOp, PositiveOp, RegionOp, FuncOp, ReturnOp),
    enums={"test.kind": ("read", "write", "none")},
    summary="ops for testing the toolkit",
)



class FoldConstantArithmetic(RewritePattern):
    """``test.<op> (constant a), (constant b)`` -> ``test.constant (a op b)``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        fold = _FOLDERS.get(op.name)
        if fold is None:
            return False
        lhs, rhs = (v.owner_op for v in op.operands)
        if not isinstance(lhs, ConstantOp) or not isinstance(rhs, ConstantOp):
            return False
        value = fold(lhs.value, rhs.value)
        rewriter.replace_op_with(op, ConstantOp.build(value, op.results[0].type, op.location))
        return True


class DropNeutralOperand(RewritePattern):
    """``x + 0``, ``x * 1``, ``x - 0``, ``x ^ 0`` -> ``x``."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        neutral = _NEUTRAL.get(op.name)
        if neutral is None:
            return False
        rhs = op.operand(1).owner_op
        if not isinstance(rhs, ConstantOp) or rhs.value != neutral:
            return False
        rewriter.replace_op(op, [op.operand(0)])
        return True


class ConstantsToTheRight(RewritePattern):
    """Commutative ops keep a constant operand on the right, so other patterns see one shape."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> bool:
        if not op.has_trait(Commutative):
            return False
        lhs, rhs = op.operands
        if not isinstance(lhs.owner_op, ConstantOp) or isinstance(rhs.owner_op, ConstantOp):
            return False
        op.set_operands([rhs, lhs])
        rewriter.notify_modified(op)
        return True


_FOLDERS = {
    "test.addi": lambda a, b: a + b, "test.subi": lambda a, b: a - b,
    "test.muli": lambda a, b: a * b, "test.xori": lambda a, b: a ^ b,
}
_NEUTRAL = {"test.addi": 0, "test.subi": 0, "test.muli": 1, "test.xori": 0}
_BINARY_PATTERNS = (FoldConstantArithmetic(), ConstantsToTheRight(), DropNeutralOperand())
for _op in (AddOp, MulOp, SubOp, XorOp):
    _op.canonicalization_patterns = _BINARY_PATTERNS
