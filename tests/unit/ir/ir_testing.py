"""Helpers shared by the IR unit tests (imported by name: this folder is on sys.path)."""

from __future__ import annotations

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp, as_module
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op


def parse(text: str, *, allow_unregistered: bool = False) -> ModuleOp:
    return as_module(parse_ops(default_context(allow_unregistered=allow_unregistered), text, "t.mlir"))


def roundtrip(text: str, **kwargs: bool) -> str:
    return print_op(parse(text), **kwargs)
