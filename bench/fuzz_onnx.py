"""ONNX seeds and mutations of the fuzz campaign (``bench/fuzz.py``).

Two small models built with ``onnx.helper`` (a CNN and an MLP with a symbolic batch) and
mutations of one field each: a dimension, an initializer's ``data_type`` or shape, a node's
operator or attribute, the graph's outputs; or of the serialized bytes (cut or flipped).
"""

from __future__ import annotations

import random

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HOSTILE_DIMS = (0, -1, 1, 2**31, 2**40, 7)


def seeds() -> dict[str, bytes]:
    """The models mutations start from, serialized, by file name."""
    return {"cnn.onnx": _cnn().SerializeToString(), "mlp.onnx": _mlp().SerializeToString()}


def _weights(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> TensorProto:
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def _cnn() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], transB=1),
    ]
    inits = [_weights("w", (4, 3, 3, 3), rng), _weights("fc", (5, 64), rng), _weights("fcb", (5,), rng)]
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _mlp() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"]),
        helper.make_node("Add", ["h", "b1"], ["hb"]),
        helper.make_node("Relu", ["hb"], ["r"]),
        helper.make_node("MatMul", ["r", "w2"], ["y"]),
    ]
    inits = [_weights("w1", (16, 32), rng), _weights("b1", (32,), rng), _weights("w2", (32, 4), rng)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def mutate_model(data: bytes, rng: random.Random) -> bytes:
    """``data`` (a serialized model) with one field or some bytes changed."""
    if rng.random() < 0.2:
        return _mutate_bytes(data, rng)
    model = onnx.ModelProto()
    model.ParseFromString(data)
    rng.choice((_dim, _dim, _data_type, _init_shape, _op_type, _attribute, _outputs))(model, rng)
    return model.SerializeToString()


def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.5:
        return data[: rng.randrange(len(data))]
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    return bytes(flipped)


def _dim(model: onnx.ModelProto, rng: random.Random) -> None:
    values = [*model.graph.input, *model.graph.output]
    dims = [d for v in values for d in v.type.tensor_type.shape.dim]
    target = rng.choice(dims)
    target.dim_value = rng.choice(HOSTILE_DIMS) if rng.random() < 0.8 else 0
    if rng.random() < 0.1:
        target.dim_param = ""


def _data_type(model: onnx.ModelProto, rng: random.Random) -> None:
    init = rng.choice(model.graph.initializer)
    init.data_type = rng.choice((TensorProto.INT64, TensorProto.DOUBLE, TensorProto.INT8, TensorProto.FLOAT16, 0, 99))


def _init_shape(model: onnx.ModelProto, rng: random.Random) -> None:
    init = rng.choice(model.graph.initializer)
    if init.dims:
        init.dims[rng.randrange(len(init.dims))] = rng.choice(HOSTILE_DIMS)


def _op_type(model: onnx.ModelProto, rng: random.Random) -> None:
    node = rng.choice(model.graph.node)
    node.op_type = rng.choice(("Selu", "Foo", "Conv", "Gemm", "", "Relu"))


def _attribute(model: onnx.ModelProto, rng: random.Random) -> None:
    attrs = [a for node in model.graph.node for a in node.attribute if a.ints]
    if not attrs:
        return
    attr = rng.choice(attrs)
    attr.ints[rng.randrange(len(attr.ints))] = rng.choice(HOSTILE_DIMS)


def _outputs(model: onnx.ModelProto, rng: random.Random) -> None:
    del model.graph.output[:]
