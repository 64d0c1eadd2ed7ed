"""``crane-sim --timing / --trace``: the report, the comparison with ``crane.cost``, the trace
file, and errors without tracebacks or partial files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_timing_basic import pipeline
from test_timing_fixtures import alloc, module, program, recv, send

from crane.exec.tile_sim.timing import simulate
from crane.exec.tile_sim.timing_compare import Comparison, compare_with_cost, format_comparison
from crane.tools.sim import main

COST = ("crane.cost = {latency_cycles = 400.0, energy_pj = 100000.0, dram_bytes = 2048, "
        "noc_byte_hops = 2048}")


def costed() -> str:
    text = "builtin.module @t attributes {crane.machine = @m, " + COST + "} {\n" + pipeline() + "\n}\n"
    return text


def test_comparison_with_the_analytical_cost() -> None:
    from crane.dialects import default_context
    from crane.ir.parser import parse_ops

    mod = parse_ops(default_context(), costed(), "c.mlir")[0]
    report = simulate(mod)
    rows = {r.metric: r for r in compare_with_cost(mod, report)}
    assert set(rows) == {"latency_cycles", "energy_pj", "dram_bytes", "noc_byte_hops"}
    assert rows["latency_cycles"].simulated == pytest.approx(448)
    assert rows["latency_cycles"].difference_percent == pytest.approx((400 - 448) / 448 * 100)
    assert rows["dram_bytes"].difference_percent == pytest.approx(0.0)
    assert rows["noc_byte_hops"].difference_percent == pytest.approx(100.0)
    assert compare_with_cost(module(pipeline()), report) == []
    table = format_comparison([rows["latency_cycles"], Comparison("x", 1.0, 0.0)])
    assert "-10.7%" in table and "n/a" in table


def test_crane_sim_timing_prints_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.mlir"
    path.write_text(costed())
    trace = tmp_path / "run.json"
    assert main([str(path), "--timing", "--trace", str(trace)]) == 0
    out = capsys.readouterr().out
    assert "cycles 448 (0.448 us)" in out
    assert "DRAM 64 cycles (14% of the run), busiest tile's compute 128 (29%)" in out
    assert "latency_cycles" in out and "-10.7%" in out
    assert "0 (0,0)" in out and "1 (0,1)" in out
    events = json.loads(trace.read_text())["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "X") == 6


def test_crane_sim_timing_errors_are_located_and_write_no_trace(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from test_timing_fixtures import machine

    bad = "builtin.module @t attributes {crane.machine = @m} {\n" + "\n".join([
        machine(1, 2, [(0, 0)]),
        program(0, 2, "\n".join([alloc("a", "4x4"), recv("a", "4x4", 1, 1), send("a", "4x4", 1, 2)])),
        program(1, 2, "\n".join([alloc("b", "4x4"), recv("b", "4x4", 0, 2), send("b", "4x4", 0, 1)])),
    ]) + "\n}\n"
    path = tmp_path / "dead.mlir"
    path.write_text(bad)
    trace = tmp_path / "run.json"
    assert main([str(path), "--trace", str(trace)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:5:3: error: deadlock: tile 0 never completes 'tile.recv'" in err
    assert "Traceback" not in err
    assert not trace.exists() and list(tmp_path.iterdir()) == [path]
    assert main([str(path).replace("dead", "missing"), "--timing"]) != 0


def test_crane_sim_timing_needs_tile_programs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.mlir"
    path.write_text("builtin.module @e {\n}\n")
    assert main([str(path), "--timing"]) == 1
    assert f"{path}:1:1: error: the module holds no tile.program to simulate" in capsys.readouterr().err
