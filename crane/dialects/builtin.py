"""The ``builtin`` dialect: the top-level module.

    builtin.module @name attributes {crane.machine = ...} {
      ...
    }
"""

from __future__ import annotations

from collections.abc import Iterable

from crane.ir.attributes import Attribute, StringAttr
from crane.ir.context import Dialect
from crane.ir.core import Block, Operation, Region
from crane.ir.location import UNKNOWN, Location
from crane.ir.opspec import OpSpec
from crane.ir.parser import Parser
from crane.ir.printer import Printer
from crane.ir.traits import IsolatedFromAbove, NoTerminator, SingleBlock, SymbolTable


class ModuleOp(Operation):
    """The root of every IR file: one block of top-level ops (functions, machines...)."""

    __slots__ = ()
    spec = OpSpec("builtin.module", regions=1, summary="a top-level container of ops")
    traits = (IsolatedFromAbove(), SymbolTable(), NoTerminator(), SingleBlock())

    @classmethod
    def build(cls, ops: Iterable[Operation] = (), *, name: str | None = None,
              attributes: dict[str, Attribute] | None = None,
              location: Location = UNKNOWN) -> ModuleOp:
        """A module holding ``ops`` in its body."""
        block = Block()
        block.extend(ops)
        attrs = dict(attributes or {})
        if name is not None:
            attrs["sym_name"] = StringAttr(name)
        op = cls.create(None, (), (), attrs, [Region([block])], location)
        assert isinstance(op, ModuleOp)
        return op

    @property
    def body(self) -> Block:
        return self.regions[0].blocks[0]

    def print_custom(self, p: Printer) -> None:
        name = self.attributes.get("sym_name")
        if isinstance(name, StringAttr):
            p.write(f" @{name.value}" if name.value.isidentifier() else f" @{name}")
        p.print_attr_dict(self.attributes, exclude=("sym_name",), keyword=True)
        p.write(" ")
        p.print_region(self.regions[0], print_empty_block=False)

    @classmethod
    def parse_custom(cls, p: Parser) -> Operation:
        name = p.parse_optional_symbol_name()
        attrs = p.parse_attr_dict() if p.parse_optional_keyword("attributes") else {}
        if name is not None:
            attrs = {"sym_name": StringAttr(name), **attrs}
        region = p.parse_region(isolated=True)
        return cls.create(None, (), (), attrs, [region])


BUILTIN = Dialect("builtin", (ModuleOp,), summary="the module")


def as_module(ops: list[Operation], location: Location = UNKNOWN) -> ModuleOp:
    """The module of a parsed file: its one top-level module, or an implicit one around all ops."""
    if len(ops) == 1 and isinstance(ops[0], ModuleOp):
        return ops[0]
    for op in ops:
        op.detach()
    return ModuleOp.build(ops, location=location)
