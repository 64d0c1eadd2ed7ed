"""The operators and patterns PyTorch's two exporters write beyond the basic set: each a
small model that imports, runs in the reference interpreter and agrees with onnxruntime
(rtol 1e-4), with the ops it is expected to become."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx_testing import Graph, compare, tensor

from crane.frontend.onnx import import_onnx_with_weights
from crane.ir.diagnostics import DiagnosticError, render

Build = Callable[[Graph, str], str]
IMAGE = (2, 4, 9, 9)
FLT_MAX = float(np.finfo(np.float32).max)


def _model(build: Build, shape: tuple[int, ...], opset: int, elem: int = TensorProto.FLOAT) -> onnx.ModelProto:
    g = Graph("case", seed=3, opset=opset)
    build(g, "x")
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", shape, elem)], [tensor("y", None)])


def _ops(imported: object) -> Counter[str]:
    return Counter(op.name.removeprefix("graph.") for op in imported.func.body.ops)  # type: ignore[attr-defined]


def _run(build: Build, shape: tuple[int, ...] = IMAGE, opset: int = 18) -> Counter[str]:
    model = _model(build, shape, opset)
    imported = import_onnx_with_weights(model)
    x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
    assert compare(imported, model, {"x": x})["y"] < 1e-5
    return _ops(imported)


def _error(model: onnx.ModelProto) -> str:
    with pytest.raises(DiagnosticError) as caught:
        import_onnx_with_weights(model, filename="m.onnx")
    return "\n".join(render(d) for d in caught.value.diagnostics)


def _ints(g: Graph, values: list[int]) -> str:
    return g.const(values, np.int64)


# ----- ReduceMean

MEANS: dict[str, tuple[Build, Mapping[str, int]]] = {
    "hw-keepdims": (lambda g, x: g.op("ReduceMean", [x, _ints(g, [-1, -2])], keepdims=1),
                    {"global_avg_pool": 1}),
    "hw-flat": (lambda g, x: g.op("ReduceMean", [x, _ints(g, [2, 3])], keepdims=0),
                {"global_avg_pool": 1, "reshape": 1}),
    "last-axis": (lambda g, x: g.op("ReduceMean", [x, _ints(g, [-1])], keepdims=1), {"linear": 1}),
    "trailing-axes-flat": (lambda g, x: g.op("ReduceMean", [x, _ints(g, [1, 2, 3])], keepdims=0),
                           {"reshape": 2, "linear": 1}),
}


@pytest.mark.parametrize("case", list(MEANS))
def test_reduce_mean(case: str) -> None:
    build, expected = MEANS[case]
    ops = _run(build)
    assert all(ops[k] == n for k, n in expected.items()), ops


def test_reduce_mean_before_opset_18_takes_axes_as_an_attribute() -> None:
    assert _run(lambda g, x: g.op("ReduceMean", [x], axes=[2, 3], keepdims=1), opset=17)["global_avg_pool"] == 1


def test_reduce_mean_over_a_middle_axis_is_a_located_error() -> None:
    message = _error(_model(lambda g, x: g.op("ReduceMean", [x, _ints(g, [1])], name="mean"), IMAGE, 18))
    assert "node 'mean' (ReduceMean): ReduceMean over axes [1] of a rank-4 tensor has no graph op" in message


# ----- elementwise and movement

SHAPES: dict[str, tuple[Build, tuple[int, ...], Mapping[str, int]]] = {
    "pow-2": (lambda g, x: g.op("Pow", [x, g.const(2.0)]), IMAGE, {"mul": 1}),
    "pow-3": (lambda g, x: g.op("Pow", [x, g.const(3.0)]), IMAGE, {"mul": 2}),
    "expand": (lambda g, x: g.op("Expand", [x, _ints(g, [3, 1, 5])]), (1, 4, 1), {"add": 1}),
    "expand-same": (lambda g, x: g.op("Relu", [g.op("Expand", [x, _ints(g, [1, 4])])]), (2, 4), {"add": 0}),
    "pad-two-axes": (lambda g, x: g.op("Pad", [x, _ints(g, [0, 0, 1, 2, 0, 0, 3, 0]), g.const(1.5)]), IMAGE,
                     {"concat": 2}),
    "pad-axes-and-crop": (lambda g, x: g.op("Pad", [x, _ints(g, [2, -1]), g.const(0.0), _ints(g, [3])]),
                          IMAGE, {"concat": 1, "slice": 1}),
    "slice-step-2-from-0": (lambda g, x: g.op("Slice", [x, _ints(g, [0]), _ints(g, [9]), _ints(g, [2]),
                                                        _ints(g, [2])]), IMAGE, {"concat": 1, "slice": 1}),
    "slice-step-2-from-1": (lambda g, x: g.op("Slice", [x, _ints(g, [1, 1]), _ints(g, [9, 9]), _ints(g, [2, 3]),
                                                        _ints(g, [2, 2])]), IMAGE, {}),
    "slice-step-3-partial": (lambda g, x: g.op("Slice", [x, _ints(g, [2]), _ints(g, [-1]), _ints(g, [-1]),
                                                         _ints(g, [3])]), IMAGE, {}),
    "gather-nd-all": (lambda g, x: g.op("GatherND", [x, g.init("i", np.stack(np.meshgrid(
        [0], np.arange(6), indexing="ij"), -1).reshape(1, 1, 6, 2))]), (1, 6), {"reshape": 1}),
    "gather-elements-rows": (lambda g, x: g.op("GatherElements", [x, g.init("i", np.tile(
        np.arange(2, 5)[:, None], (1, 6)))], axis=0), (7, 6), {"slice": 1}),
    "gather-block": (lambda g, x: g.op("Gather", [x, g.init("i", np.array([[3, 4], [5, 6]]))], axis=2),
                     IMAGE, {"slice": 1, "reshape": 1}),
}


@pytest.mark.parametrize("case", list(SHAPES))
def test_shapes_and_arithmetic(case: str) -> None:
    build, shape, expected = SHAPES[case]
    ops = _run(build, shape)
    assert all(ops[k] == n for k, n in expected.items()), ops


def test_a_gather_that_is_no_block_is_a_located_error() -> None:
    model = _model(lambda g, x: g.op("Gather", [x, g.init("i", np.array([0, 2]))], axis=1, name="pick"), IMAGE, 18)
    assert "node 'pick' (Gather): gathers elements [0, 1, 2, 3" in _error(model)


def test_constant_gather_elements_folds_with_smaller_indices() -> None:
    """BERT's token type ids: GatherElements of a (1, 512) buffer by (1, S) positions,
    which onnx.reference fails to evaluate."""
    def build(g: Graph, x: str) -> str:
        buffer = g.init("buffer", np.arange(512, dtype=np.int64).reshape(1, 512) % 2)
        ids = g.op("GatherElements", [buffer, g.init("positions", np.arange(9, dtype=np.int64).reshape(1, 9))],
                   axis=1)
        table = g.param("types", (2, 9), 1.0)
        return g.op("Add", [x, g.op("Gather", [table, g.op("Reshape", [ids, _ints(g, [9])])])])
    ops = _run(build, (9, 9))
    assert ops["add"] == 1 and ops["weight"] == 1


@pytest.mark.parametrize("pads,ceil", [([1, 1, 1, 1], 0), ([0, 1, 2, 1], 1), ([1, 1, 1, 1], 1)])
def test_average_pool_counting_the_padding(pads: list[int], ceil: int) -> None:
    ops = _run(lambda g, x: g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=pads,
                                 count_include_pad=1, ceil_mode=ceil))
    assert ops["avg_pool2d"] == 1 and ops["mul"] == 1


def test_average_pool_whose_windows_never_reach_the_padding_needs_no_correction() -> None:
    ops = _run(lambda g, x: g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[3, 3], pads=[0, 0, 1, 1],
                                 count_include_pad=1))
    assert ops["avg_pool2d"] == 1 and ops["mul"] == 0


# ----- attention masks and the NaN guard

def _masked_attention(bias: float, causal: bool) -> onnx.ModelProto:
    """Scores (1, 2, 5, 5) plus a mask bias from an int64 (1, 5) attention mask, softmax,
    then the exporters' NaN guard."""
    g = Graph("mask", seed=1, opset=18)
    keep = g.op("Cast", ["mask"], to=TensorProto.BOOL, name="cast")
    keys = g.op("Unsqueeze", [keep, _ints(g, [1, 2])], name="keys")
    if causal:
        keys = g.op("And", [g.init("causal", np.tril(np.ones((1, 1, 5, 5), bool))), keys], name="and")
    wide = g.op("Expand", [keys, _ints(g, [1, 1, 5, 5])], name="expand")
    bias_value = g.op("Where", [wide, g.const(0.0), g.const(bias)], name="bias")
    probs = g.op("Softmax", [g.op("Add", ["scores", bias_value], name="add")], axis=-1, name="softmax")
    g.op("Where", [g.op("IsNaN", [probs], name="isnan"), g.const(0.0), probs], name="guard")
    g.nodes[-1].output[0] = "y"
    inputs = [tensor("scores", [1, 2, 5, 5]), tensor("mask", [1, 5], TensorProto.INT64)]
    return g.model(inputs, [tensor("y", None)])


@pytest.mark.parametrize("bias", [-FLT_MAX, float("-inf")])
@pytest.mark.parametrize("causal", [False, True])
def test_masked_softmax_with_its_nan_guard(bias: float, causal: bool) -> None:
    model = _masked_attention(bias, causal)
    imported = import_onnx_with_weights(model)
    scores = np.random.default_rng(2).standard_normal((1, 2, 5, 5)).astype(np.float32)
    for mask in ([1, 1, 1, 0, 0], [1, 0, 1, 0, 1], [0, 0, 0, 0, 0]):
        compare(imported, model, {"scores": scores, "mask": np.array([mask], np.int64)})
    ops = _ops(imported)
    assert ops["embedding"] == 1 and ops["softmax"] == 1
    # -FLT_MAX keeps the softmax input finite: the guard is a no-op and removed; after -inf
    # the guard zeroes the fully masked rows, as 1 - relu(1 - count) of the mask
    assert ops["relu"] == (1 if bias == float("-inf") else 0)


def test_a_guard_after_a_softmax_of_raw_minus_infinity_is_kept_and_rejected() -> None:
    g = Graph("raw", opset=18)
    shift = g.init("shift", np.array([0.0, float("-inf"), 0.0], np.float32))
    probs = g.op("Softmax", [g.op("Add", ["x", shift])], axis=-1, name="softmax")
    g.op("Where", [g.op("IsNaN", [probs], name="isnan"), g.const(0.0), probs], name="guard")
    g.nodes[-1].output[0] = "y"
    message = _error(g.model([tensor("x", [2, 3])], [tensor("y", None)]))
    assert "the softmax input may be -inf or NaN (constant 'shift'), so this NaN guard is not a no-op" in message


def test_boolean_algebra_and_where_with_activations() -> None:
    g = Graph("logic", opset=18)
    a = g.op("Cast", ["m"], to=TensorProto.BOOL)
    b = g.op("Not", [a])
    either = g.op("Or", [b, g.init("c", np.array([True, False, False, True]))])
    picked = g.op("Where", [either, "x", g.const(-2.0)])
    g.op("Where", [a, picked, g.op("Relu", ["x"])])
    g.nodes[-1].output[0] = "y"
    model = g.model([tensor("x", [3, 4]), tensor("m", [3, 4], TensorProto.INT64)], [tensor("y", None)])
    imported = import_onnx_with_weights(model)
    rng = np.random.default_rng(0)
    compare(imported, model, {"x": rng.standard_normal((3, 4)).astype(np.float32),
                              "m": rng.integers(0, 2, (3, 4)).astype(np.int64)})


def test_casting_a_float_activation_to_bool_is_a_located_error() -> None:
    model = _model(lambda g, x: g.op("Cast", [x], to=TensorProto.BOOL, name="cast"), (2, 3), 18)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.BOOL
    assert "node 'cast' (Cast): casting a float activation to bool (x != 0) has no graph op" in _error(model)


def test_inexact_where_of_constants_is_a_located_error() -> None:
    g = Graph("where", opset=18)
    g.op("Where", [g.op("Cast", ["m"], to=TensorProto.BOOL), g.const(1e-30), g.const(1e30)], name="sel")
    g.nodes[-1].output[0] = "y"
    model = g.model([tensor("m", [4], TensorProto.INT64)], [tensor("y", None)])
    assert "node 'sel' (Where): Where(c, x, y) of constants imports as y + c * (x - y), which is not exact" \
        in _error(model)


def test_dynamo_scope_is_named_in_messages() -> None:
    model = _model(lambda g, x: g.op("LeakyRelu", [x], name="node_leaky"), (2, 3), 18)
    scope = model.graph.node[0].metadata_props.add()
    scope.key, scope.value = "pkg.torch.onnx.name_scopes", "['', 'features', 'features.3', 'leaky_relu']"
    assert "error: node 'node_leaky' (LeakyRelu) in 'features.3': unsupported ONNX operator" in _error(model)
