"""Turning an input file into a module: IR text, or a frontend's source language.

Frontends are chosen by file suffix and imported only when such a file is read. Each is a
``module:function`` taking ``(text, filename, context)`` and returning a module, and
raising :class:`crane.ir.diagnostics.DiagnosticError` for mistakes in the input.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from crane.dialects.builtin import ModuleOp, as_module
from crane.ir.context import Context
from crane.ir.diagnostics import DiagnosticError
from crane.ir.lexer import SourceText
from crane.ir.parser import ParseError, parse_ops

Translator = Callable[[str, str, Context], ModuleOp]

FRONTENDS: dict[str, str] = {
    "crn": "crane.frontend.translate:crn_to_module",
}
"""Input format name -> ``module:function``."""

SUFFIXES: dict[str, str] = {".crn": "crn", ".mlir": "ir", ".cir": "ir"}


def input_format(filename: str, requested: str | None) -> str:
    if requested is not None:
        return requested
    for suffix, fmt in SUFFIXES.items():
        if filename.endswith(suffix):
            return fmt
    return "ir"


def parse_ir(text: str, filename: str, context: Context) -> ModuleOp:
    """Parse IR text into a module (an implicit one if the file holds several ops)."""
    try:
        ops = parse_ops(context, text, filename)
    except ParseError as exc:
        location = SourceText(filename, text).location(exc.offset)
        raise DiagnosticError.at(location, exc.message, exc.length) from exc
    return as_module(ops, SourceText(filename, "").location(0))


def translate(fmt: str, text: str, filename: str, context: Context) -> ModuleOp:
    """The module for ``text`` in format ``fmt`` (``ir`` or a frontend's name)."""
    if fmt == "ir":
        return parse_ir(text, filename, context)
    target = FRONTENDS.get(fmt)
    if target is None:
        raise ValueError(f"unknown input format '{fmt}' (known: ir, {', '.join(FRONTENDS)})")
    module, _, function = target.partition(":")
    translator: Translator = getattr(importlib.import_module(module), function)
    return translator(text, filename, context)
