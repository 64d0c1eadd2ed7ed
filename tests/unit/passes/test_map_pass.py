"""The ``map`` pass: placements of scheduled example networks, checks of hand-edited IR."""

from __future__ import annotations

import re
import time
from functools import cache
from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.dialects.hw import MachineOp
from crane.dialects.segment import BlockOp, ScheduleOp
from crane.ir.attributes import ArrayAttr, DenseIntsAttr, IntAttr
from crane.ir.core import Operation
from crane.ir.diagnostics import DiagnosticEngine, Severity
from crane.ir.location import FileLineColLoc
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.map import Map
from crane.passes.options import OptionValueError
from crane.passes.segment import Segment
from crane.tools.inputs import parse_ir, translate

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
INVALID = ROOT / "tests" / "filecheck" / "map" / "invalid_mapping.mlir"


def _run(module: Operation, *passes: Segment | Map) -> PassContext:
    ctx = PassContext(default_context(), DiagnosticEngine())
    for p in passes:
        ctx.begin_pass(p.name)
        p.run(module, ctx)
    return ctx


def _errors(ctx: PassContext) -> list[str]:
    return [d.message for d in ctx.diagnostics.diagnostics if d.severity == Severity.ERROR]


@cache
def _scheduled_text(net: str, machine: str) -> str:
    """The example network scheduled on ``machine`` (edge, or a file of examples/machines)."""
    text = (EXAMPLES / f"{net}.crn").read_text()
    if machine != "edge":
        text = f'import "machines/{machine}.crn";\n' + text.replace("machine edge;",
                                                                   f"machine {machine};")
    module = translate("crn", text, str(EXAMPLES / f"{net}.{machine}.crn"), default_context())
    ctx = _run(module, Segment(time_limit=0.01))
    assert not _errors(ctx)
    return print_op(module)


def _blocks(module: Operation) -> list[BlockOp]:
    return [b for op in module.walk() if isinstance(op, ScheduleOp) for b in op.blocks]


def _machine(module: Operation) -> MachineOp:
    return next(op for op in module.walk() if isinstance(op, MachineOp))


@pytest.mark.parametrize("net", ["tiny_resnet", "tiny_transformer"])
@pytest.mark.parametrize("machine", ["mesh2x2", "edge"])
def test_tiny_networks_are_placed_legally(net: str, machine: str) -> None:
    module = parse_ir(_scheduled_text(net, machine), "x.mlir", default_context())
    ctx = _run(module, Map())
    assert not _errors(ctx)
    assert verify(module) == []
    mesh = _machine(module).machine
    blocks = _blocks(module)
    assert blocks and ctx.statistics["map"]["blocks-placed"] == len(blocks)
    for block in blocks:
        found = block.mapping()
        assert found is not None
        placement, ports = found
        tiles = [t for row in block.tile_split() for t in row]
        assert [len(p) for p in placement] == tiles
        assert all(0 <= t < mesh.tiles for p in placement for t in p)
        assert all((port == -1) == (not p) and port < len(mesh.dram_ports)
                   for p, port in zip(placement, ports, strict=True))
    # A second run checks the placements it finds instead of replacing them.
    before = print_op(module)
    again = _run(module, Map())
    assert not _errors(again) and print_op(module) == before
    assert again.statistics["map"]["blocks-checked"] == len(blocks)


def test_z3_search_on_2x2_is_legal_and_no_worse() -> None:
    text = _scheduled_text("tiny_resnet", "mesh2x2")
    heuristic = parse_ir(text, "x.mlir", default_context())
    searched = parse_ir(text, "x.mlir", default_context())
    plain = _run(heuristic, Map())
    z3ctx = _run(searched, Map(search="z3", timeout=0.5))
    assert not _errors(plain) and not _errors(z3ctx)
    assert z3ctx.statistics["map"]["hop-bytes"] <= plain.statistics["map"]["hop-bytes"]


@pytest.fixture(scope="module")
def resnet50_edge() -> str:
    path = EXAMPLES / "resnet50.crn"
    module = translate("crn", path.read_text(), str(path), default_context())
    ctx = _run(module, Segment(batch=8, time_limit=0.01))
    assert not _errors(ctx)
    return print_op(module)


def test_resnet50_batch8_on_edge_is_placed_in_seconds(resnet50_edge: str) -> None:
    module = parse_ir(resnet50_edge, "r50.mlir", default_context())
    began = time.perf_counter()
    ctx = _run(module, Map())
    seconds = time.perf_counter() - began
    assert not _errors(ctx)
    assert ctx.statistics["map"]["blocks-placed"] == len(_blocks(module)) > 20
    assert ctx.statistics["map"]["violations"] == 0
    assert seconds < 10.0, f"map took {seconds:.1f} s"


def _valid_chunk() -> str:
    """The legal hand-written mapping of the golden negative test (its first chunk)."""
    return INVALID.read_text().split("// -----")[0]


def _map_text(text: str, verified: bool = True) -> list[str]:
    """Errors of ``map`` on IR text (``verified=False`` skips the verifier, as a library
    caller might, to reach rules the segment verifier already guarantees)."""
    context = default_context()
    module = parse_ir(text, "hand.mlir", context)
    problems = verify(module)
    if verified and problems:
        return [d.message for d in problems]
    return _errors(_run(module, Map()))


@pytest.mark.parametrize(("old", "new", "constraint"), [
    ("array<i64: 3, 2>, array<i64>", "array<i64: 1, 2>, array<i64>", "Map.tile_exclusive"),
    ("sram_bytes = 1048576", "sram_bytes = 32", "Map.sram_capacity"),
    ("array<i64: 3, 2>, array<i64>", "array<i64: 3, 6>, array<i64>", "Map.route_valid"),
    ("ports = array<i64: 0, -1, 0, 1,", "ports = array<i64: 0, -1, 0, 4,", "Map.port_reachable"),
])
def test_each_hand_edited_mutation_names_its_constraint(old: str, new: str,
                                                        constraint: str) -> None:
    text = _valid_chunk()
    assert _map_text(text) == []
    assert old in text
    errors = _map_text(text.replace(old, new))
    assert errors and any(constraint in e for e in errors), errors
    assert all(e.startswith("illegal mapping: violates Map.") for e in errors)


def test_dependency_order_mutation_past_the_verifier() -> None:
    # Reversed dependency: 'c' feeds 'a'. The segment verifier rejects the tables
    # (ScT.dependency); map's own rule says the same of the placement.
    text = _valid_chunk().replace("deps = array<i64: 0, 1>", "deps = array<i64: 1, 0>")
    assert any("ScT.dependency(Eq.5)" in e for e in _map_text(text))
    errors = _map_text(text, verified=False)
    assert any("Map.dependency_order" in e and "'a'" in e and "'c'" in e for e in errors), errors


def test_diagnostics_are_located_at_the_block() -> None:
    text = _valid_chunk().replace("array<i64: 3, 2>, array<i64>", "array<i64: 1, 2>, array<i64>")
    module = parse_ir(text, "hand.mlir", default_context())
    ctx = _run(module, Map())
    (diag,) = ctx.diagnostics.diagnostics
    line = next(k for k, t in enumerate(text.splitlines(), 1)
                if t.lstrip().startswith("segment.block {"))
    assert isinstance(diag.location, FileLineColLoc) and diag.location.line == line


def test_impossible_capacity_is_reported_at_the_function() -> None:
    module = parse_ir(_scheduled_text("tiny_resnet", "mesh2x2"), "x.mlir", default_context())
    _machine(module).attributes["sram_bytes"] = IntAttr(16)
    ctx = _run(module, Map())
    errors = _errors(ctx)
    assert errors and all(e.startswith("no legal mapping: violates Map.sram_capacity")
                          for e in errors)
    assert all(isinstance(d.location, FileLineColLoc) for d in ctx.diagnostics.diagnostics)
    # Blocks that cannot be placed are left without a placement; the others get one.
    unplaced = [b for b in _blocks(module) if b.mapping() is None]
    assert unplaced and len(unplaced) + ctx.statistics["map"].get("blocks-placed", 0) \
        == len(_blocks(module))


def test_bad_timeout_and_empty_module() -> None:
    module = parse_ir(_valid_chunk(), "hand.mlir", default_context())
    with pytest.raises(OptionValueError, match="option 'timeout' of pass 'map' expects a number "
                       "above 0 and at most 3600, got '0'"):
        Map(timeout=0)
    assert _errors(_run(module, Map(timeout=0.5))) == []
    empty = parse_ops(default_context(), "builtin.module {\n}\n", "e.mlir")[0]
    assert _errors(_run(empty, Map())) == []


def test_placement_attributes_follow_interface_one() -> None:
    module = parse_ir(_valid_chunk().replace(re.search(r", placement = .*?\], ports = array<i64: [-0-9, ]*>",
                                                       _valid_chunk()).group(0), ""),
                      "hand.mlir", default_context())
    assert not _errors(_run(module, Map()))
    (block,) = _blocks(module)
    placement, ports = block.attributes["placement"], block.attributes["ports"]
    assert isinstance(placement, ArrayAttr) and isinstance(ports, DenseIntsAttr)
    assert len(placement) == len(ports) == 6
    assert [len(e) for e in placement] == [4, 0, 2, 2, 0, 4]
    assert str(placement).startswith("[array<i64: ") and "array<i64>" in str(placement)
