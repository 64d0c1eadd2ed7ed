"""Workloads of a sweep: reading a network file into a module and retargeting its machine.

A workload is a ``.crn`` network or IR text (``.mlir``/``.cir``, for instance what
``crane-opt model.onnx -o model.mlir`` wrote). The client reads each workload once when it
expands a sweep (:func:`inspect_workload`: its own machine and batch, and a digest of the
file so that a changed network gets new point keys); every point then reads it again on
its worker and schedules it on the point's machine (:func:`retarget`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from crane.dialects.builtin import ModuleOp, as_module
from crane.dialects.hw import MACHINE_ATTR, MachineOp, machine_of
from crane.hardware.machine import Machine
from crane.ir.attributes import IntAttr, StringAttr, SymbolRefAttr
from crane.ir.builder import Builder, InsertPoint
from crane.ir.context import Context
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticError
from crane.ir.lexer import SourceText
from crane.ir.location import UNKNOWN
from crane.ir.parser import ParseError, parse_ops
from crane.limits.files import read_bytes, read_text

IR_SUFFIXES = (".mlir", ".cir")


@dataclass(frozen=True, slots=True)
class WorkloadInfo:
    """What expanding a sweep needs to know about one workload file."""

    digest: str
    """SHA-256 of the file's bytes (first 16 hex digits); imported files are not included."""
    machine: Machine
    """The machine the workload targets (``edge`` when it names none)."""
    batch: int
    """The batch the network was written for."""


def read_module(path: str | Path, context: Context) -> ModuleOp:
    """The module of a ``.crn`` or IR file; DiagnosticError for mistakes in it."""
    name = str(path)
    text = read_text(path)
    if name.endswith(IR_SUFFIXES):
        try:
            ops = parse_ops(context, text, name)
        except ParseError as exc:
            location = SourceText(name, text).location(exc.offset)
            raise DiagnosticError.at(location, exc.message, exc.length) from None
        return as_module(ops, SourceText(name, "").location(0))
    from crane.frontend.translate import crn_to_module

    return crn_to_module(text, name, context)


def graph_funcs(module: ModuleOp) -> list[Operation]:
    """The ``graph.func`` ops of a module (what the ``segment`` pass schedules)."""
    body = module.regions[0].blocks[0] if module.regions and module.regions[0].blocks else None
    return [op for op in body.ops if op.name == "graph.func"] if body is not None else []


def inspect_workload(path: Path, context: Context) -> WorkloadInfo:
    """Digest, machine and batch of a workload (raises DiagnosticError or OSError)."""
    digest = hashlib.sha256(read_bytes(path)).hexdigest()[:16]
    module = read_module(path, context)
    funcs = graph_funcs(module)
    if not funcs:
        raise DiagnosticError.at(UNKNOWN, f"{path}: no graph.func to schedule in this workload")
    batch = funcs[0].attributes.get("batch")
    return WorkloadInfo(digest, machine_of(module) or Machine.edge(),
                        batch.value if isinstance(batch, IntAttr) and batch.value > 0 else 1)


def retarget(module: ModuleOp, machine: Machine) -> None:
    """Make ``module`` target ``machine``: its ``hw.machine`` is replaced (or added)."""
    body = module.regions[0].blocks[0]
    target = module.attributes.get(MACHINE_ATTR)
    names = {machine.name, target.root if isinstance(target, SymbolRefAttr) else machine.name}
    stale = [op for op in body.ops if isinstance(op, MachineOp) and _name(op) in names]
    point = InsertPoint.before(stale[0]) if stale else InsertPoint.at_start(body)
    Builder(point).insert(MachineOp.build(machine))
    for op in stale:
        op.erase()
    module.attributes[MACHINE_ATTR] = SymbolRefAttr(machine.name)


def _name(op: MachineOp) -> str:
    attr = op.attributes.get("sym_name")
    return attr.value if isinstance(attr, StringAttr) else ""
