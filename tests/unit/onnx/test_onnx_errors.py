"""Bad or unsupported ONNX input is a located diagnostic naming the node and operator, or
a one-line error about the file; never a traceback."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper
from onnx_testing import Graph, resnet18, tensor

from crane.frontend.onnx import import_onnx, import_onnx_with_weights
from crane.ir.diagnostics import DiagnosticError, render
from crane.ir.printer import print_op


def _error(source: object, **options: object) -> str:
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(source, filename="m.onnx", **options)  # type: ignore[arg-type]
    assert len(caught.value.diagnostics) == 1
    return render(caught.value.diagnostics[0])


def _model(build: Callable[[Graph, str], str], shape: list[int | str] | None = None, opset: int = 17) -> onnx.ModelProto:
    g = Graph("bad", opset=opset)
    build(g, "x")
    g.nodes[-1].output[0] = "y"
    return g.model([tensor("x", [2, 4, 6, 6] if shape is None else shape)], [tensor("y", None)])


def test_unsupported_operator_names_the_node_and_op_type() -> None:
    model = _model(lambda g, x: g.op("LeakyRelu", [g.op("Relu", [x], name="first")], name="act"))
    assert _error(model) == ("m.onnx:2:1: error: node 'act' (LeakyRelu): unsupported ONNX operator "
                             "'LeakyRelu' (see docs/onnx.md for the operators Crane imports)")


def test_operator_of_another_domain() -> None:
    g = Graph("bad")
    g.nodes.append(helper.make_node("FusedGemm", ["x"], ["y"], domain="com.microsoft", name="fused"))
    model = g.model([tensor("x", [2, 3])], [tensor("y", None)])
    model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    assert "node 'fused' (FusedGemm): operator 'FusedGemm' of domain 'com.microsoft' is not supported" in _error(model)


def test_unnamed_nodes_are_called_after_their_position() -> None:
    g = Graph("bad")
    g.nodes.append(helper.make_node("Relu", ["x"], ["r"]))
    g.nodes.append(helper.make_node("Round", ["r"], ["y"]))
    model = g.model([tensor("x", [2, 3])], [tensor("y", None)])
    assert _error(model).startswith("m.onnx:2:1: error: node 'Round_1' (Round): unsupported ONNX operator")


@pytest.mark.parametrize("data", [b"\x08\x07\x12\xff\xff\xff", b"this is not a model", b""])
def test_corrupt_or_empty_bytes(data: bytes) -> None:
    message = _error(data)
    assert message.startswith("error: m.onnx: ")
    assert "not a readable ONNX model" in message or "holds no graph" in message


def test_truncated_file(tmp_path: object) -> None:
    data = resnet18(32).SerializeToString()
    assert "not a readable ONNX model" in _error(data[: len(data) // 3])


def test_missing_file() -> None:
    assert _error("/nonexistent/model.onnx") == "error: m.onnx: cannot read the file: No such file or directory"


def test_missing_shape_information() -> None:
    g = Graph("bad")
    g.op("Relu", ["x"], name="y")
    model = g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, None)], [tensor("y", None)])
    assert _error(model) == ("error: m.onnx: graph input 'x' has no shape information; Crane needs the "
                             "rank and every dimension (export the model with input shapes)")


def test_symbolic_dimensions() -> None:
    model = _model(lambda g, x: g.op("Relu", [x]), shape=["N", 4, "H", 6])
    assert "dimension 2 of graph input 'x' is symbolic ('H'); give its size with --onnx-dim H=N" in _error(model)
    module = import_onnx(model, batch=3, dims={"H": 5})
    assert "%x: tensor<3x4x5x6xf32>" in print_op(module)
    assert "fixed batch dimension 2; it cannot be imported with batch 8" in _error(_model(
        lambda g, x: g.op("Relu", [x])), batch=8)
    assert "the batch size must be positive" in _error(model, batch=0, dims={"H": 5})


def test_unknown_machine() -> None:
    message = _error(_model(lambda g, x: g.op("Relu", [x])), machine="tpu")
    assert message == "error: m.onnx: unknown machine 'tpu' (built in: edge, cloud, mbs, gpu11)"


def test_invalid_model_is_reported_by_the_checker() -> None:
    model = _model(lambda g, x: g.op("Relu", [x]))
    model.graph.node[0].attribute.append(helper.make_attribute("bogus", 1))
    message = _error(model)
    assert message.startswith("error: m.onnx: invalid ONNX model: ") and "bogus" in message, message


def test_an_undefined_input_names_the_node_and_the_tensor() -> None:
    model = _model(lambda g, x: g.op("Relu", [x]))
    model.graph.node[0].input[0] = "nowhere"
    assert _error(model) == ("m.onnx:1:1: error: node 'relu_1' (Relu) reads 'nowhere', which no graph "
                             "input, initializer or node defines")


def test_declared_output_shape_is_checked() -> None:
    g = Graph("bad")
    g.op("Relu", ["x"], name="y")
    model = g.model([tensor("x", [2, 3])], [tensor("y", [2, 4])])
    assert _error(model) == "error: m.onnx: graph output 'y' is declared with shape [2, 4] but computes to [2, 3]"


def _bn(g: Graph, x: str, **attrs: object) -> str:
    stats = [g.init(g.fresh("s"), np.ones(4, np.float32)) for _ in range(4)]
    return g.op("BatchNormalization", [x, *stats], name="bn", **attrs)


SEMANTIC: dict[str, tuple[Callable[[Graph, str], str], int, str]] = {
    "training batchnorm": (lambda g, x: _bn(g, x, training_mode=1), 17,
                           "node 'bn' (BatchNormalization): training_mode=1 (batch statistics)"),
    "tanh gelu": (lambda g, x: g.op("Gelu", [x], name="gelu", approximate="tanh"), 20,
                  "node 'gelu' (Gelu): approximate='tanh': Crane's gelu is the exact (erf) form"),
    "division by an activation": (lambda g, x: g.op("Div", [x, g.op("Relu", [x])], name="div"), 17,
                                  "node 'div' (Div): division by an activation has no graph op"),
    "activation kernel": (lambda g, x: g.op("Conv", [x, g.op("Relu", [x])], name="conv"), 17,
                          "node 'conv' (Conv): the kernel ('relu_1') must be a constant"),
    "clip to [-1, 1]": (lambda g, x: g.op("Clip", [x, g.const(-1.0), g.const(1.0)], name="clip"), 17,
                        "node 'clip' (Clip): Clip(min=-1.0, max=1.0) has no graph op"),
    "reversed slice": (lambda g, x: g.op("Slice", [x, g.const([4], np.int64), g.const([0], np.int64),
                                                   g.const([2], np.int64), g.const([-1], np.int64)], name="cut"), 17,
                       "node 'cut' (Slice): steps=[-1]: Crane imports slices with positive steps only"),
    "layernorm over two axes": (lambda g, x: g.op("LayerNormalization", [x, g.init("s", np.ones((6, 6), np.float32))],
                                                  name="ln", axis=-2), 17,
                                "normalises from axis -2 of a rank-4 input"),
    "shape mismatch": (lambda g, x: g.op("Add", [x, g.init("c", np.ones(5, np.float32))], name="add"), 17,
                       "node 'add' (Add): add cannot broadcast [2, 4, 6, 6] with [5]"),
    "used argmax": (lambda g, x: g.op("Relu", [g.op("MaxPool", [x], name="pool", outputs=2, kernel_shape=[2, 2])
                                              .replace(":0", ":1")]), 17,
                    "node 'pool' (MaxPool): output 'pool:1' (the argmax indices) is used"),
    "pool of stride 0": (lambda g, x: g.op("MaxPool", [x], name="pool", kernel_shape=[2, 2],
                                           strides=[0, 0]), 17,
                         "node 'pool' (MaxPool): attribute 'stride' must be positive, got 0"),
}


@pytest.mark.parametrize("case", list(SEMANTIC))
def test_what_has_no_exact_graph_form_is_a_located_error(case: str) -> None:
    build, opset, expected = SEMANTIC[case]
    message = _error(_model(build, opset=opset))
    assert message.startswith("m.onnx:") and expected in message, message


def test_a_recognised_pattern_is_reported_under_its_nodes() -> None:
    def build(g: Graph, x: str) -> str:
        d = g.op("Sub", [x, g.op("ReduceMean", [x], name="mean", axes=[1])], name="sub")
        var = g.op("ReduceMean", [g.op("Mul", [d, d], name="sq")], name="var", axes=[1])
        return g.op("Div", [d, g.op("Sqrt", [g.op("Add", [var, g.const(1e-6)], name="eps")], name="root")], name="div")
    message = _error(_model(build))
    assert message.startswith("m.onnx:1:1: error: node 'mean..div' (LayerNormalization): normalises from axis 1 "
                              "of a rank-4 input; Crane's layernorm normalises the last axis only"), message


def test_weights_are_returned_for_the_interpreter() -> None:
    imported = import_onnx_with_weights(_model(lambda g, x: g.op("Mul", [x, g.init("k", np.full(6, 2, np.float32))])))
    assert list(imported.weights) == ["k"] and imported.weights["k"].dtype == np.float32


def _errors(source: object, **options: object) -> list[str]:
    with pytest.raises(DiagnosticError) as caught:
        import_onnx(source, filename="m.onnx", **options)  # type: ignore[arg-type]
    return [render(d) for d in caught.value.diagnostics]


def test_every_unsupported_node_is_reported_at_once() -> None:
    def build(g: Graph, x: str) -> str:
        y = g.op("LeakyRelu", [g.op("Relu", [x])], name="leaky1")
        z = g.op("Add", [y, g.op("Round", [x], name="round")], name="add")
        return g.op("LeakyRelu", [g.op("Relu", [z])], name="leaky2")
    assert _errors(_model(build)) == [
        "m.onnx:2:1: error: node 'leaky1' (LeakyRelu): unsupported ONNX operator 'LeakyRelu' (see docs/onnx.md "
        "for the operators Crane imports)",
        "m.onnx:3:1: error: node 'round' (Round): unsupported ONNX operator 'Round' (see docs/onnx.md for the "
        "operators Crane imports)",
        "m.onnx:6:1: error: node 'leaky2' (LeakyRelu): unsupported ONNX operator 'LeakyRelu' (see docs/onnx.md "
        "for the operators Crane imports)",
    ]


def test_every_unsupported_clip_of_a_chain_is_reported() -> None:
    def build(g: Graph, x: str) -> str:
        for k in range(3):
            x = g.op("Clip", [g.op("Relu", [x]), g.const(-1.0), g.const(1.0)], name=f"clip{k}")
        return x
    messages = _errors(_model(build))
    assert [m.split("error: ")[1].split(":")[0] for m in messages] == [f"node 'clip{k}' (Clip)" for k in range(3)]
    assert all("Clip(min=-1.0, max=1.0) has no graph op" in m for m in messages)


@pytest.mark.parametrize("size", [0, -3])
def test_zero_or_negative_input_dimensions(size: int) -> None:
    message = _error(_model(lambda g, x: g.op("Relu", [x]), shape=[2, size, 6, 6]))
    assert message == (f"error: m.onnx: dimension 1 of graph input 'x' has size {size}; Crane needs every "
                       f"dimension to be at least 1")


def test_zero_output_dimension() -> None:
    g = Graph("bad")
    g.op("Relu", ["x"], name="y")
    message = _error(g.model([tensor("x", [2, 3])], [tensor("y", [2, 0])]))
    assert message == ("error: m.onnx: dimension 1 of graph output 'y' has size 0; Crane needs every dimension "
                       "to be at least 1")


def test_a_dimension_with_neither_size_nor_name() -> None:
    model = _model(lambda g, x: g.op("Relu", [x]))
    model.graph.input[0].type.tensor_type.shape.dim[2].Clear()
    assert _error(model) == ("error: m.onnx: dimension 2 of graph input 'x' has neither a size nor a name; "
                             "export the model with static shapes")


def test_a_model_without_outputs() -> None:
    g = Graph("bad")
    g.op("Relu", ["x"], name="y")
    assert _error(g.model([tensor("x", [2, 3])], [])) == ("error: m.onnx: the graph has no outputs; Crane needs "
                                                          "at least one computed output")


def _chain(order: list[int], edges: list[tuple[str, str, str]]) -> onnx.ModelProto:
    nodes = [helper.make_node("Relu" if len(i.split(",")) == 1 else "Add", i.split(","), [o], name=n)
             for n, i, o in edges]
    graph = helper.make_graph([nodes[k] for k in order], "g", [tensor("x", [2, 3])], [tensor("y", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_cycle_names_its_nodes() -> None:
    model = _chain([0, 1, 2], [("n1", "x,b", "a"), ("n2", "a", "b"), ("n3", "a", "y")])
    assert _error(model) == "m.onnx:1:1: error: nodes 'n1' (Add) -> 'n2' (Relu) -> 'n1' (Add) form a cycle"


def test_a_node_reading_its_own_output() -> None:
    model = _chain([0, 1], [("self", "x,a", "a"), ("out", "a", "y")])
    assert _error(model) == "m.onnx:1:1: error: node 'self' (Add) reads its own output: a cycle"


def test_nodes_out_of_order_are_imported_in_a_topological_order() -> None:
    model = _chain([2, 0, 1], [("n1", "x", "a"), ("n2", "a", "b"), ("n3", "b", "y")])
    assert "graph.relu" in print_op(import_onnx(model))
    model.graph.node[0].input[0] = "nowhere"
    assert _error(model) == ("m.onnx:1:1: error: node 'n3' (Relu) reads 'nowhere', which no graph input, "
                             "initializer or node defines")


def _with_initializer(tensor_proto: onnx.TensorProto) -> onnx.ModelProto:
    g = Graph("bad")
    g.op("Add", ["x", tensor_proto.name], name="y")
    model = g.model([tensor("x", [2, 3])], [tensor("y", None)])
    model.graph.initializer.append(tensor_proto)
    return model


def _raw(data_type: int, data: bytes) -> onnx.TensorProto:
    proto = onnx.TensorProto()
    proto.name, proto.data_type, proto.raw_data = "w", data_type, data
    proto.dims.extend([2, 3])
    return proto


@pytest.mark.parametrize("proto,expected", [
    (_raw(TensorProto.FLOAT, b"\0" * 32), "error: m.onnx: initializer 'w' (FLOAT, shape [2, 3]) holds data that "
                                          "does not match its type and shape: cannot reshape array of size 8"),
    (_raw(99, b"\0" * 24), "error: m.onnx: initializer 'w' has data_type 99, which is no ONNX element type"),
    (_raw(TensorProto.FLOAT, b"\0" * 3), "error: m.onnx: invalid ONNX model: TensorProto (tensor name: w) "
                                         "raw_data size (3 bytes) is too small"),
])
def test_an_initializer_whose_data_disagrees_with_its_type(proto: onnx.TensorProto, expected: str) -> None:
    assert _error(_with_initializer(proto)).startswith(expected)


def test_a_constant_attribute_whose_data_disagrees_with_its_type() -> None:
    g = Graph("bad")
    g.nodes.append(helper.make_node("Constant", [], ["c"], name="const", value=_raw(TensorProto.FLOAT, b"\0" * 32)))
    g.op("Add", ["x", "c"], name="y")
    message = _error(g.model([tensor("x", [2, 3])], [tensor("y", None)]))
    assert message.startswith("m.onnx:1:1: error: node 'const' (Constant): the tensor of attribute 'value' "
                              "(FLOAT, shape [2, 3]) holds data that does not match its type and shape"), message


@pytest.mark.parametrize("version", [0, -1, 2**40])
def test_an_operator_set_version_out_of_range(version: int) -> None:
    model = _model(lambda g, x: g.op("Relu", [x]))
    model.opset_import[0].version = version
    assert _error(model) == (f"error: m.onnx: the default operator set's version {version} is outside "
                             f"1..2147483647")


@pytest.mark.parametrize(("shape", "message"), [
    ([2**31, 4, 6, 6], "graph input 'x' has batch dimension 2147483648; Crane handles batches of 1 to 65536"),
    ([1, 4, 6, 2**40], "graph input 'x' of shape [1, 4, 6, 1099511627776] has more than 2^40 elements"),
])
def test_input_dimensions_beyond_the_limits(shape: list[int], message: str) -> None:
    assert _error(_model(lambda g, x: g.op("Relu", [x]), shape=shape)).startswith(f"error: m.onnx: {message}")


def test_a_named_dimension_given_beyond_the_limits() -> None:
    message = _error(_model(lambda g, x: g.op("Relu", [x]), shape=[1, 4, 6, "w"]), dims={"w": 2**40})
    assert message.startswith("error: m.onnx: graph input 'x' of shape [1, 4, 6, 1099511627776] has more than")


@pytest.mark.parametrize(("old", "new", "where"), [(b"bad", b"\xecad", "graph.name"),
                                                  (b"relu0", b"rel\xff0", "graph.node.name")])
def test_a_name_that_is_not_utf8(old: bytes, new: bytes, where: str) -> None:
    model = _model(lambda g, x: g.op("Relu", [x], name="relu0"))
    data = model.SerializeToString()
    assert old in data
    assert _error(data.replace(old, new, 1)) == f"error: m.onnx: the model's {where} is not UTF-8 text"
