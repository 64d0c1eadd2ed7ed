"""The timing simulator on hand-written programs whose cycle counts are derived by hand.

Machine (``test_timing_fixtures``): 1 GHz, links and ports 16 B/cycle, DRAM 64 B/cycle, 1-byte
elements, 8 vector lanes. A 32x32 buffer is 1024 bytes: a load or a one-hop send of it takes
1024 / 16 = 64 cycles, a relu on it 1024 / 8 = 128 cycles.
"""

import json

import pytest
from test_timing_fixtures import (
    FIELDS,
    alloc,
    barrier,
    dram,
    load,
    machine,
    module,
    program,
    recv,
    relu,
    send,
    store,
)

from crane.exec.tile_sim.timing import TimingConfig, simulate
from crane.ir.diagnostics import DiagnosticError

S = "32x32"


def pipeline() -> str:
    """Tile 0 loads x, relus it and sends it to tile 1, which relus it and stores y."""
    tile0 = "\n".join([alloc("x", S), alloc("a", S), load("x", S, "x", 0), relu("a", "x", S),
                       send("a", S, 1, 7)])
    tile1 = "\n".join([alloc("b", S), alloc("y", S), recv("b", S, 0, 7), relu("y", "b", S),
                       store("y", S, "y", 1)])
    return "\n".join([machine(1, 2, [(0, 0), (0, 1)]), dram("x", (32, 32), "input"),
                      dram("y", (32, 32), "output"), program(0, 2, tile0), program(1, 2, tile1)])


def test_two_tile_pipeline_cycles() -> None:
    # load 0..64, relu 64..192, send/recv 192..256, relu 256..384, store 384..448
    report = simulate(module(pipeline()))
    assert report.cycles == pytest.approx(448)
    t0, t1 = report.tiles
    assert (t0.load_cycles, t0.compute_cycles, t0.noc_cycles) == pytest.approx((64, 128, 64))
    assert t0.busy_cycles == pytest.approx(256) and t0.idle_cycles == pytest.approx(192)
    assert (t1.noc_cycles, t1.compute_cycles, t1.store_cycles) == pytest.approx((64, 128, 64))
    assert t1.finish_cycles == pytest.approx(448) and t1.idle_cycles == pytest.approx(192)
    assert report.totals.dram_bytes == 2048 and report.totals.noc_byte_hops == 1024
    assert report.totals.vector_ops == 2048 and report.totals.macs == 0
    # Floors: 2048 DRAM bytes at min(64, 2 ports x 16) B/cycle; the busiest tile's relu.
    assert report.dram_floor_cycles == pytest.approx(64)
    assert report.compute_floor_cycles == pytest.approx(128)


def test_two_tile_pipeline_energy() -> None:
    f = FIELDS
    n = 1024
    load_pj = n * (f["dram_pj_per_byte"] + f["sram_write_pj_per_byte"])      # 0 hops
    relu_pj = n * (f["vector_op_pj"] + f["sram_read_pj_per_byte"] + f["sram_write_pj_per_byte"])
    send_pj = n * (f["noc_hop_pj_per_byte"] + f["sram_read_pj_per_byte"] + f["sram_write_pj_per_byte"])
    store_pj = n * (f["dram_pj_per_byte"] + f["sram_read_pj_per_byte"])
    report = simulate(module(pipeline()))
    assert report.energy_pj == pytest.approx(load_pj + 2 * relu_pj + send_pj + store_pj)


def test_ir_widths_count_f32_bytes() -> None:
    report = simulate(module(pipeline()), config=TimingConfig(ir_widths=True))
    # Every transfer moves 4x the bytes; compute is unchanged: 256 + 128 + 256 + 128 + 256.
    assert report.cycles == pytest.approx(1024)


def test_trace_is_valid_chrome_json(tmp_path) -> None:
    report = simulate(module(pipeline()))
    path = tmp_path / "trace.json"
    report.write_trace(path)
    data = json.loads(path.read_text())
    events = data["traceEvents"]
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert names == {(0, "tile 0 (0, 0)"), (1, "tile 1 (0, 1)")}
    slices = [e for e in events if e["ph"] == "X"]
    assert len(slices) == 6
    by_name = {(e["pid"], e["name"]): e for e in slices}
    assert by_name[(0, "load x")]["ts"] == pytest.approx(0.0)
    assert by_name[(0, "load x")]["dur"] == pytest.approx(0.064)          # microseconds
    assert by_name[(0, "load x")]["tid"] == 2
    assert by_name[(0, "relu")]["tid"] == 1 and by_name[(0, "relu")]["ts"] == pytest.approx(0.064)
    assert by_name[(0, "send -> 1")]["ts"] == pytest.approx(0.192)
    assert by_name[(1, "recv <- 0")]["ts"] == pytest.approx(0.192)
    assert by_name[(1, "recv <- 0")]["args"]["bytes"] == 1024
    assert by_name[(1, "store y")]["tid"] == 3
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert threads[(0, 10)] == "noc 0" and threads[(1, 1)] == "compute"
    assert all(e["dur"] >= 0 for e in slices)
    arrows = sorted((e["ph"], e["pid"], e["tid"], e["ts"]) for e in events if e["ph"] in "sf")
    assert arrows == [("f", 1, 10, pytest.approx(0.192)), ("s", 0, 10, pytest.approx(0.192))]


def test_no_trace_when_not_asked() -> None:
    report = simulate(module(pipeline()), config=TimingConfig(trace=False))
    assert report.trace_events == [] and report.cycles == pytest.approx(448)


def test_barrier_holds_the_early_tile() -> None:
    tile0 = "\n".join([alloc("a", S), alloc("b", S), relu("b", "a", S), barrier(3, "0, 1"),
                       relu("a", "b", S)])
    tile1 = "\n".join([alloc("c", S), alloc("d", S), barrier(3, "0, 1"), relu("d", "c", S)])
    report = simulate(module(machine(1, 2, [(0, 0)]), program(0, 2, tile0), program(1, 2, tile1)))
    # tile 0: relu 0..128, barrier at 128, relu 128..256; tile 1 waits until 128.
    assert report.cycles == pytest.approx(256)
    assert report.tiles[1].busy_cycles == pytest.approx(128)
    assert report.tiles[1].idle_cycles == pytest.approx(128)
    waits = [e for e in report.trace_events if e.get("cat") == "barrier"]
    assert [(e["pid"], e["ts"], e["dur"]) for e in waits] == [
        (0, pytest.approx(0.128), pytest.approx(0.0)), (1, pytest.approx(0.0), pytest.approx(0.128))]


def test_unmatched_send_is_a_located_error() -> None:
    tile0 = "\n".join([alloc("a", S), send("a", S, 1, 5)])
    tile1 = "\n".join([alloc("b", S), recv("b", S, 0, 6)])
    with pytest.raises(DiagnosticError) as info:
        simulate(module(machine(1, 2, [(0, 0)]), program(0, 2, tile0), program(1, 2, tile1)))
    diag = info.value.diagnostics[0]
    assert "no matching" in diag.message and "tag" in diag.message
    assert (diag.location.line, diag.location.col) == (5, 3)   # the send in test.mlir


def test_deadlock_names_the_stuck_tiles() -> None:
    # Each tile forwards what it receives, but each waits for the other to send first.
    tile0 = "\n".join([alloc("a", S), recv("a", S, 1, 1), send("a", S, 1, 2)])
    tile1 = "\n".join([alloc("b", S), recv("b", S, 0, 2), send("b", S, 0, 1)])
    with pytest.raises(DiagnosticError) as info:
        simulate(module(machine(1, 2, [(0, 0)]), program(0, 2, tile0), program(1, 2, tile1)))
    messages = [d.message for d in info.value.diagnostics]
    assert len(messages) == 2 and all("deadlock" in m for m in messages)
    assert "tile 0" in messages[0] and "recv <- 1" in messages[0]


def test_barrier_reached_by_too_few_tiles() -> None:
    tile0 = "\n".join([alloc("a", S), barrier(1, "0, 1")])
    tile1 = "\n".join([alloc("b", S)])
    with pytest.raises(DiagnosticError, match="reached by 1 of its 2 tiles"):
        simulate(module(machine(1, 2, [(0, 0)]), program(0, 2, tile0), program(1, 2, tile1)))
