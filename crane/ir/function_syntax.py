"""Shared custom syntax for function-like ops: ``@name(%a: T, %b: U) -> (R) attributes {...} {body}``.

Dialects with their own function op (``test.func``, ``graph.func``) call these helpers,
so every function prints and parses the same way.
"""

from __future__ import annotations

from crane.ir.attributes import StringAttr, SymbolRefAttr, TypeAttr
from crane.ir.core import Operation, Region, VerifyError
from crane.ir.parser import OperandRef, Parser
from crane.ir.printer import Printer
from crane.ir.types import FunctionType, Type

SIGNATURE_KEYS = ("sym_name", "function_type")


def print_function(p: Printer, op: Operation) -> None:
    """Print everything after the op name."""
    name = op.attributes.get("sym_name")
    ftype = op.attributes.get("function_type")
    body = op.regions[0]
    entry = body.blocks[0] if body.blocks else None
    p.write(" " + str(SymbolRefAttr(name.value if isinstance(name, StringAttr) else "?")))
    names = p.define_block_args(entry) if entry is not None else []
    arg_types = [a.type for a in entry.args] if entry is not None else []
    p.write("(" + ", ".join(f"{n}: {t}" for n, t in zip(names, arg_types, strict=True)) + ")")
    if isinstance(ftype, TypeAttr) and isinstance(ftype.type, FunctionType) and ftype.type.results:
        results = ftype.type.results
        p.write(" -> " + (str(results[0]) if len(results) == 1 else
                          "(" + ", ".join(map(str, results)) + ")"))
    p.print_attr_dict(op.attributes, exclude=SIGNATURE_KEYS, keyword=True)
    p.write(" ")
    p.print_region(body, print_entry_args=False)


def parse_function(p: Parser, cls: type[Operation]) -> Operation:
    """Parse everything after the op name and build the op with ``cls.create``."""
    name = p.parse_symbol_name()
    p.parse_punct("(", "to open the argument list")
    args: list[tuple[OperandRef, Type]] = []
    if not p.parse_optional_punct(")"):
        while True:
            ref = p.parse_operand_ref()
            p.parse_punct(":", "after an argument name")
            args.append((ref, p.parse_type()))
            if p.parse_optional_punct(")"):
                break
            p.parse_punct(",", "or ')' in the argument list")
    results: tuple[Type, ...] = ()
    if p.parse_optional_punct("->"):
        results = p.parse_type_list_parens() if p.peek().text == "(" else (p.parse_type(),)
    attrs = p.parse_attr_dict() if p.parse_optional_keyword("attributes") else {}
    region: Region = p.parse_region(entry_args=args, isolated=True)
    attrs = {"sym_name": StringAttr(name),
             "function_type": TypeAttr(FunctionType(tuple(t for _, t in args), results)), **attrs}
    return cls.create(None, (), (), attrs, [region])


def verify_signature(op: Operation) -> None:
    """A function op's ``function_type`` must match its entry block's arguments."""
    ftype = getattr(op.attributes.get("function_type"), "type", None)
    body = op.regions[0].blocks if op.regions else []
    if not isinstance(ftype, FunctionType) or not body:
        raise VerifyError("requires a 'function_type' attribute and a body")
    if tuple(a.type for a in body[0].args) != ftype.inputs:
        raise VerifyError("entry block arguments do not match the function type")


def verify_returned_types(op: Operation, what: str = "function") -> None:
    """A return op's operand types must be the enclosing function's result types."""
    func = op.parent_op
    declared = getattr(None if func is None else func.attributes.get("function_type"), "type", None)
    types = tuple(v.type for v in op.operands)
    if isinstance(declared, FunctionType) and declared.results != types:
        shown = ", ".join(map(str, declared.results)) or "nothing"
        raise VerifyError(f"returns ({', '.join(map(str, types))}) but the {what} returns ({shown})")


def print_return(p: Printer, op: Operation) -> None:
    """`` %a, %b : T, U`` (nothing for an empty return)."""
    if not op.operands:
        return
    p.write(" ")
    p.print_operands(op.operands)
    p.write(" : ")
    p.print_types(v.type for v in op.operands)


def parse_return(p: Parser, cls: type[Operation]) -> Operation:
    refs = p.parse_operand_refs()
    types: list[Type] = []
    if refs:
        p.parse_punct(":", "before the returned types")
        types.append(p.parse_type())
        while p.parse_optional_punct(","):
            types.append(p.parse_type())
    return cls.create(None, p.resolve_all(refs, types))
