"""The ``codegen`` pass: programs in the module, emitted files, diagnostics, the pipeline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from crane.dialects.graph import FuncOp
from crane.dialects.segment import ScheduleOp
from crane.dialects.tile import DramOp, ProgramOp
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.codegen import Codegen
from crane.passes.context import PassContext
from crane.passes.registry import PassRegistry

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from codegen.support import body, load, prepared, run_pass  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]


def _run(module: object, pass_: Codegen) -> PassContext:
    from crane.dialects import default_context
    from crane.ir.diagnostics import DiagnosticEngine
    ctx = PassContext(default_context(), DiagnosticEngine())
    ctx.begin_pass(pass_.name)
    pass_.run(module, ctx)  # type: ignore[arg-type]
    return ctx


def test_programs_beside_the_graph_and_schedule() -> None:
    module, *_ = prepared("tiny_resnet", 2, 2, False)
    ctx = run_pass(module, Codegen())
    ops = body(module)
    assert sum(isinstance(o, FuncOp) for o in ops) == 1
    assert sum(isinstance(o, ScheduleOp) for o in ops) == 1
    programs = [o for o in ops if isinstance(o, ProgramOp)]
    assert [p.tile for p in programs] == [0, 1, 2, 3]
    names = {o.tensor_name for o in ops if isinstance(o, DramOp)}
    assert {"image", "logits", "stem.conv_bn.y.weight"} <= names
    assert verify(module) == []
    stats = ctx.statistics["codegen"]
    assert stats["programs"] == 4 and stats["instructions"] > 100
    assert stats["instructions"] == sum(len(p.instructions) for p in programs)


def test_a_second_run_replaces_the_programs() -> None:
    module, *_ = prepared("tiny_resnet", 2, 2, False)
    run_pass(module, Codegen())
    first = print_op(module)
    run_pass(module, Codegen())
    assert print_op(module) == first


@pytest.mark.parametrize("emit", ["listing", "json", "ir"])
def test_emit_writes_the_file(tmp_path: Path, emit: str) -> None:
    module, *_ = prepared("tiny_resnet", 2, 2, False)
    target = tmp_path / f"out.{emit}"
    run_pass(module, Codegen(emit=emit, output=str(target)))  # type: ignore[arg-type]
    text = target.read_text()
    if emit == "listing":
        assert text.startswith("# tile 0 (row 0, col 0): ")
        assert "compute conv2d" in text and "barrier 0 tiles 0, 1, 2, 3" in text
    elif emit == "json":
        data = json.loads(text)
        assert data["machine"] == {"rows": 2, "cols": 2}
        assert [p["tile"] for p in data["programs"]] == [0, 1, 2, 3]
        kinds = {i["op"] for p in data["programs"] for i in p["instructions"]}
        assert {"alloc", "load", "compute", "store", "barrier"} <= kinds
    else:
        assert "tile.program" in text and "graph.func @tiny_resnet" in text


def test_listing_and_json_need_a_file() -> None:
    module, *_ = prepared("tiny_resnet", 2, 2, False)
    ctx = _run(module, Codegen(emit="json"))
    assert "emit=json needs an output file" in ctx.diagnostics.render_all()
    assert not any(isinstance(o, ProgramOp) for o in body(module))


def test_unscheduled_network_is_a_located_error() -> None:
    module = load("tiny_resnet")
    ctx = _run(module, Codegen())
    text = ctx.diagnostics.render_all()
    assert "tiny_resnet.crn:" in text and "has no segment.schedule (run 'segment' and 'map'" in text


def test_pipeline_lower_to_tile() -> None:
    registry = PassRegistry.with_in_tree_passes()
    pipeline = registry.pipeline("lower-to-tile")
    assert pipeline is not None and pipeline.text == (
        "expand-attention,autodiff,segment{sram-account=true},map,codegen,alloc")
    assert registry.lookup("codegen") is Codegen


def _opt(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "crane.opt", *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)


def test_crane_opt_and_crane_sim_on_a_placed_module(tmp_path: Path) -> None:
    module, *_ = prepared("tiny_resnet", 2, 2, False)
    placed = tmp_path / "placed.mlir"
    placed.write_text(print_op(module) + "\n")
    out, listing = tmp_path / "tiles.mlir", tmp_path / "tiles.lst"
    done = _opt(str(placed), "-p", f"codegen{{emit=listing output={listing}}}", "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert listing.read_text().count("# tile ") == 4
    sim = subprocess.run([sys.executable, "-c", "from crane.tools.sim import console_main; console_main()",
                          str(out), "--check"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert sim.returncode == 0, sim.stdout + sim.stderr


def test_crane_opt_reports_a_missing_placement(tmp_path: Path) -> None:
    module, _, schedule, _ = prepared("tiny_resnet", 2, 2, False)
    del schedule.blocks[0].attributes["placement"], schedule.blocks[0].attributes["ports"]
    placed = tmp_path / "unplaced.mlir"
    placed.write_text(print_op(module) + "\n")
    out = tmp_path / "never.mlir"
    done = _opt(str(placed), "-p", "codegen", "-o", str(out))
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert f"{placed}:" in done.stderr and "has no placement (run 'map' before 'codegen')" in done.stderr
    assert not out.exists()
