"""Lowering `.crn` networks to the graph and hw dialects: verification, text round trip,
locations, the machine, per-op accounting, and the verifiers catching broken IR."""

from __future__ import annotations

from pathlib import Path

import pytest

from crane.dialects import default_context
from crane.dialects.graph import LAYER_OPS, FuncOp, LayerOp, WeightOp
from crane.dialects.hw import machine_of
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.frontend.accounting import network_stats
from crane.frontend.crn import load_crn, parse_crn
from crane.frontend.lower import lower_network
from crane.frontend.translate import crn_to_module
from crane.ir.attributes import IntAttr
from crane.ir.diagnostics import DiagnosticError
from crane.ir.location import FileLineColLoc
from crane.ir.parser import parse_ops
from crane.ir.printer import print_op
from crane.ir.types import TensorType
from crane.ir.verifier import verify

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SMALL = ("network n {\n  machine mbs;\n  batch 2;\n  input x: f32[batch, 3, 8, 8];\n"
         "  y = conv2d(x, out=4, kernel=3, padding=same);\n  z = relu(y);\n}\n")


def _layer_ops(module: object) -> list[LayerOp]:
    return [op for op in module.walk() if isinstance(op, LayerOp)]  # type: ignore[attr-defined]


def test_graph_dialect_mirrors_the_layer_table() -> None:
    assert set(LAYER_OPS) == set(LAYER_KINDS)
    for name, cls in LAYER_OPS.items():
        assert cls.spec is not None and cls.spec.name == f"graph.{name}"
        assert [a.name for a in cls.spec.attributes] == [p.name for p in LAYER_KINDS[name].params]


@pytest.mark.parametrize("name", ["resnet50", "googlenet", "mobilenet_v2", "tiny_transformer", "tiny_resnet"])
def test_examples_lower_verify_and_round_trip(name: str) -> None:
    module = lower_network(load_crn(EXAMPLES / f"{name}.crn"))
    assert verify(module) == []
    text = print_op(module)
    (reparsed,) = parse_ops(default_context(), text, "round.mlir")
    assert print_op(reparsed) == text
    generic = print_op(module, generic=True)
    (from_generic,) = parse_ops(default_context(), generic, "generic.mlir")
    assert print_op(from_generic) == text


def test_every_op_carries_its_crn_location() -> None:
    module = crn_to_module(SMALL, "small.crn", default_context())
    conv = next(op for op in module.walk() if op.name == "graph.conv2d")
    weight = next(op for op in module.walk() if isinstance(op, WeightOp))
    assert conv.location == FileLineColLoc("small.crn", 5, 7)
    assert weight.location == conv.location
    assert all(isinstance(op.location, FileLineColLoc) for op in module.walk())


def test_module_names_its_machine() -> None:
    from crane.hardware import builtin_machines

    module = crn_to_module(SMALL, "small.crn", default_context())
    assert machine_of(module) == builtin_machines()["mbs"]


def test_weights_are_explicit_values_and_results_are_named() -> None:
    module = crn_to_module(SMALL, "small.crn", default_context())
    conv = next(op for op in _layer_ops(module) if op.name == "graph.conv2d")
    assert [v.type for v in conv.inputs] == [TensorType((2, 3, 8, 8), conv.inputs[0].type.element)]  # type: ignore[attr-defined]
    assert [w.owner_op.weight_name for w in conv.weights] == ["y.weight", "y.bias"]  # type: ignore[union-attr]
    assert conv.results[0].name_hint == "y"
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    assert func.attributes["batch"] == IntAttr(2)


@pytest.mark.parametrize("name", ["resnet50", "bert_base"])
def test_op_accounting_matches_the_network_accounting(name: str) -> None:
    network = load_crn(EXAMPLES / f"{name}.crn")
    stats = network_stats(network)
    ops = _layer_ops(lower_network(network))
    assert sum(op.accounting()["macs"] for op in ops) == stats.macs
    assert sum(op.accounting()["param_bytes"] for op in ops) == stats.param_bytes


def test_crn_errors_become_located_diagnostics() -> None:
    with pytest.raises(DiagnosticError) as info:
        crn_to_module("network n {\n  input x: f32[1];\n  y = relu(z);\n  y = relu(x);\n}\n", "bad.crn", default_context())
    first, second = info.value.diagnostics
    assert first.location == FileLineColLoc("bad.crn", 3, 12) and "undefined name 'z'" in first.message
    assert "duplicate name 'y'" in second.message
    assert second.notes[0].location == FileLineColLoc("bad.crn", 3, 3)


def _bad(text: str) -> str:
    ops = parse_ops(default_context(), text, "bad.mlir")
    errors = verify(ops[0])
    assert errors, "expected a verification error"
    return errors[0].message


def test_verifier_reruns_the_shape_rule() -> None:
    message = _bad(
        "graph.func @f(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32> {\n"
        "  %y = graph.conv2d %x, %w {out = 4, kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, "
        "padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1, depthwise = false, "
        "bias = false} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x7x7xf32>\n"
        "  graph.return %y : tensor<1x4x7x7xf32>\n}\n")
    assert "result shape [1, 4, 7, 7] does not match the inferred [1, 4, 8, 8]" in message


def test_verifier_checks_weight_shapes_and_attributes() -> None:
    weight = _bad(
        "graph.func @f(%x: tensor<2x8xf32>, %w: tensor<9x4xf32>) -> tensor<2x4xf32> {\n"
        "  %y = graph.linear %x, %w {out = 4, bias = false} : (tensor<2x8xf32>, tensor<9x4xf32>) -> tensor<2x4xf32>\n"
        "  graph.return %y : tensor<2x4xf32>\n}\n")
    assert "weight 'weight' has shape [9, 4], expected [8, 4]" in weight
    missing = _bad(
        "graph.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {\n"
        "  %y = graph.softmax %x : (tensor<2x8xf32>) -> tensor<2x8xf32>\n"
        "  graph.return %y : tensor<2x8xf32>\n}\n")
    assert "requires attribute 'axis'" in missing


def test_verifier_checks_integer_inputs() -> None:
    message = _bad(
        "graph.func @f(%x: tensor<2x8xf32>, %t: tensor<10x4xf32>) -> tensor<2x8x4xf32> {\n"
        "  %y = graph.embedding %x, %t {vocab = 10, dim = 4, dtype = \"f32\"} : (tensor<2x8xf32>, tensor<10x4xf32>) -> tensor<2x8x4xf32>\n"
        "  graph.return %y : tensor<2x8x4xf32>\n}\n")
    assert "must have an integer element type" in message


def test_hw_machine_verifier_rejects_ports_outside_the_mesh() -> None:
    module = crn_to_module(SMALL, "small.crn", default_context())
    text = print_op(module).replace("dram_ports = array<i64: 0, 0, 0, 1>", "dram_ports = array<i64: 0, 5>")
    (reparsed,) = parse_ops(default_context(), text, "m.mlir")
    assert any("outside the 1 x 2 mesh" in e.message for e in verify(reparsed))


def test_lowering_keeps_the_network_outputs_in_order() -> None:
    network = parse_crn("network n {\n  input x: f32[1, 4];\n  a = relu(x);\n  b = tanh(x);\n  output b, a;\n}\n", "o.crn")
    func = next(op for op in lower_network(network).walk() if isinstance(op, FuncOp))
    ret = list(func.body.ops)[-1]
    assert [v.name_hint for v in ret.operands] == ["b", "a"]
