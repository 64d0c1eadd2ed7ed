"""Test-only helpers: load a network, shrink its mesh, schedule it, place it simply.

``simple_placement`` stands in for the ``map`` pass where it is not available: in every
state the active columns take consecutive tile ids in column order, and column ``j`` uses
DRAM port ``j mod ports`` (Interface 1 of the issue-7 plan).
"""

from __future__ import annotations

import dataclasses
from functools import cache
from pathlib import Path

from crane.codegen.lower import lower_func
from crane.codegen.program import TileModule
from crane.codegen.to_ir import tile_ops
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp
from crane.dialects.hw import MachineOp, machine_of
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.exec.tile_sim.check import CheckReport, check
from crane.hardware.machine import DramPort, Machine
from crane.ir.attributes import ArrayAttr, DenseIntsAttr
from crane.ir.builder import Builder, InsertPoint
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine
from crane.passes.autodiff import Autodiff
from crane.passes.context import PassContext
from crane.passes.segment import Segment
from crane.tools.inputs import translate
from crane.tools.opt import main as opt_main

ROOT = Path(__file__).resolve().parents[3]


def load(name: str) -> ModuleOp:
    path = ROOT / "examples" / f"{name}.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    assert isinstance(module, ModuleOp)
    return module


def body(module: Operation) -> list[Operation]:
    return list(module.regions[0].blocks[0].ops)


def set_mesh(module: ModuleOp, rows: int, cols: int, **changes: object) -> Machine:
    """Replace the module's machine by the same tile on a ``rows`` x ``cols`` mesh (with
    other fields ``changes``)."""
    old = machine_of(module) or Machine.edge()
    ports = tuple(DramPort(r, c) for r in range(rows) for c in (0, cols - 1))
    machine = dataclasses.replace(old, rows=rows, cols=cols, dram_ports=tuple(dict.fromkeys(ports)),
                                  **changes)  # type: ignore[arg-type]
    op = next(o for o in body(module) if isinstance(o, MachineOp))
    Builder(InsertPoint.before(op)).insert(MachineOp.build(machine))
    op.erase()
    return machine


def run_pass(module: Operation, pass_: object, anchor: str | None = None) -> PassContext:
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(getattr(pass_, "name", ""))
    targets = [o for o in body(module) if o.name == anchor] if anchor else [module]
    for op in targets:
        pass_.run(op, ctx)  # type: ignore[attr-defined]
    assert not ctx.diagnostics.error_count, ctx.diagnostics.render_all()
    return ctx


def simple_placement(module: Operation) -> None:
    """Give every ``segment.block`` ``placement`` and ``ports`` attributes (see above)."""
    machine = machine_of(module) or Machine.edge()
    ports = len(machine.dram_ports)
    for schedule in (o for o in body(module) if isinstance(o, ScheduleOp)):
        for block in schedule.blocks:
            place_block(block, ports)


def place_block(block: BlockOp, ports: int) -> None:
    lists: list[DenseIntsAttr] = []
    chosen: list[int] = []
    for row in block.tile_split():
        next_tile = 0
        for j, count in enumerate(row):
            lists.append(DenseIntsAttr(tuple(range(next_tile, next_tile + count))))
            chosen.append(j % ports if count else -1)
            next_tile += count
    block.attributes["placement"] = ArrayAttr(tuple(lists))
    block.attributes["ports"] = DenseIntsAttr(tuple(chosen))


def prepared(name: str, rows: int, cols: int, training: bool, batch: int = 0,
             max_block: int = 4, recompute: str = "crane"
             ) -> tuple[ModuleOp, FuncOp, ScheduleOp, Machine]:
    """A fresh copy of the network loaded, on the mesh, trained if asked (with the
    ``segment`` pass's ``recompute`` policy), scheduled, placed."""
    module = _prepared(name, rows, cols, training, batch, max_block, recompute).clone()
    assert isinstance(module, ModuleOp)
    func = next(o for o in body(module) if isinstance(o, FuncOp))
    schedule = next(o for o in body(module) if isinstance(o, ScheduleOp))
    return module, func, schedule, machine_of(module) or Machine.edge()


@cache
def _prepared(name: str, rows: int, cols: int, training: bool, batch: int,
              max_block: int, recompute: str) -> ModuleOp:
    module = load(name)
    set_mesh(module, rows, cols)
    if training:
        run_pass(module, Autodiff(), "graph.func")
    mode = "training" if training else "inference"
    run_pass(module, Segment(time_limit=0.01, batch=batch, max_block=max_block,
                             recompute=recompute, mode=mode))  # type: ignore[arg-type]
    simple_placement(module)
    return module


def lowered_and_checked(module: ModuleOp, machine: Machine) -> tuple[TileModule, CheckReport]:
    """The tile programs of a scheduled, placed module (appended to it), and the functional
    simulator's comparison of them with the reference interpreter."""
    func = next(op for op in body(module) if isinstance(op, FuncOp))
    schedule = next(op for op in body(module) if isinstance(op, ScheduleOp))
    made = lower_func(func, schedule, machine)
    block = module.regions[0].blocks[0]
    for op in tile_ops(made):
        block.append(op)
    return made, check(module)


def network_lowered_and_checked(text: str, filename: str, mesh: int,
                                max_block: int = 4) -> tuple[TileModule, CheckReport]:
    """A ``.crn`` network on a ``mesh`` x ``mesh`` mesh, scheduled, placed simply, then
    :func:`lowered_and_checked`."""
    module = translate("crn", text, filename, default_context())
    assert isinstance(module, ModuleOp)
    machine = set_mesh(module, mesh, mesh)
    run_pass(module, Segment(time_limit=0.01, max_block=max_block))
    simple_placement(module)
    return lowered_and_checked(module, machine)


INFERENCE = "segment{mode=inference},map,codegen,alloc"
"""The inference lowering as ``lower-to-tile`` runs it, without the expansions."""


def lowered_text(folder: Path, name: str, source: str, pipeline: str = INFERENCE) -> str:
    """The tile program ``crane-opt -p pipeline`` makes of the ``.crn`` text ``source``
    (both files written under ``folder``)."""
    net, out = folder / f"{name}.crn", folder / f"{name}.tile.mlir"
    net.write_text(source)
    assert opt_main([str(net), "-p", pipeline, "-o", str(out)]) == 0
    return out.read_text()
