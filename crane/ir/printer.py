"""The textual form of the IR: a generic form for every op and custom forms for registered ops.

Generic form (always round-trips, needs no registration)::

    %r = "test.addi"(%a, %b) {overflow = #test.flag<none>} : (i32, i32) -> i32

Default custom form of a registered op (used when it defines no ``print_custom``)::

    %r = test.addi %a, %b {overflow = #test.flag<none>} : (i32, i32) -> i32

SSA names come from value name hints when they are unique in their scope (the nearest
``IsolatedFromAbove`` op), else from a counter (``%0``, ``%1``; ``%arg0`` for block
arguments). Locations are printed as trailing ``loc(...)`` only with ``debuginfo``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from crane.ir.attributes import Attribute, format_attr_dict
from crane.ir.core import Block, Operation, Region, Value
from crane.ir.location import quote
from crane.ir.traits import IsolatedFromAbove
from crane.ir.types import FunctionType, Type

_NAME_OK = re.compile(r"[A-Za-z_$.-][A-Za-z0-9_$.-]*\Z")
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_$.-]")


class _Scope:
    __slots__ = ("used", "next_number", "next_arg")

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.next_number = 0
        self.next_arg = 0


class Printer:
    """Prints ops into a string buffer; custom op printers call its ``print_*`` helpers."""

    def __init__(self, *, generic: bool = False, debuginfo: bool = False, indent: str = "  ") -> None:
        self.generic = generic
        self.debuginfo = debuginfo
        self._indent_unit = indent
        self._indent = ""
        self._out: list[str] = []
        self._names: dict[Value, str] = {}
        self._scopes: list[_Scope] = [_Scope()]

    # ----- entry points

    def print_op_to_string(self, op: Operation) -> str:
        self.print_operation(op)
        self._out.append("\n")
        return "".join(self._out)

    def text(self) -> str:
        return "".join(self._out)

    # ----- low-level helpers for custom printers

    def write(self, text: str) -> None:
        self._out.append(text)

    def name_of(self, value: Value) -> str:
        """The printed SSA name of a value, ``%<undefined>`` if it was never defined."""
        name = self._names.get(value)
        return name if name is not None else "%<<UNKNOWN SSA VALUE>>"

    def print_operand(self, value: Value) -> None:
        self._out.append(self.name_of(value))

    def print_operands(self, values: Iterable[Value]) -> None:
        self._out.append(", ".join(self.name_of(v) for v in values))

    def print_type(self, type: Type | Attribute) -> None:
        self._out.append(str(type))

    def print_types(self, types: Iterable[Type]) -> None:
        self._out.append(", ".join(str(t) for t in types))

    def print_attribute(self, attr: Attribute) -> None:
        self._out.append(str(attr))

    def print_attr_dict(self, attrs: Mapping[str, Attribute], exclude: Sequence[str] = (),
                        keyword: bool = False) -> None:
        """`` {k = v}`` (with a leading space), or nothing when no attribute is left."""
        shown = {k: v for k, v in attrs.items() if k not in exclude} if exclude else attrs
        if not shown:
            return
        self._out.append(" attributes " if keyword else " ")
        self._out.append(format_attr_dict(shown))

    def print_functional_type(self, op: Operation) -> None:
        inputs = tuple(v.type for v in op._operands)
        results = tuple(r.type for r in op.results)
        self._out.append(str(FunctionType(inputs, results)))

    def print_region(self, region: Region, *, print_entry_args: bool = True,
                     print_empty_block: bool = False) -> None:
        """``{ ... }`` with blocks; entry-block arguments may be printed by the op instead."""
        self._out.append("{\n")
        outer = self._indent
        self._indent = outer + self._indent_unit
        for i, block in enumerate(region.blocks):
            needs_header = i > 0 or (print_entry_args and bool(block.args))
            if i == 0 and not needs_header and block.is_empty() and print_empty_block:
                needs_header = True
            self._print_block(block, i, needs_header)
        self._indent = outer
        self._out.append(outer + "}")

    def define_block_args(self, block: Block) -> list[str]:
        """Assign names to a block's arguments (for ops that print them in a signature)."""
        return [self._define(arg, is_arg=True) for arg in block.args]

    # ----- ops

    def print_operation(self, op: Operation) -> None:
        isolated = op.has_trait(IsolatedFromAbove)
        if isolated:
            self._scopes.append(_Scope())
        out = self._out
        out.append(self._indent)
        results = op.results
        if len(results) == 1:
            out.append(self._define(results[0]))
            out.append(" = ")
        elif results:
            out.append(", ".join(self._define(r) for r in results))
            out.append(" = ")
        if self.generic or type(op).spec is None:
            self._print_generic(op)
        else:
            out.append(op.name)
            custom = getattr(op, "print_custom", None)
            if custom is None:
                self._print_default_custom(op)
            else:
                custom(self)
        if self.debuginfo:
            out.append(f" loc({op.location.text()})")
        if isolated:
            self._scopes.pop()

    def _print_generic(self, op: Operation) -> None:
        out = self._out
        out.append(quote(op.name))
        out.append("(")
        out.append(", ".join(self.name_of(v) for v in op._operands))
        out.append(")")
        self._print_regions_attributes_type(op)

    def _print_default_custom(self, op: Operation) -> None:
        if op._operands:
            self._out.append(" ")
            self._out.append(", ".join(self.name_of(v) for v in op._operands))
        self._print_regions_attributes_type(op)

    def _print_regions_attributes_type(self, op: Operation) -> None:
        """`` ({...}, {...}) {attrs} : (T) -> R``, the tail both forms share."""
        out = self._out
        if op.regions:
            out.append(" (")
            for i, region in enumerate(op.regions):
                if i:
                    out.append(", ")
                self.print_region(region)
            out.append(")")
        if op.attributes:
            out.append(" ")
            out.append(format_attr_dict(op.attributes))
        out.append(" : ")
        self.print_functional_type(op)

    def _print_block(self, block: Block, index: int, header: bool) -> None:
        if header:
            args = ", ".join(f"{self._define(a, is_arg=True)}: {a.type}" for a in block.args)
            label = f"^bb{index}" + (f"({args})" if block.args else "")
            self._out.append(self._indent[: -len(self._indent_unit) or None] + label + ":\n")
        for op in block.ops:
            self.print_operation(op)
            self._out.append("\n")

    # ----- naming

    def _define(self, value: Value, *, is_arg: bool = False) -> str:
        existing = self._names.get(value)
        if existing is not None:
            return existing
        scope = self._scopes[-1]
        hint = value.name_hint
        if hint is not None and not hint.isdigit():
            base = hint if _NAME_OK.match(hint) else (_NAME_CHARS.sub("_", hint) or "v")
            name = base
            suffix = 1
            while name in scope.used:
                name = f"{base}_{suffix}"
                suffix += 1
        elif is_arg:
            name = f"arg{scope.next_arg}"
            while name in scope.used:
                scope.next_arg += 1
                name = f"arg{scope.next_arg}"
            scope.next_arg += 1
        else:
            name = str(scope.next_number)
            scope.next_number += 1
        scope.used.add(name)
        text = "%" + name
        self._names[value] = text
        return text


def print_op(op: Operation, *, generic: bool = False, debuginfo: bool = False) -> str:
    """The text of an op (usually a module) followed by a newline."""
    return Printer(generic=generic, debuginfo=debuginfo).print_op_to_string(op)
