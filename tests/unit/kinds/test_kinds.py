"""Every layer kind walks through every consumer (``kind_checks.CHECKS``): a fact or a
registration missing for any kind fails here, naming the kind and the consumer. Then the
ONNX importer's one-to-one imports, which the kinds declare, are run end to end."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from kind_checks import CHECKS
from kind_samples import samples
from onnx import TensorProto, helper, numpy_helper

from crane.dialects.graph import LayerOp
from crane.dialects.layers import kinds
from crane.dialects.layers.definition import OnnxOp
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.frontend.onnx import import_onnx
from crane.frontend.onnx.registry import CONVERTERS
from crane.ir.diagnostics import DiagnosticError, render

STRUCTURAL_ONNX = frozenset({"Identity", "Cast", "Shape", "Size", "Dropout"})
"""ONNX operators that make no layer: they pass a value on or fold into constants."""


def test_every_kind_has_sample_ops_and_gradients() -> None:
    found = samples()
    assert set(found.forward) == set(LAYER_KINDS)
    assert set(found.grads) == set(LAYER_KINDS)


@pytest.mark.parametrize("consumer", list(CHECKS))
@pytest.mark.parametrize("kind", list(LAYER_KINDS))
def test_every_consumer_knows_every_kind(kind: str, consumer: str) -> None:
    CHECKS[consumer](LAYER_KINDS[kind], samples())
    assert kind in LAYER_KINDS


def test_a_kind_is_defined_once() -> None:
    names = [kind.name for family in kinds.FAMILIES for kind in family.KINDS]
    assert len(names) == len(set(names)) == len(LAYER_KINDS)


def test_every_onnx_converter_makes_a_declared_kind_or_no_layer() -> None:
    """An ONNX operator the importer converts is declared by the kinds it may make."""
    declared = {t for kind in LAYER_KINDS.values() for t in kind.onnx.op_types}
    assert set(CONVERTERS) - declared == STRUCTURAL_ONNX - declared
    assert not STRUCTURAL_ONNX & {t for kind in LAYER_KINDS.values() for t in kind.onnx.via}


def _clip_bounds(op: OnnxOp, value: float | None) -> list[tuple[str, float]]:
    """The finite bounds a ``Clip`` reads as inputs: as declared, or ``value``, ``value + 1``."""
    if op.clip is None:
        return []
    low, high = op.clip if value is None else (value, value + 1.0)
    return [(name, bound) for name, bound in (("lo", low), ("hi", high)) if bound != float("inf")]


def _one_node_model(op: OnnxOp, value: float | None = None) -> onnx.ModelProto:
    """x -> one node of ``op`` -> y; attributes (or Clip bounds) as declared, or ``value``."""
    bounds = _clip_bounds(op, value)
    inputs = ["x", *(name for name, _ in bounds)]
    inits = [numpy_helper.from_array(np.array(bound, np.float32), name) for name, bound in bounds]
    attrs = {a.name: a.value if value is None else value for a in op.attrs}
    node = helper.make_node(op.op_type, inputs, ["y"], name="act", **attrs)
    graph = helper.make_graph(
        [node], "one", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


ONE_TO_ONE = [(kind.name, op) for kind in LAYER_KINDS.values() for op in kind.onnx.ops]


@pytest.mark.parametrize(("kind", "op"), ONE_TO_ONE, ids=[f"{k}-{o.op_type}" for k, o in ONE_TO_ONE])
def test_a_declared_onnx_operator_imports_as_its_kind(kind: str, op: OnnxOp) -> None:
    module = import_onnx(_one_node_model(op), filename="m.onnx")
    made = [o.kind.name for o in module.walk() if isinstance(o, LayerOp)]
    assert made == [kind]


@pytest.mark.parametrize(("kind", "op"), [(k, o) for k, o in ONE_TO_ONE if o.attrs or o.clip],
                         ids=[f"{k}-{o.op_type}" for k, o in ONE_TO_ONE if o.attrs or o.clip])
def test_other_attributes_are_a_located_error(kind: str, op: OnnxOp) -> None:
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(_one_node_model(op, value=-0.75), filename="m.onnx")
    message = render(caught.value.diagnostics[0])
    assert message.startswith("m.onnx:1:1: error: node 'act'") and "has no graph op" in message
    assert f"as {kind}" in message
