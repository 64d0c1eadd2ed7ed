"""ONNX models built with ``onnx.helper`` for the importer tests, and how to compare them.

``resnet18`` is torchvision's ResNet-18 (conv/BN/ReLU stem, max pool, four stages of two
basic blocks with 1x1 projection shortcuts, global average pool, flatten, fully
connected) at any input size; ``transformer`` a small encoder (token and position
embeddings, post-LN layers of decomposed multi-head attention and a GELU or ReLU
feed-forward network, residual adds) with a pooled classifier head. Weights are seeded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from crane.exec.interpreter import run_function
from crane.frontend.onnx import OnnxImport

FLOAT = TensorProto.FLOAT


@dataclass
class Graph:
    """A graph under construction: nodes, initializers and fresh names."""

    name: str
    seed: int = 0
    opset: int = 17
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    count: int = 0

    def __post_init__(self) -> None:
        self.rng = np.random.default_rng(self.seed)

    def fresh(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def param(self, name: str, shape: Sequence[int], scale: float | None = None) -> str:
        fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        std = scale if scale is not None else float(np.sqrt(2.0 / max(1, fan_in)))
        return self.init(name, (self.rng.standard_normal(tuple(shape)) * std).astype(np.float32))

    def op(self, op_type: str, inputs: Sequence[str], name: str | None = None, outputs: int = 1,
           **attrs: Any) -> str:
        node_name = name or self.fresh(op_type.lower())
        outs = [node_name if outputs == 1 else f"{node_name}:{k}" for k in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=node_name, **attrs))
        return outs[0]

    def const(self, value: Any, dtype: Any = np.float32) -> str:
        name = self.fresh("const")
        tensor = numpy_helper.from_array(np.asarray(value, dtype=dtype), name)
        self.nodes.append(helper.make_node("Constant", [], [name], name=name, value=tensor))
        return name

    def model(self, inputs: Sequence[onnx.ValueInfoProto], outputs: Sequence[onnx.ValueInfoProto]) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, self.name, list(inputs), list(outputs), self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)])
        model.ir_version = 8
        return model


def tensor(name: str, shape: Sequence[int | str | None] | None, elem: int = FLOAT) -> onnx.ValueInfoProto:
    """A graph input or output (``shape=None``: no shape declared)."""
    return helper.make_tensor_value_info(name, elem, None if shape is None else list(shape))


# ----- ResNet-18


def conv_bn(g: Graph, x: str, cin: int, cout: int, kernel: int, stride: int, name: str) -> str:
    weight = g.param(f"{name}.weight", (cout, cin, kernel, kernel))
    pad = kernel // 2
    y = g.op("Conv", [x, weight], name=f"{name}/Conv", kernel_shape=[kernel, kernel], strides=[stride, stride],
             pads=[pad] * 4)
    bn = name.replace("conv", "bn")
    stats = [g.init(f"{bn}.weight", (1 + 0.1 * g.rng.standard_normal(cout)).astype(np.float32)),
             g.init(f"{bn}.bias", (0.1 * g.rng.standard_normal(cout)).astype(np.float32)),
             g.init(f"{bn}.running_mean", (0.1 * g.rng.standard_normal(cout)).astype(np.float32)),
             g.init(f"{bn}.running_var", (0.5 + g.rng.random(cout)).astype(np.float32))]
    return g.op("BatchNormalization", [y, *stats], name=f"{bn}/BatchNormalization", epsilon=1e-5)


def basic_block(g: Graph, x: str, cin: int, cout: int, stride: int, name: str) -> str:
    a = g.op("Relu", [conv_bn(g, x, cin, cout, 3, stride, f"{name}.conv1")], name=f"{name}/Relu")
    b = conv_bn(g, a, cout, cout, 3, 1, f"{name}.conv2")
    shortcut = x if stride == 1 and cin == cout else conv_bn(g, x, cin, cout, 1, stride, f"{name}.downsample.conv")
    return g.op("Relu", [g.op("Add", [b, shortcut], name=f"{name}/Add")], name=f"{name}/Relu_1")


def resnet18(size: int = 32, classes: int = 1000, batch: int | str = "N", seed: int = 0) -> onnx.ModelProto:
    """torchvision's ResNet-18 on ``size`` x ``size`` images (BN unfolded, as exported in
    training-mode graphs or by ``onnx.helper``)."""
    g = Graph("resnet18", seed)
    x = g.op("Relu", [conv_bn(g, "input", 3, 64, 7, 2, "conv1")], name="relu")
    x = g.op("MaxPool", [x], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    cin = 64
    for stage, cout in enumerate((64, 128, 256, 512), start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            x = basic_block(g, x, cin, cout, stride, f"layer{stage}.{block}")
            cin = cout
    x = g.op("Flatten", [g.op("GlobalAveragePool", [x], name="avgpool")], name="flatten", axis=1)
    fc = g.param("fc.weight", (classes, 512), 0.05)
    bias = g.param("fc.bias", (classes,), 0.05)
    g.op("Gemm", [x, fc, bias], name="fc", transB=1)
    g.nodes[-1].output[0] = "logits"
    return g.model([tensor("input", [batch, 3, size, size])], [tensor("logits", [batch, classes])])


# ----- a small transformer encoder


def layer_norm(g: Graph, x: str, d: int, name: str, decomposed: bool) -> str:
    scale = g.init(f"{name}.weight", (1 + 0.1 * g.rng.standard_normal(d)).astype(np.float32))
    bias = g.init(f"{name}.bias", (0.1 * g.rng.standard_normal(d)).astype(np.float32))
    if not decomposed:
        return g.op("LayerNormalization", [x, scale, bias], name=f"{name}/LayerNormalization", axis=-1,
                    epsilon=1e-5)
    # torch.onnx below opset 17
    mean = reduce_mean(g, x, f"{name}/ReduceMean")
    d_ = g.op("Sub", [x, mean], name=f"{name}/Sub")
    var = reduce_mean(g, g.op("Pow", [d_, g.const(2.0)], name=f"{name}/Pow"), f"{name}/ReduceMean_1")
    root = g.op("Sqrt", [g.op("Add", [var, g.const(1e-5)], name=f"{name}/Add")], name=f"{name}/Sqrt")
    normed = g.op("Div", [d_, root], name=f"{name}/Div")
    return g.op("Add", [g.op("Mul", [normed, scale], name=f"{name}/Mul"), bias], name=f"{name}/Add_1")


def reduce_mean(g: Graph, x: str, name: str) -> str:
    """Mean over the last axis, keeping it (axes an attribute before opset 18, an input after)."""
    if g.opset >= 18:
        return g.op("ReduceMean", [x, g.const([-1], np.int64)], name=name)
    return g.op("ReduceMean", [x], name=name, axes=[-1])


def linear(g: Graph, x: str, d_in: int, d_out: int, name: str) -> str:
    """``MatMul`` by a (in, out) initializer then ``Add`` of the bias, as torch exports a
    ``nn.Linear`` on 3-d inputs."""
    weight = g.param(f"{name}.weight", (d_in, d_out), float(np.sqrt(1.0 / d_in)))
    bias = g.param(f"{name}.bias", (d_out,), 0.05)
    return g.op("Add", [g.op("MatMul", [x, weight], name=f"{name}/MatMul"), bias], name=f"{name}/Add")


def gelu_erf(g: Graph, x: str, name: str) -> str:
    """``x * (1 + erf(x / sqrt 2)) * 0.5``, torch's export of ``nn.GELU`` before opset 20."""
    erf = g.op("Erf", [g.op("Div", [x, g.const(np.sqrt(2.0))], name=f"{name}/Div")], name=f"{name}/Erf")
    plus = g.op("Add", [erf, g.const(1.0)], name=f"{name}/Add")
    return g.op("Mul", [g.op("Mul", [x, plus], name=f"{name}/Mul"), g.const(0.5)], name=f"{name}/Mul_1")


def split_heads(g: Graph, x: str, heads: int, dh: int, perm: Sequence[int], name: str, dynamic: bool) -> str:
    if dynamic:  # torch with dynamic axes: the batch and sequence sizes come from Shape
        shape = g.op("Shape", [x], name=f"{name}/Shape")
        lead = g.op("Slice", [shape, g.const([0], np.int64), g.const([2], np.int64)], name=f"{name}/Slice")
        target = g.op("Concat", [lead, g.const([heads, dh], np.int64)], name=f"{name}/Concat", axis=0)
    else:
        target = g.const([0, 0, heads, dh], np.int64)
    return g.op("Transpose", [g.op("Reshape", [x, target], name=f"{name}/Reshape")], name=f"{name}/Transpose",
                perm=list(perm))


def attention(g: Graph, x: str, d: int, heads: int, name: str, dynamic: bool) -> str:
    dh = d // heads
    q = split_heads(g, linear(g, x, d, d, f"{name}.q_proj"), heads, dh, (0, 2, 1, 3), f"{name}.q", dynamic)
    k = split_heads(g, linear(g, x, d, d, f"{name}.k_proj"), heads, dh, (0, 2, 3, 1), f"{name}.k", dynamic)
    v = split_heads(g, linear(g, x, d, d, f"{name}.v_proj"), heads, dh, (0, 2, 1, 3), f"{name}.v", dynamic)
    scores = g.op("Div", [g.op("MatMul", [q, k], name=f"{name}/MatMul"), g.const(np.sqrt(dh))], name=f"{name}/Div")
    probs = g.op("Softmax", [scores], name=f"{name}/Softmax", axis=-1)
    ctx = g.op("Transpose", [g.op("MatMul", [probs, v], name=f"{name}/MatMul_1")], name=f"{name}/Transpose",
               perm=[0, 2, 1, 3])
    merged = g.op("Reshape", [ctx, g.const([0, 0, d], np.int64)], name=f"{name}/Reshape")
    return linear(g, merged, d, d, f"{name}.out_proj")


def encoder_layer(g: Graph, x: str, d: int, heads: int, ffn: int, name: str, *, activation: str,
                  decomposed_norm: bool, dynamic: bool) -> str:
    h = layer_norm(g, g.op("Add", [x, attention(g, x, d, heads, f"{name}.self_attn", dynamic)], name=f"{name}/Add"),
                   d, f"{name}.norm1", decomposed_norm)
    up = linear(g, h, d, ffn, f"{name}.linear1")
    act = (gelu_erf(g, up, f"{name}.gelu") if activation == "gelu_erf"
           else g.op("Gelu" if activation == "gelu" else "Relu", [up], name=f"{name}/{activation}"))
    out = g.op("Add", [h, linear(g, act, ffn, d, f"{name}.linear2")], name=f"{name}/Add_1")
    return layer_norm(g, out, d, f"{name}.norm2", decomposed_norm)


@dataclass(frozen=True)
class TransformerConfig:
    vocab: int = 100
    seq: int = 16
    d: int = 32
    heads: int = 4
    ffn: int = 64
    layers: int = 2
    classes: int = 10
    activation: str = "gelu_erf"
    """``gelu_erf`` (decomposed), ``gelu`` (the opset-20 op) or ``relu``."""
    decomposed_norm: bool = False
    dynamic: bool = False
    """Symbolic batch and sequence; reshapes computed from ``Shape`` as torch does."""


def transformer(config: TransformerConfig = TransformerConfig(), seed: int = 0) -> onnx.ModelProto:
    """A small encoder: outputs the hidden states and pooled logits (first token, tanh)."""
    c = config
    g = Graph("tiny_encoder", seed, 20 if c.activation == "gelu" else 17)
    tok = g.op("Gather", [g.param("embed.weight", (c.vocab, c.d), 1.0), "tokens"], name="embed/Gather")
    positions = g.const(np.arange(c.seq), np.int64)
    pos = g.op("Gather", [g.param("pos_embed.weight", (c.seq, c.d), 1.0), positions], name="pos_embed/Gather")
    h = layer_norm(g, g.op("Add", [tok, pos], name="embed/Add"), c.d, "embed.norm", c.decomposed_norm)
    for i in range(c.layers):
        h = encoder_layer(g, h, c.d, c.heads, c.ffn, f"layers.{i}", activation=c.activation,
                          decomposed_norm=c.decomposed_norm, dynamic=c.dynamic)
    g.op("Identity", [h], name="hidden")
    first = g.op("Gather", [h, g.const(0, np.int64)], name="pool/Gather", axis=1)
    pooled = g.op("Tanh", [g.op("Gemm", [first, g.param("pool.weight", (c.d, c.d), 0.2), g.param("pool.bias", (c.d,), 0.05)],
                               name="pool/Gemm", transB=1)], name="pool/Tanh")
    head = g.param("head.weight", (c.classes, c.d), 0.2)
    g.op("Gemm", [pooled, head, g.param("head.bias", (c.classes,), 0.05)], name="logits", transB=1)
    batch, seq = ("N", "S") if c.dynamic else ("N", c.seq)
    return g.model([tensor("tokens", [batch, seq], TensorProto.INT64)],
                   [tensor("hidden", [batch, seq, c.d]), tensor("logits", [batch, c.classes])])


# ----- comparing with onnxruntime


def ort_outputs(model: onnx.ModelProto, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(names, dict(inputs)), strict=True))


def max_rel_error(got: np.ndarray, ref: np.ndarray) -> float:
    """``max |got - ref| / max |ref|`` (norm-wise, as the tile checker measures)."""
    ref64 = np.asarray(ref, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - ref64).max() / max(np.abs(ref64).max(), 1e-30))


def compare(imported: OnnxImport, model: onnx.ModelProto, inputs: Mapping[str, np.ndarray],
            rtol: float = 1e-4) -> dict[str, float]:
    """Interpreter (float32) against onnxruntime on ``inputs``; asserts ``allclose`` with
    ``rtol`` (and ``atol = rtol * max|ref|`` for the elements near zero) and returns the
    norm-wise error of each output."""
    ours = run_function(imported.func, dict(inputs), weights=imported.weights, dtype="f32")
    theirs = ort_outputs(model, inputs)
    assert set(ours) == set(theirs), (sorted(ours), sorted(theirs))
    errors = {}
    for name, ref in theirs.items():
        assert ours[name].shape == ref.shape, (name, ours[name].shape, ref.shape)
        np.testing.assert_allclose(ours[name], ref, rtol=rtol, atol=rtol * float(np.abs(ref).max()), err_msg=name)
        errors[name] = max_rel_error(ours[name], ref)
    return errors
