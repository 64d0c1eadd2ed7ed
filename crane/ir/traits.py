"""Traits: reusable properties of ops that the verifier and the passes rely on.

A trait is a small object in an op class's ``traits`` tuple; ``verify`` runs before the
op's own ``verify_op``. Parametrised traits (``HasParent("graph.func")``) are instances.
"""

from __future__ import annotations

from dataclasses import dataclass

from crane.ir.attributes import StringAttr
from crane.ir.core import Operation, VerifyError


class Trait:
    """Base class; ``verify`` raises :class:`VerifyError` when the op breaks the trait."""

    __slots__ = ()

    def verify(self, op: Operation) -> None:
        return None


@dataclass(frozen=True, slots=True)
class Pure(Trait):
    """No side effects: CSE may merge it and DCE may delete it when unused."""


@dataclass(frozen=True, slots=True)
class Commutative(Trait):
    """Operand order does not matter (canonicalisation sorts operands)."""


@dataclass(frozen=True, slots=True)
class IsTerminator(Trait):
    """Must be the last op of its block."""

    def verify(self, op: Operation) -> None:
        if op.parent is not None and op.next_op is not None:
            raise VerifyError("must be the last operation in its block")


@dataclass(frozen=True, slots=True)
class NoTerminator(Trait):
    """The op's regions' blocks need no terminator."""


@dataclass(frozen=True, slots=True)
class SingleBlock(Trait):
    """Each region holds at most one block."""

    def verify(self, op: Operation) -> None:
        for i, region in enumerate(op.regions):
            if len(region.blocks) > 1:
                raise VerifyError(f"region #{i} must have at most one block, has {len(region.blocks)}")


@dataclass(frozen=True, slots=True)
class IsolatedFromAbove(Trait):
    """Regions may not use values defined outside the op: a pass anchor and an SSA scope."""


@dataclass(frozen=True, slots=True)
class HasParent(Trait):
    """The op must sit directly inside one of the named ops."""

    parents: tuple[str, ...]

    def verify(self, op: Operation) -> None:
        parent = op.parent_op
        if parent is None or parent.name not in self.parents:
            names = ", ".join(f"'{p}'" for p in self.parents)
            raise VerifyError(f"expects parent op {'to be one of ' if len(self.parents) > 1 else ''}{names}")


@dataclass(frozen=True, slots=True)
class Symbol(Trait):
    """Defines a symbol through its ``sym_name`` string attribute."""

    def verify(self, op: Operation) -> None:
        if not isinstance(op.attributes.get("sym_name"), StringAttr):
            raise VerifyError("requires a 'sym_name' string attribute")


@dataclass(frozen=True, slots=True)
class SymbolTable(Trait):
    """Its single region holds symbol-defining ops whose names must be unique."""


@dataclass(frozen=True, slots=True)
class SameOperandsAndResultType(Trait):
    """All operands and results have one type, so the custom form prints it once."""

    def verify(self, op: Operation) -> None:
        values = [*op._operands, *op.results]
        if not values:
            return
        first = values[0].type
        if any(v.type != first for v in values):
            raise VerifyError("requires the same type for all operands and results")


def symbol_name(op: Operation) -> str | None:
    """The symbol an op defines, if any."""
    attr = op.attributes.get("sym_name")
    return attr.value if isinstance(attr, StringAttr) else None
