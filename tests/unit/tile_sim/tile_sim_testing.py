"""Helpers for the tile simulator tests (imported by name: this folder is on sys.path).

:func:`lower_whole_ops` is a deliberately naive code generator: every graph op runs whole
on one tile (round-robin over ``tiles``), a value used on another tile is sent there right
after it is computed, inputs/weights/state are loaded from DRAM and outputs stored. It
exercises every compute family (layers, gradients, updates, fill, accumulate) against the
interpreter without depending on the real ``codegen``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp, ReturnOp, WeightOp
from crane.dialects.graph_grad import AccumulateOp, FillOp, GradOp, OptimizerStateOp, UpdateOp
from crane.dialects.hw import MACHINE_ATTR, MachineOp
from crane.dialects.tile import (
    AllocOp,
    ComputeOp,
    DramOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
)
from crane.hardware.machine import Machine
from crane.ir.attributes import Attribute, SymbolRefAttr
from crane.ir.core import Operation, Value
from crane.ir.parser import parse_ops
from crane.ir.types import TensorType
from crane.tools.inputs import translate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
FILECHECK = ROOT / "tests" / "filecheck" / "tile_sim"


def parse(text: str, filename: str = "t.mlir") -> ModuleOp:
    ops = parse_ops(default_context(), text, filename)
    assert len(ops) == 1 and isinstance(ops[0], ModuleOp)
    return ops[0]


def load(name: str) -> ModuleOp:
    path = FILECHECK / name
    return parse(path.read_text(), str(path))


def machine(rows: int, cols: int) -> Machine:
    return dataclasses.replace(Machine.edge(), name="m", rows=rows, cols=cols, sram_bytes=1 << 24,
                               dram_ports=Machine.edge_ports(rows, cols))


def crn_func(path: Path) -> tuple[ModuleOp, FuncOp]:
    module = translate("crn", path.read_text(), str(path), default_context())
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    return module, func


def _compute(op: Operation) -> tuple[str, dict[str, Attribute]]:
    attrs = dict(op.attributes)
    if isinstance(op, GradOp):
        return f"{op.kind.name}_grad_{op.role}", attrs
    if isinstance(op, UpdateOp):
        return op.name.removeprefix("graph."), attrs
    if isinstance(op, AccumulateOp):
        return "accumulate", attrs
    if isinstance(op, FillOp):
        return "fill", attrs
    return op.name.removeprefix("graph."), attrs


class _Lowering:
    def __init__(self, tiles: list[int], cols: int) -> None:
        self.programs = {t: ProgramOp.build(t, t // cols, t % cols) for t in tiles}
        self.tiles = tiles
        self.buffers: dict[tuple[int, Value], Value] = {}
        self.drams: list[DramOp] = []
        self.tag = 0

    def buffer(self, tile: int, value: Value) -> Value:
        key = (tile, value)
        if key not in self.buffers:
            ttype = value.type
            assert isinstance(ttype, TensorType)
            alloc = AllocOp.build(ttype.shape, ttype.element.name, name=value.name_hint)
            self.programs[tile].body.append(alloc)
            self.buffers[key] = alloc.buffer
        return self.buffers[key]

    def from_dram(self, value: Value, name: str, role: str, tile: int) -> None:
        ttype = value.type
        assert isinstance(ttype, TensorType)
        self.drams.append(DramOp.build(name, ttype.shape, role, ttype.element.name))
        buf = self.buffer(tile, value)
        self.programs[tile].body.append(LoadOp.build(buf, name, (0,) * ttype.rank, 0))
        self.share(value, tile)

    def share(self, value: Value, tile: int) -> None:
        """Send a value computed on ``tile`` to every other tile that uses it."""
        users = {self.place(u) for u in value.users()} - {tile}
        for other in sorted(users):
            self.tag += 1
            self.programs[tile].body.append(SendOp.build(self.buffer(tile, value), other, self.tag))
            self.programs[other].body.append(RecvOp.build(self.buffer(other, value), tile, self.tag))

    def place(self, op: Operation) -> int:
        if isinstance(op, ReturnOp):
            return self.tiles[0]
        return self.order[op]

    def lower(self, func: FuncOp) -> None:
        ops = [op for op in func.body.ops if not isinstance(op, ReturnOp)]
        computes = [op for op in ops if not isinstance(op, WeightOp | OptimizerStateOp)]
        self.order = {op: self.tiles[i % len(self.tiles)] for i, op in enumerate(computes)}
        self.order.update({op: self.tiles[0] for op in ops if op not in self.order})
        for arg in func.body.args:
            self.from_dram(arg, arg.name_hint or "", "input", self.tiles[0])
        for op in ops:
            self.lower_op(op)
        ret = func.body.last_op
        assert isinstance(ret, ReturnOp)
        for index, value in enumerate(ret.operands):
            name = value.name_hint or f"output{index}"
            ttype = value.type
            assert isinstance(ttype, TensorType)
            self.drams.append(DramOp.build(name, ttype.shape, "output", ttype.element.name))
            buf = self.buffer(self.tiles[0], value)
            self.programs[self.tiles[0]].body.append(StoreOp.build(buf, name, (0,) * ttype.rank, 0))

    def lower_op(self, op: Operation) -> None:
        tile = self.order[op]
        if isinstance(op, WeightOp):
            self.from_dram(op.results[0], op.weight_name, "weight", tile)
            return
        if isinstance(op, OptimizerStateOp):
            self.from_dram(op.results[0], op.state_name, "state", tile)
            return
        name, attrs = _compute(op)
        outs = [self.buffer(tile, r) for r in op.results]
        ins = [self.buffer(tile, v) for v in op.operands]
        self.programs[tile].body.append(ComputeOp.build(name, outs, ins, attrs))
        for result in op.results:
            self.share(result, tile)


def lower_whole_ops(func: FuncOp, rows: int = 1, cols: int = 2) -> ModuleOp:
    """A module running ``func`` op by op on the tiles of a ``rows x cols`` mesh."""
    lowering = _Lowering(list(range(rows * cols)), cols)
    lowering.lower(func)
    func.detach()
    ops: list[Operation] = [MachineOp.build(machine(rows, cols)), func, *lowering.drams,
                            *lowering.programs.values()]
    module = ModuleOp.build(ops, name="t")
    module.attributes[MACHINE_ATTR] = SymbolRefAttr("m")
    return module
