"""The tile dialect: builders, exact round trips and one verifier error per rule."""

from __future__ import annotations

import dataclasses

import pytest

from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.hw import MACHINE_ATTR, MachineOp
from crane.dialects.layers.values import AttrValue
from crane.dialects.tile import (
    AllocOp,
    BarrierOp,
    ComputeOp,
    CopyOp,
    DramOp,
    LoadOp,
    ProgramOp,
    RecvOp,
    SendOp,
    StoreOp,
    compute_kind,
)
from crane.hardware.machine import Machine
from crane.ir.attributes import SymbolRefAttr
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify

MACHINE = dataclasses.replace(Machine.edge(), name="m", rows=2, cols=2, sram_bytes=4096,
                              dram_ports=Machine.edge_ports(2, 2))
CONV: dict[str, AttrValue] = {"out": 2, "kernel": (3, 3), "stride": (1, 1), "padding": (1, 1, 1, 1),
        "dilation": (1, 1), "groups": 1, "depthwise": False, "bias": False}


def _module() -> ModuleOp:
    """Two programs: tile 0 convolves and sends half the channels to tile 1, which stores."""
    t0, t1 = ProgramOp.build(0, 0, 0), ProgramOp.build(1, 0, 1)
    x = t0.body.append(AllocOp.build((1, 3, 4, 4), offset=0, name="x")).results[0]
    w = t0.body.append(AllocOp.build((2, 3, 3, 3), offset=192, name="w")).results[0]
    y = t0.body.append(AllocOp.build((1, 2, 4, 4), offset=408, name="y")).results[0]
    t0.body.extend([LoadOp.build(x, "x", (0, 0, 0, 0), 0), LoadOp.build(w, "w", (2, 0, 0, 0), 0),
                    ComputeOp.build("conv2d", [y], [x, w], CONV),
                    SendOp.build(y, 1, 7, route=(0, 1)), BarrierOp.build(0, (0, 1))])
    r = t1.body.append(AllocOp.build((1, 2, 4, 4), name="r")).results[0]
    s = t1.body.append(AllocOp.build((1, 1, 4, 4), name="s")).results[0]
    t1.body.extend([RecvOp.build(r, 0, 7), CopyOp.build(s, r, (0, 1, 0, 0), (0, 0, 0, 0), (1, 1, 4, 4)),
                    StoreOp.build(s, "y", (0, 3, 0, 0), 2, accumulate=True), BarrierOp.build(0, (0, 1))])
    ops = [MachineOp.build(MACHINE), DramOp.build("x", (1, 3, 4, 4), "input"),
           DramOp.build("w", (4, 3, 3, 3), "weight"), DramOp.build("y", (1, 4, 4, 4), "output"), t0, t1]
    module = ModuleOp.build(ops, name="t")
    module.attributes[MACHINE_ATTR] = SymbolRefAttr("m")
    return module


def _parse(text: str) -> ModuleOp:
    ops = parse_ops(default_context(), text, "t.mlir")
    assert len(ops) == 1 and isinstance(ops[0], ModuleOp)
    return ops[0]


def _errors(text: str) -> list[str]:
    return [d.message for d in verify(_parse(text), allow_unregistered=False)]


def test_built_module_verifies_and_round_trips_exactly() -> None:
    module = _module()
    assert verify(module, allow_unregistered=False) == []
    text = print_op(module)
    assert print_op(_parse(text)) == text
    assert print_op(_parse(text), generic=True) == print_op(module, generic=True)
    assert 'tile.compute %y, %x, %w {op = "conv2d", attrs = {out = 2,' in text
    assert "tile.send %y {peer = 1, tag = 7, route = array<i64: 0, 1>}" in text


def test_accessors_read_back_what_builders_wrote() -> None:
    module = _module()
    programs = [op for op in module.body.ops if isinstance(op, ProgramOp)]
    compute = next(op for op in programs[0].instructions if isinstance(op, ComputeOp))
    assert (compute.op, compute.num_outputs, len(compute.inputs)) == ("conv2d", 1, 2)
    assert compute.op_attrs["padding"] == (1, 1, 1, 1)
    store = next(op for op in programs[1].instructions if isinstance(op, StoreOp))
    assert (store.tensor, store.offsets, store.port, store.accumulate) == ("y", (0, 3, 0, 0), 2, True)
    alloc = AllocOp.build((2, 8), nbytes=16)
    assert (alloc.byte_size, AllocOp.build((2, 8)).byte_size) == (16, 64)
    assert compute_kind("conv2d_grad_weight") == ("grad_weight", "conv2d")
    assert compute_kind("momentum") == ("update", "momentum")
    assert compute_kind("nonsense") == ("", "nonsense")


BROKEN = [
    ('tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 0, 0>',
     'tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 1, 0>',
     "tensor 'x': dimension 2 reads [1, 5) outside [0, 4)"),
    ('tensor = "w", offsets', 'tensor = "v", offsets', "no tile.dram tensor named 'v'"),
    ("port = 0}", "port = 9}", "DRAM port 9 does not exist (the machine has 4)"),
    ("{offset = 408}", "{offset = 4000}", "buffer [4000, 4128) exceeds the tile's SRAM of 4096 bytes"),
    ("{offset = 408}", "{offset = -2}", "'offset' must be a byte offset or -1"),
    ("{offset = 408}", "{offset = 408, bytes = 0}", "'bytes' must be positive, got 0"),
    ("{offset = 408}", "{offset = 4064, bytes = 33}", "buffer [4064, 4097) exceeds the tile's SRAM of 4096 bytes"),
    ("peer = 1, tag = 7, route", "peer = 4, tag = 7, route", "peer 4 is outside the 2 x 2 mesh"),
    ("route = array<i64: 0, 1>", "route = array<i64: 0, 3, 1>", "hops from tile 0 to tile 3"),
    ("route = array<i64: 0, 1>", "route = array<i64: 1, 0>", "'route' must run from tile 0 to tile 1"),
    ('op = "conv2d"', 'op = "conv3d"', "unknown compute op 'conv3d'"),
    ("attrs = {out = 2,", "attrs = {out = 3,", "output buffer is [1, 2, 4, 4], the inputs give [1, 3, 4, 4]"),
    ("{tile = 1, row = 0, col = 1}", "{tile = 1, row = 1, col = 1}", "tile 1 is at row 0, col 1"),
    ("{tile = 1, row = 0, col = 1}", "{tile = 0, row = 0, col = 0}", "tile 0 has more than one program"),
    ('role = "weight"', 'role = "bias"', "unknown 'role' \"bias\""),
    ('dtype = "f32", role = "weight"', 'dtype = "f-5", role = "weight"', "unknown 'dtype' \"f-5\""),
    ('dtype = "f32", role = "weight"', 'dtype = "f-5", role = "weight"', "buffer of f32 but DRAM tensor 'w' holds f-5"),
    ('{name = "w", shape = array<i64: 4, 3, 3, 3>, dtype = "f32"',
     '{name = "x", shape = array<i64: 4, 3, 3, 3>, dtype = "f32"', "DRAM tensor 'x' is declared twice"),
    ("src_offsets = array<i64: 0, 1, 0, 0>", "src_offsets = array<i64: 0, 2, 0, 0>",
     "source: dimension 1 reads [2, 3) outside [0, 2)"),
    ("tiles = array<i64: 0, 1>} : () -> ()\n  })", "tiles = array<i64: 1>} : () -> ()\n  })",
     "tile 0 waits at a barrier it is not listed in"),
]


@pytest.mark.parametrize(("old", "new", "message"), BROKEN, ids=[b[2][:40] for b in BROKEN])
def test_verifier_names_the_broken_rule(old: str, new: str, message: str) -> None:
    text = print_op(_module())
    assert old in text, old
    errors = _errors(text.replace(old, new, 1))
    assert any(message in e for e in errors), errors


def test_instructions_outside_a_program_and_strangers_inside_are_rejected() -> None:
    text = print_op(_module())
    stray = text.replace("  tile.program ({", "  tile.barrier {id = 1, tiles = array<i64: 0>} : () -> ()\n"
                         "  tile.program ({", 1)
    assert any("expects parent op 'tile.program'" in e for e in _errors(stray))
    inside = text.replace("    tile.barrier {id = 0, tiles = array<i64: 0, 1>} : () -> ()\n  }) {tile = 0",
                          '    "test.op"() : () -> ()\n  }) {tile = 0', 1)
    errors = [d.message for d in verify(parse_ops(default_context(allow_unregistered=True), inside, "t")[0])]
    assert any("may hold only tile instructions, found 'test.op'" in e for e in errors), errors


def _windowed() -> ModuleOp:
    """Tile 0 sends two column halves of a buffer to tile 1, which receives them into the
    matching halves of one buffer; tile 1 then fills the two halves of another buffer by
    two windowed computes and stores it (the barrier carries its phase label)."""
    t0, t1 = ProgramOp.build(0, 0, 0), ProgramOp.build(1, 0, 1)
    x = t0.body.append(AllocOp.build((1, 2, 4, 4), name="x")).results[0]
    t0.body.extend([LoadOp.build(x, "x", (0, 0, 0, 0), 0),
                    SendOp.build(x, 1, 1, window=((0, 0, 0, 0), (1, 2, 4, 2))),
                    SendOp.build(x, 1, 2, window=((0, 0, 0, 2), (1, 2, 4, 2))),
                    BarrierOp.build(0, (0, 1), label="b:state0")])
    j = t1.body.append(AllocOp.build((1, 2, 4, 4), name="j")).results[0]
    y = t1.body.append(AllocOp.build((1, 2, 4, 4), name="y")).results[0]
    t1.body.extend([RecvOp.build(j, 0, 1, window=((0, 0, 0, 0), (1, 2, 4, 2))),
                    RecvOp.build(j, 0, 2, window=((0, 0, 0, 2), (1, 2, 4, 2))),
                    ComputeOp.build("relu", [y], [j], {}, window=((0, 0, 0, 0), (1, 2, 4, 4))),
                    StoreOp.build(y, "y", (0, 0, 0, 0), 1),
                    BarrierOp.build(0, (0, 1), label="b:state0")])
    ops = [MachineOp.build(MACHINE), DramOp.build("x", (1, 2, 4, 4), "input"),
           DramOp.build("y", (1, 2, 4, 4), "output"), t0, t1]
    module = ModuleOp.build(ops, name="w")
    module.attributes[MACHINE_ATTR] = SymbolRefAttr("m")
    return module


def test_windows_verify_round_trip_and_read_back() -> None:
    module = _windowed()
    assert verify(module, allow_unregistered=False) == []
    text = print_op(module)
    assert print_op(_parse(text)) == text
    assert "offsets = array<i64: 0, 0, 0, 2>, shape = array<i64: 1, 2, 4, 2>" in text
    assert 'label = "b:state0"' in text
    programs = [op for op in module.body.ops if isinstance(op, ProgramOp)]
    recv = next(op for op in programs[1].instructions if isinstance(op, RecvOp))
    assert recv.windowed and recv.window == ((0, 0, 0, 0), (1, 2, 4, 2))
    plain = SendOp.build(recv.buffer, 0, 9)
    assert not plain.windowed and plain.window == ((0, 0, 0, 0), (1, 2, 4, 4))
    compute = next(op for op in programs[1].instructions if isinstance(op, ComputeOp))
    assert compute.window == ((0, 0, 0, 0), (1, 2, 4, 4))
    barrier = next(op for op in programs[0].instructions if isinstance(op, BarrierOp))
    assert barrier.label == "b:state0"


WINDOW_BROKEN = [
    ("offsets = array<i64: 0, 0, 0, 2>, shape = array<i64: 1, 2, 4, 2>} : (buffer<1x2x4x4xf32, sram>",
     "offsets = array<i64: 0, 0, 0, 3>, shape = array<i64: 1, 2, 4, 2>} : (buffer<1x2x4x4xf32, sram>",
     "does not lie inside the buffer of shape [1, 2, 4, 4]"),
    ("peer = 1, tag = 1, offsets = array<i64: 0, 0, 0, 0>, shape = array<i64: 1, 2, 4, 2>",
     "peer = 1, tag = 1, offsets = array<i64: 0, 0, 0, 0>", "'offsets' needs a 'shape'"),
    ("out_offsets = array<i64: 0, 0, 0, 0>, out_shape = array<i64: 1, 2, 4, 4>",
     "out_offsets = array<i64: 0, 0, 0, 1>, out_shape = array<i64: 1, 2, 4, 4>",
     "output: dimension 3 reads [1, 5) outside [0, 4)"),
    ("out_offsets = array<i64: 0, 0, 0, 0>, out_shape = array<i64: 1, 2, 4, 4>",
     "out_offsets = array<i64: 0, 0, 0, 0>", "'out_offsets' and 'out_shape' go together"),
]


@pytest.mark.parametrize(("old", "new", "message"), WINDOW_BROKEN, ids=[b[2][:40] for b in WINDOW_BROKEN])
def test_window_errors_are_named(old: str, new: str, message: str) -> None:
    text = print_op(_windowed())
    assert old in text, old
    errors = _errors(text.replace(old, new, 1))
    assert any(message in e for e in errors), errors


def test_windowed_transfers_and_computes_run() -> None:
    import numpy as np

    from crane.exec.tile_sim.functional import run_programs
    from crane.exec.tile_sim.timing import TimingConfig, simulate
    from crane.exec.tile_sim.timing_program import lower_programs

    module = _windowed()
    x = np.random.default_rng(0).standard_normal((1, 2, 4, 4)).astype(np.float32)
    dram = run_programs(module, inputs={"x": x})
    np.testing.assert_array_equal(dram["y"], np.maximum(x, 0))
    programs = lower_programs(module, MACHINE)
    sends = [i for p in programs for i in p.instrs if i.kind == "send"]
    recvs = [i for p in programs for i in p.instrs if i.kind == "recv"]
    # Each half is 16 elements at the machine's byte per element, one hop away.
    assert [(i.nbytes, i.hops) for i in sends] == [(16, 1), (16, 1)]
    # The two windowed receives into one buffer do not wait for each other.
    assert recvs[0].index not in recvs[1].deps
    report = simulate(module, config=TimingConfig(trace=False))
    assert report.barriers and report.barriers[0][0] == "b:state0"
