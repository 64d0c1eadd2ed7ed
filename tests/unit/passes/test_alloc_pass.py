"""The ``alloc`` pass: offsets on tile.alloc, figures, options, the overflow diagnostic, and
what double buffering buys in the timing simulator."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crane.alloc.programs import program_buffers
from crane.dialects import default_context
from crane.dialects.tile import AllocOp, ProgramOp
from crane.exec.tile_sim.timing import simulate
from crane.ir.attributes import DictAttr
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine, Severity
from crane.ir.parser import parse_ops
from crane.ir.verifier import verify
from crane.passes.alloc import ALLOC_ATTR, Alloc
from crane.passes.context import PassContext
from crane.passes.options import OptionValueError

MACHINE = ('hw.machine {sym_name = "m", rows = 1, cols = 1, macs_per_cycle = 1024, '
           "sram_bytes = SRAM, frequency_hz = 1.0e9, data_bytes = 1, noc_bandwidth = 16.0e9, "
           "noc_hop_pj_per_byte = 5.6, dram_bandwidth = 64.0e9, dram_pj_per_byte = 60.0, "
           "mac_pj = 0.018, sram_read_pj_per_byte = 1.05, sram_write_pj_per_byte = 1.87, "
           "vector_lanes = 8, vector_op_pj = 0.0873, dram_ports = array<i64: 0, 0>} : () -> ()")
B = "buffer<32x32xf32, sram>"


def two_step_module(sram: int = 65536) -> str:
    """Two sub-batches: load x_k, relu y_k <- x_k, store y_k (each buffer 4096 IR bytes)."""
    lines = ["builtin.module @t attributes {crane.machine = @m} {", MACHINE.replace("SRAM", str(sram)),
             'tile.dram {name = "x", shape = array<i64: 64, 32>, dtype = "f32", role = "input"} : () -> ()',
             'tile.dram {name = "y", shape = array<i64: 64, 32>, dtype = "f32", role = "output"} : () -> ()',
             "tile.program ({"]
    for k in range(2):
        lines += [f"  %x{k} = tile.alloc {{offset = -1}} : () -> {B}",
                  f"  %y{k} = tile.alloc {{offset = -1}} : () -> {B}",
                  f'  tile.load %x{k} {{tensor = "x", offsets = array<i64: {32 * k}, 0>, port = 0}} : ({B}) -> ()',
                  f'  tile.compute %y{k}, %x{k} {{op = "relu", attrs = {{}}}} : ({B}, {B}) -> ()',
                  f'  tile.store %y{k} {{tensor = "y", offsets = array<i64: {32 * k}, 0>, port = 0}} : ({B}) -> ()']
    lines += ["}) {tile = 0, row = 0, col = 0} : () -> ()", "}"]
    return "\n".join(lines) + "\n"


def parse(text: str) -> Operation:
    return parse_ops(default_context(), text, "alloc.mlir")[0]


def run(module: Operation, pass_: Alloc) -> PassContext:
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(pass_.name)
    pass_.run(module, ctx)
    return ctx


def offsets(module: Operation) -> dict[str, int]:
    return {op.buffer.name_hint or "": op.offset for op in module.walk() if isinstance(op, AllocOp)}


def test_offsets_are_set_disjoint_where_live_and_verify() -> None:
    module = parse(two_step_module())
    ctx = run(module, Alloc())
    assert not [d for d in ctx.diagnostics.diagnostics if d.severity is Severity.ERROR]
    got = offsets(module)
    assert all(v >= 0 and v % 64 == 0 for v in got.values())
    # x0/y0 live together, x1 is loaded during relu 0 (double buffering): three distinct.
    assert len({got["x0"], got["y0"], got["x1"]}) == 3
    assert got["y1"] in (got["x0"], got["y0"])       # y1 reuses bytes of step 0
    verify(module)
    attr = module.attributes[ALLOC_ATTR]
    assert isinstance(attr, DictAttr)
    figures = {k: v.value for k, v in attr.entries}  # type: ignore[attr-defined]
    assert figures["tiles"] == 1 and figures["peak_bytes_max"] == 3 * 4096
    assert figures["fragmentation_max"] == 0.0
    assert ctx.statistics["alloc"]["buffers"] == 4
    assert ctx.statistics["alloc"]["peak-bytes-max"] == 3 * 4096


def test_without_double_buffering_the_next_load_reuses_the_bytes() -> None:
    module = parse(two_step_module())
    run(module, Alloc(double_buffer=False))
    got = offsets(module)
    assert got["x1"] == got["x0"] and got["y1"] == got["y0"]


def test_double_buffering_pays_in_the_timing_simulator() -> None:
    single, double = parse(two_step_module()), parse(two_step_module())
    run(single, Alloc(double_buffer=False))
    run(double, Alloc())
    # 1024 one-byte elements: loads and stores 64 cycles, relu 128 (8 lanes).
    # single: load 0..64, relu 64..192, store 192..256 | load x1 waits relu 0: 192..256
    #   (sharing the port with store 0: both 8 B/cycle, 192..320), relu 320..448, store ..512
    # double: load x1 64..128 during relu 0, relu 1 192..320, store 1 320..384.
    assert simulate(single).cycles == pytest.approx(512)
    assert simulate(double).cycles == pytest.approx(384)


def test_alignment_option() -> None:
    module = parse(two_step_module().replace("32x32xf32", "3x5xf32").replace("array<i64: 64, 32>", "array<i64: 64, 5>"))
    run(module, Alloc(alignment=256))
    assert all(v % 256 == 0 for v in offsets(module).values())
    assert len(set(offsets(module).values())) >= 3
    for bad in (0, 3, 96):
        with pytest.raises(OptionValueError, match=f"expects a power of two from 1 to 1048576, got '{bad}'"):
            Alloc(alignment=bad)


def test_overflow_is_located_with_the_live_buffers() -> None:
    module = parse(two_step_module(sram=6000))
    ctx = run(module, Alloc(double_buffer=False))
    errors = [d for d in ctx.diagnostics.diagnostics if d.severity is Severity.ERROR]
    assert len(errors) == 1
    error = errors[0]
    assert error.location.line == 5                   # the tile.program
    assert "tile 0 runs out of SRAM at instruction 3" in error.message
    assert "%x0 (4,096 B), %y0 (4,096 B)" in error.message and "'tile.compute'" in error.message
    notes = [(n.message, getattr(n.location, "line", None)) for n in error.notes]
    assert notes[0] == ("tile 0 runs out of SRAM here", 9)
    assert notes[1] == ("%x0 (4,096 bytes) is live from instruction 2 to 3", 6)
    # 1024-element buffers at the machine's 1-byte elements would fit: the last note says so.
    assert notes[-1] == ("at the machine's 1-byte elements these buffers would take 2,048 "
                         "bytes; the IR's element types size them here", None)
    assert all(op.offset == -1 for op in module.walk() if isinstance(op, AllocOp))


def test_liveness_from_ssa_uses() -> None:
    module = parse(two_step_module())
    program = next(op for op in module.walk() if isinstance(op, ProgramOp))
    buffers = program_buffers(program)
    spans = [(r.name, r.first, r.last, r.dma_target) for r in buffers.requests]
    assert spans == [("%x0", 2, 3, True), ("%y0", 3, 4, False),
                     ("%x1", 7, 8, True), ("%y1", 8, 9, False)]
    assert buffers.compute_steps == (3, 8)


def test_crane_opt_renders_the_overflow(tmp_path) -> None:
    path = tmp_path / "big.mlir"
    path.write_text(two_step_module(sram=6000))
    done = subprocess.run([sys.executable, "-m", "crane.opt", str(path), "-p", "alloc"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert f"{path}:5:1: error: tile 0 runs out of SRAM at instruction" in done.stderr
    assert "note: tile 0 runs out of SRAM here" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_a_tile_that_fits_only_single_buffered_falls_back() -> None:
    module = parse(two_step_module(sram=10000))      # 8 KiB fit; the early x1 does not
    ctx = run(module, Alloc())
    assert not [d for d in ctx.diagnostics.diagnostics if d.severity is Severity.ERROR]
    got = offsets(module)
    assert got["x1"] == got["x0"] and got["y1"] == got["y0"]
    assert ctx.statistics["alloc"]["single-buffered-programs"] == 1
    attr = module.attributes[ALLOC_ATTR]
    assert isinstance(attr, DictAttr)
    assert dict(attr.entries)["single_buffered_tiles"].value == 1  # type: ignore[attr-defined]


def test_programs_without_location_report_at_the_module() -> None:
    from crane.ir.location import UNKNOWN

    module = parse(two_step_module(sram=6000))
    for op in module.walk():
        if isinstance(op, ProgramOp):
            op.location = UNKNOWN                     # as codegen builds them
    ctx = run(module, Alloc())
    error = next(d for d in ctx.diagnostics.diagnostics if d.severity is Severity.ERROR)
    assert (error.location.line, error.location.col) == (1, 1)  # type: ignore[attr-defined]


def test_many_live_buffers_get_a_summary_note() -> None:
    lines = ["builtin.module @t attributes {crane.machine = @m} {", MACHINE.replace("SRAM", "1024"),
             "tile.program ({"]
    names = [f"b{k}" for k in range(12)]
    lines += [f"  %{n} = tile.alloc {{offset = -1}} : () -> buffer<8x8xf32, sram>" for n in names]
    operands = ", ".join(f"%{n}" for n in names)
    types = ", ".join(["buffer<8x8xf32, sram>"] * len(names))
    lines += [f'  tile.compute {operands} {{op = "accumulate"}} : ({types}) -> ()',
              "}) {tile = 0, row = 0, col = 0} : () -> ()", "}"]
    ctx = run(parse("\n".join(lines) + "\n"), Alloc())
    error = next(d for d in ctx.diagnostics.diagnostics if d.severity is Severity.ERROR)
    assert "and 6 more (1,536 B)" in error.message
    messages = [n.message for n in error.notes]
    assert len(messages) == 1 + 8 + 2
    assert messages[-2] == "and 4 smaller buffers live there (1,024 bytes)"
