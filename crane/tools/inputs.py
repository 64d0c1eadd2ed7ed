"""Turning an input file into a module: IR text, or a frontend's source language.

Frontends are chosen by file suffix and imported only when such a file is read. Each is a
``module:function`` taking ``(text, filename, context)`` and returning a module, and
raising :class:`crane.ir.diagnostics.DiagnosticError` for mistakes in the input. Formats in
:data:`BINARY_FORMATS` get the file's bytes instead of its text; a frontend that takes
options (``--onnx-batch``...) gets them as a fourth argument when some are given.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence

from crane.dialects.builtin import ModuleOp, as_module
from crane.ir.context import Context
from crane.ir.diagnostics import DiagnosticError
from crane.ir.lexer import SourceText
from crane.ir.parser import ParseError, parse_ops
from crane.limits import MAX_IR_BYTES, MAX_MODEL_BYTES
from crane.limits.files import read_bytes, read_text

Translator = Callable[..., ModuleOp]
"""``(text, filename, context)`` or ``(text, filename, context, options)`` -> module."""

FRONTENDS: dict[str, str] = {
    "crn": "crane.frontend.translate:crn_to_module",
    "onnx": "crane.frontend.onnx.translate:onnx_to_module",
}
"""Input format name -> ``module:function``."""

SUFFIXES: dict[str, str] = {".crn": "crn", ".mlir": "ir", ".cir": "ir", ".onnx": "onnx"}

BINARY_FORMATS = frozenset({"onnx"})
"""Formats read as bytes (``read_source`` returns ``bytes`` for them)."""


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


def read_source(path: str, fmt: str) -> str | bytes:
    """The contents of ``path`` (``-``: standard input) as the format ``fmt`` reads them.

    Only a regular file (or standard input): at most :data:`crane.limits.MAX_IR_BYTES` of
    IR, :data:`crane.limits.MAX_FILE_BYTES` of other text, or
    :data:`crane.limits.MAX_MODEL_BYTES` of a binary model (``crane.limits.files``).
    Raises OSError or UnicodeDecodeError; the tools turn them into usage errors."""
    if fmt in BINARY_FORMATS:
        return read_bytes(path, MAX_MODEL_BYTES)
    if fmt == "ir":
        return read_text(path, MAX_IR_BYTES)
    return read_text(path)


def parse_dims(specs: Sequence[str]) -> dict[str, int]:
    """``NAME=SIZE`` pairs (``--onnx-dim``) as a dict; ValueError says which one is bad."""
    dims: dict[str, int] = {}
    for spec in specs:
        name, _, size = spec.partition("=")
        if not name or not size.isdigit() or int(size) <= 0:
            raise ValueError(f"--onnx-dim expects NAME=SIZE with a positive size, got '{spec}'")
        dims[name] = int(size)
    return dims


def translate(fmt: str, text: str | bytes, filename: str, context: Context,
              options: Mapping[str, object] | None = None) -> ModuleOp:
    """The module for ``text`` in format ``fmt`` (``ir`` or a frontend's name)."""
    if isinstance(text, bytes) and fmt not in BINARY_FORMATS:
        text = text.decode("utf-8")
    if fmt == "ir":
        assert isinstance(text, str)
        return parse_ir(text, filename, context)
    target = FRONTENDS.get(fmt)
    if target is None:
        raise ValueError(f"unknown input format '{fmt}' (known: ir, {', '.join(FRONTENDS)})")
    module, _, function = target.partition(":")
    translator: Translator = getattr(importlib.import_module(module), function)
    if options:
        return translator(text, filename, context, options)
    return translator(text, filename, context)
