"""A ``tile.compute`` reads boxes of its inputs in place (``in_windows``): verified, printed
and parsed back, run by both simulators on the box alone, and what codegen emits instead
of copying a box out of a buffer first."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from crane.codegen.chip import Chip
from crane.codegen.program import Compute, Copy, Store
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.hw import MACHINE_ATTR, MachineOp
from crane.dialects.tile import AllocOp, ComputeOp, DramOp, LoadOp, ProgramOp, StoreOp
from crane.exec.tile_sim.functional import simulate
from crane.exec.tile_sim.timing import simulate as time_it
from crane.hardware.machine import Machine
from crane.ir.attributes import SymbolRefAttr
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.types import TensorType, f32
from crane.ir.values import Value
from crane.ir.verifier import verify

MACHINE = dataclasses.replace(Machine.edge(), name="m", rows=1, cols=1, sram_bytes=4096,
                              dram_ports=Machine.edge_ports(1, 1))
RIGHT_HALF = ((0, 0, 0, 2), (1, 2, 4, 2))


def _module(window: tuple[tuple[int, ...], tuple[int, ...]] | None = RIGHT_HALF) -> ModuleOp:
    """One tile loads a 1x2x4x4 input and stores the relu of its right half of columns."""
    tile = ProgramOp.build(0, 0, 0)
    x = tile.body.append(AllocOp.build((1, 2, 4, 4), name="x")).results[0]
    y = tile.body.append(AllocOp.build((1, 2, 4, 2), name="y")).results[0]
    tile.body.extend([LoadOp.build(x, "x", (0, 0, 0, 0), 0),
                      ComputeOp.build("relu", [y], [x], {}, in_windows=[window]),
                      StoreOp.build(y, "y", (0, 0, 0, 0), 0)])
    ops = [MachineOp.build(MACHINE), DramOp.build("x", (1, 2, 4, 4), "input"),
           DramOp.build("y", (1, 2, 4, 2), "output"), tile]
    module = ModuleOp.build(ops, name="w")
    module.attributes[MACHINE_ATTR] = SymbolRefAttr("m")
    return module


def _errors(text: str) -> list[str]:
    ops = parse_ops(default_context(), text, "t.mlir")
    return [d.message for d in verify(ops[0])]


def test_an_input_window_verifies_prints_and_parses_back() -> None:
    module = _module()
    assert verify(module) == []
    text = print_op(module)
    assert "in_windows = [array<i64: 0, 0, 0, 2, 1, 2, 4, 2>]" in text
    again = parse_ops(default_context(), text, "t.mlir")[0]
    assert print_op(again) == text
    compute = next(op for op in again.walk() if isinstance(op, ComputeOp))
    assert compute.input_windows == (RIGHT_HALF,)
    assert [t.shape for t in compute.input_types()] == [(1, 2, 4, 2)]


@pytest.mark.parametrize(("old", "new", "message"), [
    ("array<i64: 0, 0, 0, 2, 1, 2, 4, 2>", "array<i64: 0, 0, 0, 3, 1, 2, 4, 2>",
     "input window #0: dimension 3 reads [3, 5) outside [0, 4)"),
    ("array<i64: 0, 0, 0, 2, 1, 2, 4, 2>", "array<i64: 0, 0, 2, 1, 2, 4, 2>",
     "expected array<i64> or 8 offsets and sizes"),
    ("[array<i64: 0, 0, 0, 2, 1, 2, 4, 2>]", "[array<i64>, array<i64>]",
     "'in_windows' needs one entry per input (1)"),
    ("array<i64: 0, 0, 0, 2, 1, 2, 4, 2>", "array<i64: 0, 0, 0, 0, 1, 2, 4, 4>",
     "relu"),
], ids=["outside", "odd", "count", "shape"])
def test_a_bad_input_window_is_named(old: str, new: str, message: str) -> None:
    text = print_op(_module())
    assert old in text
    errors = _errors(text.replace(old, new))
    assert any(message in e for e in errors), errors


def test_the_simulators_run_the_op_on_the_box_alone() -> None:
    x = np.arange(-16, 16, dtype=np.float32).reshape(1, 2, 4, 4)
    dram, _ = simulate(_module(), {"x": x})
    np.testing.assert_array_equal(dram["y"], np.maximum(x[..., 2:], 0))
    whole, half = _module(None), _module()
    # Without the window the relu would read the whole buffer into a half-size output.
    assert verify(whole)
    report = time_it(half)
    assert report.totals.vector_ops == 16  # one per element of the box, not of the buffer


def _value() -> Value:
    return Value(TensorType((2, 4, 8, 8), f32), name_hint="a")


def test_codegen_reads_a_box_of_a_buffer_in_place_and_copies_only_for_a_dma() -> None:
    chip = Chip(1, 1, lambda value: ("a", "activation"))
    value = _value()
    buffer = chip.alloc(0, (2, 4, 8, 8), value)
    whole = ((0, 2), (0, 4), (0, 8), (0, 8))
    view = chip.cut(buffer, whole, ((1, 2), (0, 4), (0, 8), (2, 6)), value)
    inner = chip.cut(view, ((1, 2), (0, 4), (0, 8), (2, 6)), ((1, 2), (1, 3), (0, 8), (2, 6)), value)
    out = chip.alloc(0, (1, 2, 8, 4), value)
    chip.emit(0, Compute("relu", (out,), (inner,)))
    chip.store(value, inner, ((1, 2), (1, 3), (0, 8), (2, 6)), 0)
    body = chip.programs[0].body
    compute = next(i for i in body if isinstance(i, Compute))
    assert compute.ins == (buffer,) and compute.in_windows == (((1, 1, 0, 2), (1, 2, 8, 4)),)
    copy = next(i for i in body if isinstance(i, Copy))
    store = next(i for i in body if isinstance(i, Store))
    assert copy.src == buffer and copy.src_offsets == (1, 1, 0, 2) and store.buffer == copy.dst
    assert sum(isinstance(i, Copy) for i in body) == 1
