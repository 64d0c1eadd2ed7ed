"""One small ONNX model per operator (and per variant that imports differently): the
import runs in the reference interpreter and agrees with onnxruntime to rtol 1e-4."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import numpy as np
import pytest
from onnx import TensorProto
from onnx_testing import Graph, compare, gelu_erf, layer_norm, tensor

from crane.frontend.onnx import import_onnx_with_weights

Build = Callable[[Graph, str], str]
IMAGE = (2, 4, 9, 9)


def _run(build: Build, shape: tuple[int, ...] = IMAGE, opset: int = 17, ids: int = 0) -> Counter[str]:
    """Import the one-input model ``build`` makes, compare it with onnxruntime, and return
    the op counts of the imported function."""
    g = Graph("case", seed=3, opset=opset)
    build(g, "x")
    g.nodes[-1].output[0] = "y"
    elem = TensorProto.INT64 if ids else TensorProto.FLOAT
    model = g.model([tensor("x", shape, elem)], [tensor("y", None)])
    rng = np.random.default_rng(7)
    feed = rng.integers(0, ids, shape).astype(np.int64) if ids else rng.standard_normal(shape).astype(np.float32)
    imported = import_onnx_with_weights(model)
    errors = compare(imported, model, {"x": feed})
    assert errors["y"] < 1e-4
    return Counter(op.name.removeprefix("graph.") for op in imported.func.body.ops)


def _conv(g: Graph, x: str, cout: int = 6, k: int = 3, groups: int = 1, bias: bool = True, **attrs: object) -> str:
    cin = IMAGE[1]
    inputs = [x, g.param(g.fresh("w"), (cout, cin // groups, k, k))]
    if bias:
        inputs.append(g.param(g.fresh("b"), (cout,), 0.1))
    return g.op("Conv", inputs, group=groups, **attrs)


def _bn(g: Graph, x: str, c: int) -> str:
    stats = [g.param(g.fresh("gamma"), (c,), 0.1), g.param(g.fresh("beta"), (c,), 0.1),
             g.param(g.fresh("mean"), (c,), 0.1), g.init(g.fresh("var"), (0.5 + g.rng.random(c)).astype(np.float32))]
    return g.op("BatchNormalization", [x, *stats], epsilon=1e-3)


CONVS: dict[str, Build] = {
    "pads": lambda g, x: _conv(g, x, pads=[1, 1, 1, 1]),
    "asymmetric-pads-stride": lambda g, x: _conv(g, x, pads=[0, 1, 2, 1], strides=[2, 2]),
    "same-upper": lambda g, x: _conv(g, x, k=4, strides=[2, 2], auto_pad="SAME_UPPER"),
    "same-lower": lambda g, x: _conv(g, x, k=4, strides=[2, 2], auto_pad="SAME_LOWER"),
    "valid-dilated": lambda g, x: _conv(g, x, auto_pad="VALID", dilations=[2, 2]),
    "grouped-no-bias": lambda g, x: _conv(g, x, groups=2, bias=False, pads=[1, 1, 1, 1]),
    "depthwise": lambda g, x: _conv(g, x, cout=4, groups=4, pads=[1, 1, 1, 1]),
}


@pytest.mark.parametrize("case", list(CONVS))
def test_conv(case: str) -> None:
    ops = _run(CONVS[case])
    assert ops["conv2d"] == 1


def test_batchnorm_after_conv_is_folded_into_it() -> None:
    ops = _run(lambda g, x: g.op("Relu", [_bn(g, _conv(g, x, bias=False, pads=[1, 1, 1, 1]), 6)]))
    assert ops["conv2d"] == 1 and "batchnorm" not in ops and "mul" not in ops


def test_batchnorm_elsewhere_is_an_exact_scale_and_shift() -> None:
    ops = _run(lambda g, x: _bn(g, g.op("Relu", [x]), 4))
    assert ops["mul"] == 1 and ops["add"] == 1 and "batchnorm" not in ops


def test_batchnorm_of_a_conv_read_twice_is_not_folded() -> None:
    def build(g: Graph, x: str) -> str:
        c = _conv(g, x, pads=[1, 1, 1, 1])
        return g.op("Add", [_bn(g, c, 6), c])
    ops = _run(build)
    assert ops["conv2d"] == 1 and ops["mul"] == 1 and ops["add"] == 2


def test_batchnorm_of_a_conv_read_under_another_name_is_not_folded() -> None:
    def build(g: Graph, x: str) -> str:
        c = _conv(g, x, pads=[1, 1, 1, 1])
        return g.op("Add", [_bn(g, g.op("Identity", [c]), 6), c])
    ops = _run(build)
    assert ops["conv2d"] == 1 and ops["mul"] == 1 and ops["add"] == 2


def test_batchnorm_of_2d_features() -> None:
    assert _run(lambda g, x: _bn(g, x, 5), shape=(3, 5))["mul"] == 1


GEMMS: dict[str, Build] = {
    "transB-bias": lambda g, x: g.op("Gemm", [x, g.param("w", (3, 5)), g.param("c", (3,))], transB=1),
    "alpha-beta-row-c": lambda g, x: g.op("Gemm", [x, g.param("w", (5, 3)), g.param("c", (1, 3))], alpha=0.5, beta=2.0),
    "full-c": lambda g, x: g.op("Gemm", [x, g.param("w", (5, 3)), g.param("c", (4, 3))]),
    "no-c": lambda g, x: g.op("Gemm", [x, g.param("w", (5, 3))]),
    "transA": lambda g, x: g.op("Gemm", [g.op("Transpose", [x]), g.param("w", (5, 3))], transA=1),
}


@pytest.mark.parametrize("case", list(GEMMS))
def test_gemm(case: str) -> None:
    assert _run(GEMMS[case], shape=(4, 5))["linear"] == 1


def test_matmul_by_a_matrix_then_bias_is_one_linear() -> None:
    ops = _run(lambda g, x: g.op("Add", [g.op("MatMul", [x, g.param("w", (6, 3))]), g.param("b", (3,))]),
               shape=(2, 4, 6))
    assert ops["linear"] == 1 and "add" not in ops


def test_matmul_variants() -> None:
    batched = _run(lambda g, x: g.op("MatMul", [x, g.param("w", (2, 6, 3))]), shape=(2, 4, 6))
    assert batched["matmul"] == 1
    square = _run(lambda g, x: g.op("MatMul", [x, g.op("Transpose", [x], perm=[0, 2, 1])]), shape=(2, 4, 6))
    assert square["matmul"] == 1 and square["transpose"] == 1


POOLS: dict[str, Build] = {
    "max-pads": lambda g, x: g.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "max-ceil": lambda g, x: g.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    "avg-pads-exclude": lambda g, x: g.op("AveragePool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
    "avg-ceil": lambda g, x: g.op("AveragePool", [x], kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1),
    "avg-include-no-pads": lambda g, x: g.op("AveragePool", [x], kernel_shape=[2, 2], count_include_pad=1),
    "global-avg": lambda g, x: g.op("GlobalAveragePool", [x]),
    "global-max": lambda g, x: g.op("GlobalMaxPool", [x]),
}


@pytest.mark.parametrize("case", list(POOLS))
def test_pool(case: str) -> None:
    ops = _run(POOLS[case])
    assert ops["max_pool2d"] + ops["avg_pool2d"] + ops["global_avg_pool"] == 1


UNARY: dict[str, tuple[Build, str, int]] = {
    "relu": (lambda g, x: g.op("Relu", [x]), "relu", 17),
    "sigmoid": (lambda g, x: g.op("Sigmoid", [x]), "sigmoid", 17),
    "tanh": (lambda g, x: g.op("Tanh", [x]), "tanh", 17),
    "gelu-op": (lambda g, x: g.op("Gelu", [x]), "gelu", 20),
    "gelu-erf": (lambda g, x: gelu_erf(g, x, "gelu"), "gelu", 17),
    "gelu-erf-hf": (lambda g, x: g.op("Mul", [g.op("Mul", [x, g.const(0.5)]), g.op("Add", [g.op(
        "Erf", [g.op("Mul", [x, g.const(1 / np.sqrt(2.0))])]), g.const(1.0)])]), "gelu", 17),
    "clip-relu": (lambda g, x: g.op("Clip", [x, g.const(0.0)]), "relu", 17),
    "softmax-last": (lambda g, x: g.op("Softmax", [x], axis=-1), "softmax", 17),
    "softmax-channels": (lambda g, x: g.op("Softmax", [x], axis=1), "softmax", 17),
}


@pytest.mark.parametrize("case", list(UNARY))
def test_unary(case: str) -> None:
    build, kind, opset = UNARY[case]
    ops = _run(build, opset=opset)
    assert ops[kind] == 1 and sum(ops.values()) - ops["weight"] == 2


def test_layernorm_op_and_decomposed_forms() -> None:
    assert _run(lambda g, x: layer_norm(g, x, 9, "ln", False))["layernorm"] == 1
    ops = _run(lambda g, x: layer_norm(g, x, 9, "ln", True))
    assert ops["layernorm"] == 1 and sum(ops.values()) - ops["weight"] == 2
    no_bias = _run(lambda g, x: g.op("LayerNormalization", [x, g.param("s", (9,), 1.0)], axis=-1, epsilon=1e-3))
    assert no_bias["layernorm"] == 1


def test_decomposed_layernorm_with_mul_square_and_no_affine() -> None:
    def build(g: Graph, x: str) -> str:
        d = g.op("Sub", [x, g.op("ReduceMean", [x], axes=[-1])])
        var = g.op("ReduceMean", [g.op("Mul", [d, d])], axes=[-1])
        return g.op("Div", [d, g.op("Sqrt", [g.op("Add", [var, g.const(1e-6)])])])
    assert _run(build, shape=(3, 7, 9))["layernorm"] == 1


def test_recognised_pattern_on_constants_folds() -> None:
    ops = _run(lambda g, x: g.op("Add", [x, gelu_erf(g, g.param("c", (9,), 1.0), "gelu")]))
    assert ops["add"] == 1 and "gelu" not in ops and ops["weight"] == 1


ARITHMETIC: dict[str, tuple[Build, str]] = {
    "add-channel-bias": (lambda g, x: g.op("Add", [g.param("c", (4, 1, 1), 1.0), x]), "add"),
    "mul-scalar": (lambda g, x: g.op("Mul", [x, g.const(3.0)]), "mul"),
    "sub-const": (lambda g, x: g.op("Sub", [x, g.param("c", (9,), 1.0)]), "add"),
    "const-sub-x": (lambda g, x: g.op("Sub", [g.param("c", (9,), 1.0), x]), "add"),
    "x-sub-x": (lambda g, x: g.op("Sub", [x, g.op("Relu", [x])]), "add"),
    "div-const": (lambda g, x: g.op("Div", [x, g.const(7.0)]), "mul"),
    "silu": (lambda g, x: g.op("Mul", [x, g.op("Sigmoid", [x])]), "silu"),
    "silu-swapped": (lambda g, x: g.op("Mul", [g.op("Sigmoid", [x]), x]), "silu"),
    "mul-x-sigmoid-of-another": (lambda g, x: g.op("Mul", [x, g.op("Sigmoid", [g.op("Relu", [x])])]), "mul"),
}


@pytest.mark.parametrize("case", list(ARITHMETIC))
def test_arithmetic(case: str) -> None:
    build, kind = ARITHMETIC[case]
    assert _run(build)[kind] == 1


SHAPES: dict[str, tuple[Build, str]] = {
    "reshape-zero-minus-one": (lambda g, x: g.op("Reshape", [x, g.const([0, -1, 9], np.int64)]), "reshape"),
    "flatten-axis-1": (lambda g, x: g.op("Flatten", [x], axis=1), "flatten"),
    "flatten-axis-2": (lambda g, x: g.op("Flatten", [x], axis=2), "reshape"),
    "transpose": (lambda g, x: g.op("Transpose", [x], perm=[0, 2, 3, 1]), "transpose"),
    "squeeze-unsqueeze": (lambda g, x: g.op("Squeeze", [g.op("Unsqueeze", [x, g.const([1], np.int64)]),
                                                         g.const([1], np.int64)]), "reshape"),
    "concat-with-constant": (lambda g, x: g.op("Concat", [x, g.param("c", (2, 1, 9, 9), 1.0), x], axis=1), "concat"),
    "slice-two-axes": (lambda g, x: g.op("Slice", [x, g.const([1, -5], np.int64), g.const([3, 100], np.int64),
                                                   g.const([1, 3], np.int64)]), "slice"),
    "split": (lambda g, x: g.op("Concat", _split(g, x)[::-1], axis=3), "slice"),
    "gather-index": (lambda g, x: g.op("Gather", [x, g.const(2, np.int64)], axis=2), "slice"),
    "gather-range": (lambda g, x: g.op("Gather", [x, g.const([1, 2, 3], np.int64)], axis=-1), "slice"),
    "shape-plumbing": (lambda g, x: g.op("Reshape", [x, g.op("Concat", [
        g.op("Slice", [g.op("Shape", [x]), g.const([0], np.int64), g.const([1], np.int64)]),
        g.const([-1], np.int64)], axis=0)]), "reshape"),
    "identity-dropout-cast": (lambda g, x: g.op("Cast", [g.op("Dropout", [g.op("Identity", [x])])],
                                                to=TensorProto.FLOAT), "relu"),
}


def _split(g: Graph, x: str) -> list[str]:
    first = g.op("Split", [x, g.const([4, 5], np.int64)], outputs=2, axis=3)
    return [first, first.replace(":0", ":1")]


@pytest.mark.parametrize("case", list(SHAPES))
def test_shape_ops(case: str) -> None:
    build, kind = SHAPES[case]
    ops = _run(lambda g, x: g.op("Relu", [build(g, x)]))
    assert ops[kind] >= 1


def test_embedding_gather() -> None:
    ops = _run(lambda g, x: g.op("Relu", [g.op("Gather", [g.param("table", (11, 6), 1.0), x])]), shape=(2, 5), ids=11)
    assert ops["embedding"] == 1
