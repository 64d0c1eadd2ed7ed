"""Tiny networks, one per differentiable op kind (or group), each ending in a loss.

Ops without weights sit behind a layer with weights, so the weight gradients the SGD step
returns flow through them.
"""

from __future__ import annotations


def _net(inputs: str, body: str, loss: str) -> str:
    return f"network case {{\n{inputs}\n{body}\n  train {{\n    loss {loss};\n    optimizer sgd(lr=1.0);\n    batch 2;\n  }}\n}}\n"


_IMAGE = "  input x: f32[2, 4, 9, 9];\n  input labels: int32[2];"
_HEAD = "  logits = linear(flatten({}), out=3);\n  output logits;"
_CE = "cross_entropy(logits, labels)"

CASES: dict[str, str] = {
    "conv_strided_dilated_grouped_padded": _net(
        _IMAGE, "  c = conv2d(x, out=6, kernel=3, stride=2, dilation=2, groups=2, padding=2, bias=true);\n"
        + _HEAD.format("c"), _CE),
    "conv_depthwise_asymmetric_stride": _net(
        _IMAGE, "  c = conv2d(x, depthwise=true, kernel=3, stride=[2, 1], padding=1, bias=true);\n"
        + _HEAD.format("c"), _CE),
    "conv_1x1_unpadded": _net(
        _IMAGE, "  c = conv2d(x, out=5, kernel=1, stride=3, bias=false);\n" + _HEAD.format("c"), _CE),
    "max_pool_overlapping_padded": _net(
        _IMAGE, "  c = conv2d(x, out=3, kernel=3, padding=1, bias=true);\n"
        "  p = max_pool2d(c, kernel=3, stride=2, padding=1);\n" + _HEAD.format("p"), _CE),
    "avg_pool_padded": _net(
        _IMAGE, "  c = conv2d(x, out=3, kernel=3, bias=true);\n"
        "  p = avg_pool2d(c, kernel=2, stride=2, padding=1);\n" + _HEAD.format("p"), _CE),
    "batchnorm_relu_global_pool": _net(
        _IMAGE, "  c = conv2d(x, out=5, kernel=3, bias=false);\n  b = relu(batchnorm(c));\n"
        "  g = global_avg_pool(b);\n" + _HEAD.format("g"), _CE),
    "layernorm_gelu_mse": _net(
        "  input x: f32[2, 5, 6];\n  input target: f32[2, 5, 3];",
        "  h = gelu(layernorm(linear(x, out=8)));\n  y = linear(h, out=3);\n  output y;", "mse(y, target)"),
    "softmax_cross_entropy_sequence": _net(
        "  input x: f32[2, 5, 6];\n  input labels: int32[2, 5];",
        "  logits = linear(x, out=7);\n  output logits;", _CE),
    "attention_causal_bias": _net(
        "  input x: f32[2, 5, 8];\n  input labels: int32[2, 5];",
        "  a = attention(linear(x, out=8), heads=2, causal=true, bias=true);\n"
        "  logits = linear(a, out=4);\n  output logits;", _CE),
    "attention_cross_memory": _net(
        "  input x: f32[2, 5, 8];\n  input m: f32[2, 3, 8];\n  input labels: int32[2, 5];",
        "  a = attention(linear(x, out=8), linear(m, out=8), heads=4, causal=false, bias=false);\n"
        "  logits = linear(a, out=4);\n  output logits;", _CE),
    "tensor_ops_embedding_dropout": _net(
        "  input ids: int32[2, 5];\n  input target: f32[2, 5, 4];",
        "  e = embedding(ids, vocab=7, dim=6);\n  a = linear(e, out=4);\n  b = tanh(linear(e, out=4));\n"
        "  m = mul(sigmoid(a), b);\n  c = concat(m, silu(a), axis=2);\n"
        "  s = slice(c, axis=2, start=1, stop=5);\n  t = transpose(s, perm=[0, 2, 1]);\n"
        "  r = reshape(t, shape=[2, 4, 5]);\n  q = matmul(softmax(r, axis=-1), e);\n"
        "  g = matmul(q, linear(e, out=6), transpose_b=true);\n  d = dropout(g, rate=0.3);\n"
        "  y = add(transpose(d, perm=[0, 2, 1]), a);\n  output y;", "mse(y, target)"),
    "broadcast_add_mul": _net(
        "  input x: f32[2, 5, 6];\n  input target: f32[2, 5, 6];",
        "  a = linear(x, out=6);\n  k = slice(linear(x, out=2), axis=2, start=0, stop=1);\n"
        "  y = add(mul(a, k), slice(a, axis=1, start=0, stop=1));\n  output y;", "mse(y, target)"),
    "hard_activations": _net(
        "  input x: f32[2, 5, 6];\n  input target: f32[2, 5, 4];",
        "  h = linear(x, out=12);\n  a = relu6(mul(h, h));\n  b = hardsigmoid(linear(x, out=12));\n"
        "  c = hardswish(linear(x, out=12));\n  y = linear(add(add(a, b), c), out=4);\n  output y;",
        "mse(y, target)"),
    "pools_ceil_mode": _net(
        _IMAGE, "  c = conv2d(x, out=3, kernel=2, bias=true);\n"
        "  p = max_pool2d(c, kernel=3, stride=2, ceil_mode=true);\n"
        "  q = avg_pool2d(c, kernel=3, stride=2, ceil_mode=true);\n" + _HEAD.format("add(p, q)"), _CE),
}
"""Case name -> ``.crn`` program."""
