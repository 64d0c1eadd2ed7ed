"""Whole networks built in ONNX: a ResNet-18 and a small transformer encoder import, agree
with onnxruntime, schedule (``segment``) and lower (``lower-to-tile``); their tile programs
run in the functional simulator and match the interpreter given the ONNX weights."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from onnx_testing import Graph, TransformerConfig, compare, resnet18, tensor, transformer

from crane.cost.report import cost_report_of
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp, LayerOp, WeightOp
from crane.dialects.segment import ScheduleOp
from crane.dialects.tile import ProgramOp
from crane.exec.tile_sim.check import check
from crane.frontend.onnx import OnnxImport, import_onnx_with_weights
from crane.ir.diagnostics import DiagnosticEngine
from crane.ir.location import FusedLoc, NameLoc
from crane.ir.printer import print_op
from crane.ir.verifier import verify
from crane.passes.context import PassContext
from crane.passes.manager import PassManager
from crane.passes.pipeline import build_pipeline
from crane.passes.registry import PassRegistry
from crane.tools.inputs import parse_ir


def _lower(module: ModuleOp, pipeline: str) -> ModuleOp:
    """Run ``pipeline`` on a copy of the printed module (as ``crane-opt`` would read it)."""
    context = default_context()
    copy = parse_ir(print_op(module), "imported.mlir", context)
    engine = DiagnosticEngine()
    built = build_pipeline(pipeline, PassRegistry.with_in_tree_passes(), context)
    assert PassManager(built).run(copy, PassContext(context, engine)), engine.render_all()
    assert not engine.error_count and not verify(copy)
    return copy


def _ops(imported: OnnxImport) -> Counter[str]:
    return Counter(op.name.removeprefix("graph.") for op in imported.func.body.ops)


@pytest.fixture(scope="module")
def resnet() -> tuple[object, OnnxImport]:
    model = resnet18(32)
    return model, import_onnx_with_weights(model, batch=2, machine="edge", filename="resnet18.onnx")


def test_resnet18_imports_with_batchnorm_folded_and_matches_onnxruntime(resnet: tuple[object, OnnxImport]) -> None:
    model, imported = resnet
    ops = _ops(imported)
    assert ops["conv2d"] == 20 and ops["linear"] == 1 and ops["add"] == 8 and ops["relu"] == 17
    assert ops["max_pool2d"] == 1 and ops["global_avg_pool"] == 1 and ops["flatten"] == 1
    assert "batchnorm" not in ops and "mul" not in ops
    assert imported.func.attributes["batch"].value == 2  # type: ignore[attr-defined]
    # 20 folded kernels and biases, fc weight transposed, fc bias as given
    names = set(imported.weights)
    assert {"conv1.weight.bn", "bn1/BatchNormalization.bias", "fc.weight.T", "fc.bias"} <= names
    assert len(names) == 42
    x = np.random.default_rng(1).standard_normal((2, 3, 32, 32)).astype(np.float32)
    errors = compare(imported, model, {"input": x})  # type: ignore[arg-type]
    assert errors["logits"] < 1e-5


def test_resnet18_locations_name_the_onnx_nodes(resnet: tuple[object, OnnxImport]) -> None:
    _, imported = resnet
    conv = next(op for op in imported.func.body.ops if isinstance(op, LayerOp) and op.kind.name == "conv2d")
    assert isinstance(conv.location, FusedLoc)  # the Conv and the BatchNormalization folded into it
    first, second = conv.location.locations
    assert isinstance(first, NameLoc) and first.name == "conv1/Conv (Conv)"
    assert str(first.file_line_col()) == "resnet18.onnx:1:1"
    assert isinstance(second, NameLoc) and second.name == "bn1/BatchNormalization (BatchNormalization)"
    fc = [op for op in imported.func.body.ops if isinstance(op, LayerOp)][-1]
    assert fc.kind.name == "linear" and fc.location.text() == '"fc (Gemm)"("resnet18.onnx":69:1)'


def test_resnet18_schedules_and_lowers_to_tile_programs(resnet: tuple[object, OnnxImport]) -> None:
    _, imported = resnet
    scheduled = _lower(imported.module, "segment")
    schedules = [op for op in scheduled.walk() if isinstance(op, ScheduleOp)]
    report = cost_report_of(scheduled)
    assert len(schedules) == 1 and report is not None and report["latency_cycles"] > 0
    lowered = _lower(scheduled, "map,codegen,alloc")
    programs = [op for op in lowered.walk() if isinstance(op, ProgramOp)]
    assert len(programs) == 16  # every tile of the 4x4 edge mesh
    assert sum(len(list(p.regions[0].blocks[0].ops)) for p in programs) > 1000
    x = np.random.default_rng(5).standard_normal((2, 3, 32, 32)).astype(np.float32)
    checked = check(lowered, rtol=1e-4, inputs={"input": x}, weights=imported.weights)
    assert checked.ok and checked.max_rel < 1e-5, checked.lines()


CONFIGS = {
    "gelu-erf": (TransformerConfig(), {}),
    "opset20-gelu-decomposed-norm": (TransformerConfig(activation="gelu", decomposed_norm=True), {}),
    "relu-dynamic-shapes": (TransformerConfig(activation="relu", dynamic=True), {"S": 16}),
}


@pytest.mark.parametrize("case", list(CONFIGS))
def test_transformer_imports_and_matches_onnxruntime(case: str) -> None:
    config, dims = CONFIGS[case]
    model = transformer(config)
    imported = import_onnx_with_weights(model, batch=3, dims=dims, machine="edge")
    ops = _ops(imported)
    # 2 layers x (q, k, v, out, ffn up, ffn down) + pooler + head; positions folded away
    assert ops["linear"] == 14 and ops["matmul"] == 4 and ops["softmax"] == 2 and ops["layernorm"] == 5
    assert ops["embedding"] == 1 and ops["gelu" if "gelu" in case else "relu"] == 2
    assert "pos_embed/Gather" in imported.weights and imported.weights["pos_embed/Gather"].shape == (16, 32)
    tokens = np.random.default_rng(2).integers(0, 100, (3, 16)).astype(np.int64)
    errors = compare(imported, model, {"tokens": tokens})
    assert set(errors) == {"hidden", "logits"} and max(errors.values()) < 1e-5


def test_transformer_lowers_and_runs_in_the_tile_simulator() -> None:
    model = transformer(TransformerConfig())
    imported = import_onnx_with_weights(model, batch=2, machine="edge")
    lowered = _lower(imported.module, "segment,map,codegen,alloc")
    assert len([op for op in lowered.walk() if isinstance(op, ProgramOp)]) == 16
    tokens = np.random.default_rng(4).integers(0, 100, (2, 16)).astype(np.int64)
    report = check(lowered, rtol=1e-4, inputs={"tokens": tokens}, weights=imported.weights)
    assert report.ok, report.lines()
    assert {c.name for c in report.comparisons} == {"hidden", "logits"}
    assert report.max_rel < 1e-5 and report.counters.noc_bytes > 0
    func = next(op for op in lowered.walk() if isinstance(op, FuncOp))
    assert [op.weight_name for op in func.body.ops if isinstance(op, WeightOp)][0] == "embed.weight"


def test_constants_read_by_add_mul_concat_and_matmul_lower_and_simulate() -> None:
    g = Graph("constants", seed=9)
    c = g.op("Conv", ["x", g.param("w", (6, 3, 3, 3))], name="conv", pads=[1, 1, 1, 1])
    shifted = g.op("Sub", [g.op("Mul", [c, g.param("scale", (6, 1, 1), 1.0)], name="mul"),
                           g.param("shift", (1, 6, 1, 1), 1.0)], name="sub")
    joined = g.op("Concat", [shifted, g.param("extra", (2, 2, 5, 5), 1.0)], name="concat", axis=1)
    rows = g.op("Reshape", [g.op("Div", [joined, g.const(4.0)], name="div"), g.const([2, 8, 25], np.int64)],
                name="reshape")
    g.op("MatMul", [rows, g.param("m", (2, 25, 3), 0.2)], name="y")
    model = g.model([tensor("x", [2, 3, 5, 5])], [tensor("y", [2, 8, 3])])
    imported = import_onnx_with_weights(model, machine="edge")
    ops = _ops(imported)
    assert ops["mul"] == 2 and ops["add"] == 1 and ops["concat"] == 1 and ops["matmul"] == 1
    assert {"scale", "shift.neg", "extra", "m"} <= set(imported.weights)
    x = np.random.default_rng(6).standard_normal((2, 3, 5, 5)).astype(np.float32)
    assert compare(imported, model, {"x": x})["y"] < 1e-5
    lowered = _lower(imported.module, "segment,map,codegen,alloc")
    report = check(lowered, rtol=1e-4, inputs={"x": x}, weights=imported.weights)
    assert report.ok and report.max_rel < 1e-5, report.lines()
