"""The ``--quick`` slice of ``bench/lowering.py``: tiny networks, a real CNN's training step
(ResNet-50 at 64x64 on ``gpu11``) and a real transformer at reduced size (GPT-2's layers),
lowered as a user lowers them and checked by the functional simulator; segment's planned
peak SRAM per tile is the allocated one."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "lowering.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_lowering", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_lowering"] = module
    spec.loader.exec_module(module)
    return module


def test_quick_lowering_slice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    bench = _bench()
    rows = tmp_path / "cells.json"
    monkeypatch.setattr(sys, "argv", ["lowering.py", "--quick", "--jobs", "2", "--timeout", "600",
                                      "--json", str(rows)])
    status = bench.main()
    table = capsys.readouterr().out
    cells = json.loads(rows.read_text())
    assert {(c["network"], c["machine"], c["mode"]) for c in cells} == set(bench.QUICK), table
    assert status == 0, table
    for cell in cells:
        assert cell["outcome"] == "ok", table
        assert cell["check_rel"] is not None and cell["check_rel"] <= bench.RTOL, table
        assert cell["planned_sram"] == cell["allocated_sram"] > 0, table


def test_summary_tells_float32_judgements_and_refusals_apart() -> None:
    """The matrix's summary does not claim rel <= RTOL for a cell that passed only by the
    float32 judgement, and a segment refusal is told from a later stage's failure."""
    bench = _bench()
    within = bench.Cell("a", "edge", "training", "ok", check_rel=1e-6)
    beyond = bench.Cell("b", "mbs", "training", "ok", check_rel=2e-4)
    line = bench.summary([within, beyond])[-1]
    assert line.startswith("check: 1 of 2 checked cells within rel 0.0001")
    assert "1 more pass by the float32 judgement" in line and "b/mbs/training" in line
    assert bench.summary([within])[-1] == "check: 1 of 1 checked cells within rel 0.0001 (f32)"
    assert bench.segment_refused("x.crn:1:2: error: the schedule does not fit 'gpu11' SRAM: tile 0")
    assert not bench.segment_refused("x.crn:1:2: error: window (0, 3) does not fit an input extent of 2")
    assert bench._ended(-9) == "killed by signal 9 (out of memory?)" and bench._ended(1) == "exit status 1"
