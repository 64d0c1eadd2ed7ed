"""The functional tile simulator: results, synchronisation and every run-time error it names."""

from __future__ import annotations

import numpy as np
import pytest
from tile_sim_testing import load, parse

from crane.exec.tile_sim.functional import graph_func, initial_dram, run_programs, simulate
from crane.exec.tile_sim.memory import SimulationError
from crane.ir.printer import print_op


def _errors(problem: pytest.ExceptionInfo[SimulationError]) -> list[str]:
    diag = problem.value.diagnostics[0]
    return [diag.message, *(n.message for n in diag.notes)]


def _where(problem: pytest.ExceptionInfo[SimulationError]) -> str:
    return str(problem.value.diagnostics[0].location)


def test_two_tile_conv_split_by_output_channels_equals_the_untiled_conv() -> None:
    module = load("conv_split.mlir")
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = np.random.default_rng(2).standard_normal((4, 3, 3, 3)).astype(np.float32)
    y = run_programs(module, {"x": x}, {"w": w})["y"]
    from crane.exec.interpreter import run_function
    func = graph_func(module)
    assert func is not None
    expected = run_function(func, {"x": x}, weights={"w": w}, dtype="f32")["y"]
    np.testing.assert_array_equal(y, expected)
    assert np.abs(y).max() > 0.1


def test_dram_starts_like_the_interpreter_and_outputs_at_zero() -> None:
    module = load("conv_split.mlir")
    from crane.exec.interpreter import init_weight
    dram = initial_dram(module, seed=4)
    np.testing.assert_array_equal(dram["w"], init_weight("w", (4, 3, 3, 3), np.float32, 4))
    assert not dram["y"].any() and dram["x"].dtype == np.float32
    with pytest.raises(SimulationError, match="no tile.dram tensor named 'q'"):
        initial_dram(module, {"q": np.zeros(1)})


def test_pipeline_of_sends_and_receives_runs_both_chunks() -> None:
    dram, counters = simulate(load("pipeline.mlir"))
    x = initial_dram(load("pipeline.mlir"))["x"]
    np.testing.assert_allclose(dram["z"], 1 / (1 + np.exp(-np.maximum(x, 0))), rtol=1e-6)
    assert counters.noc_bytes == 4 * 2 * 8 * 4


def test_deadlock_names_every_blocked_tile_and_its_instruction() -> None:
    with pytest.raises(SimulationError) as problem:
        simulate(load("deadlock.mlir"))
    messages = _errors(problem)
    assert messages[0] == "'tile.recv' op deadlock: 3 tile(s) blocked (0, 1, 2), none can proceed"
    assert "tile 0 is blocked here: receive from tile 1 with tag 1, which is at 'tile.recv' (peer 0, tag 2)" in messages
    assert "tile 2 is blocked here: barrier 5 waits for tile(s) 1" in messages
    notes = problem.value.diagnostics[0].notes
    assert [str(n.location).split(":")[-2] for n in notes] == ["12", "18", "23"]


def test_a_send_to_a_finished_tile_is_a_deadlock() -> None:
    text = print_op(load("pipeline.mlir")).replace("tile.send %b {peer = 1, tag = 1}", "tile.send %b {peer = 1, tag = 9}")
    with pytest.raises(SimulationError) as problem:
        simulate(parse(text))
    messages = _errors(problem)
    assert any("tile 0 is blocked here: send to tile 1 with tag 9, which is at 'tile.recv' (peer 0, tag 1)" in m
               for m in messages), messages
    assert any("tile 2 is blocked here: receive from tile 1 with tag 1, which is at 'tile.recv'" in m
               for m in messages), messages


def test_overlapping_allocation_is_detected_naming_both_buffers() -> None:
    text = print_op(load("conv_split.mlir")).replace("{offset = 768}", "{offset = 512}", 1)
    with pytest.raises(SimulationError) as problem:
        simulate(parse(text))
    messages = _errors(problem)
    assert messages[0].startswith("'tile.compute' op reads %x (SRAM bytes [0, 768) of tile 0), which %w overwrote")
    assert messages[1:] == ["%x is allocated here", "%w overwrote it here"]


def test_disjoint_reuse_of_sram_after_a_buffer_died_is_fine() -> None:
    # %y reuses %x's bytes once the conv has read %x: allowed.
    text = print_op(load("conv_split.mlir")).replace("{offset = 984}", "{offset = 0}", 1)
    module = parse(text)
    np.testing.assert_array_equal(run_programs(module)["y"], run_programs(load("conv_split.mlir"))["y"])


def test_out_of_bounds_accesses_are_caught_at_run_time_too() -> None:
    base = print_op(load("conv_split.mlir"))
    dma = base.replace('offsets = array<i64: 2, 0, 0, 0>, port = 1', 'offsets = array<i64: 3, 0, 0, 0>, port = 1')
    with pytest.raises(SimulationError) as problem:
        simulate(parse(dma), check_ir=False)
    assert _errors(problem)[0] == ("'tile.load' op accesses DRAM tensor 'w' out of bounds: box at [3, 0, 0, 0] "
                                   "of shape [2, 3, 3, 3] in a tensor of shape [4, 3, 3, 3]")
    line = int(_where(problem).split(":")[-2])
    assert dma.splitlines()[line - 1].lstrip().startswith('tile.load %w {tensor = "w", offsets = array<i64: 3')
    sram = base.replace("{offset = 984}", "{offset = 1048200}", 1)
    with pytest.raises(SimulationError) as problem:
        simulate(parse(sram), check_ir=False)
    assert _errors(problem)[0] == ("'tile.alloc' op buffer %y at bytes [1048200, 1048712) lies outside "
                                   "tile 0's SRAM of 1048576 bytes")
    with pytest.raises(SimulationError) as problem:  # the verifier sees it first by default
        simulate(parse(dma))
    assert "dimension 0 reads [3, 5) outside [0, 4)" in _errors(problem)[0]


def test_reading_a_buffer_nothing_wrote_is_an_error() -> None:
    text = print_op(load("conv_split.mlir")).replace(
        '    tile.load %x {tensor = "x", offsets = array<i64: 0, 0, 0, 0>, port = 1} : (buffer<1x3x8x8xf32, sram>) -> ()\n', "")
    with pytest.raises(SimulationError) as problem:
        simulate(parse(text))
    assert _errors(problem)[0] == "'tile.compute' op reads %x on tile 1 before anything was written to it"


def test_mismatched_transfer_types_and_barrier_groups_are_errors() -> None:
    pipe = print_op(load("pipeline.mlir"))
    bad = pipe.replace("    %c = tile.alloc {offset = 0} : () -> buffer<2x8xf32, sram>\n"
                       "    tile.recv %c {peer = 1, tag = 0} : (buffer<2x8xf32, sram>) -> ()",
                       "    %c = tile.alloc {offset = 0} : () -> buffer<2x8xf32, sram>\n"
                       "    %d = tile.alloc {offset = 64} : () -> buffer<16xf32, sram>\n"
                       "    tile.recv %d {peer = 1, tag = 0} : (buffer<16xf32, sram>) -> ()")
    with pytest.raises(SimulationError) as problem:
        simulate(parse(bad))
    assert _errors(problem) == ["'tile.recv' op receives buffer<16xf32, sram> but tile 1 sends "
                                "buffer<2x8xf32, sram> (tag 0)", "the send is here"]
    stuck = print_op(load("deadlock.mlir"))
    groups = stuck.replace("    tile.barrier {id = 5, tiles = array<i64: 1, 2>} : () -> ()\n  }) {tile = 2",
                           "    tile.barrier {id = 5, tiles = array<i64: 2, 1>} : () -> ()\n  }) {tile = 2")
    groups = groups.replace("tile.recv %a {peer = 1, tag = 1}", "tile.send %a {peer = 1, tag = 2}", 1)
    groups = groups.replace("    tile.send %a {peer = 1, tag = 2} : (buffer<2x8xf32, sram>) -> ()\n  }) {tile = 0",
                            "    tile.recv %a {peer = 1, tag = 1} : (buffer<2x8xf32, sram>) -> ()\n  }) {tile = 0")
    with pytest.raises(SimulationError) as problem:
        simulate(parse(groups))
    assert _errors(problem)[0] == "'tile.barrier' op lists tiles [2, 1] for barrier 5, but another tile lists [1, 2]"


def test_a_kernel_failure_is_a_located_error_not_a_traceback() -> None:
    text = print_op(load("pipeline.mlir")).replace('op = "sigmoid", attrs = {}', 'op = "fill", attrs = {value = "x"}', 1)
    module = parse(text)
    with pytest.raises(SimulationError) as problem:
        simulate(module, check_ir=False)
    assert _errors(problem)[0].startswith("'tile.compute' op 'fill' failed on tile 1:")


def _narrow(text: str, offsets: tuple[int, int, int]) -> str:
    """conv_split with tile 0's buffers at one byte per element (``bytes``) at ``offsets``."""
    for old, new, size in zip(("{offset = 0}", "{offset = 768}", "{offset = 984}"), offsets, (192, 54, 128),
                              strict=True):
        text = text.replace(old, f"{{offset = {new}, bytes = {size}}}", 1)
    return text


def test_a_declared_narrow_footprint_packs_tighter_and_overlaps_are_still_caught() -> None:
    base = print_op(load("conv_split.mlir"))
    tight = parse(_narrow(base, (0, 192, 246)))
    np.testing.assert_array_equal(run_programs(tight)["y"], run_programs(load("conv_split.mlir"))["y"])
    with pytest.raises(SimulationError) as problem:
        simulate(parse(_narrow(base, (0, 100, 246))))
    assert _errors(problem)[0].startswith("'tile.compute' op reads %x (SRAM bytes [0, 192) of tile 0), which %w overwrote")
