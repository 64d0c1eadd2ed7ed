"""Small networks that use every layer kind, elaborated to ``graph`` IR and expanded into
training steps: the ops the consumer checks (``kind_checks``) walk.

A new kind gets a line in one of these networks (``test_kinds`` fails until it has one).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache

from crane.autodiff import expand_training_step, resolve_training
from crane.dialects import default_context
from crane.dialects.graph import FuncOp, LayerOp
from crane.dialects.graph_grad import GradOp
from crane.frontend.translate import crn_to_module

NETWORKS = {
    "image": """network image {
  input x: f32[2, 4, 9, 9];
  input labels: int32[2];
  c = conv2d(x, out=4, kernel=3, padding=1);
  b = batchnorm(c);
  a1 = relu(b);
  a2 = gelu(a1);
  a3 = silu(a2);
  a4 = sigmoid(a3);
  a5 = tanh(a4);
  a6 = relu6(a5);
  a7 = hardsigmoid(a6);
  a8 = hardswish(a7);
  m = max_pool2d(a8, kernel=2);
  v = avg_pool2d(m, kernel=2);
  g = global_avg_pool(v);
  logits = linear(flatten(g), out=3);
  output logits;
  train {
    loss cross_entropy(logits, labels);
    optimizer sgd(lr=0.1);
    batch 2;
  }
}
""",
    "sequence": """network sequence {
  input ids: int32[2, 5];
  input x: f32[2, 5, 8];
  input target: f32[2, 5, 8];
  e = embedding(ids, vocab=7, dim=8);
  h = layernorm(add(e, x));
  at = attention(h, heads=2);
  q = matmul(softmax(at, axis=-1), at, transpose_b=true);
  d = dropout(q, rate=0.1);
  cut = concat(slice(d, axis=2, start=0, stop=4), slice(h, axis=2, start=0, stop=4), axis=1);
  t = transpose(reshape(cut, shape=[2, 5, 8]), perm=[0, 2, 1]);
  y = mul(transpose(t, perm=[0, 2, 1]), x);
  output y;
  train {
    loss mse(y, target);
    optimizer sgd(lr=0.1);
    batch 2;
  }
}
""",
}
"""Network name -> ``.crn`` text; together they use every layer kind."""


@dataclass(frozen=True)
class Samples:
    """The sample networks as inference functions and training steps, ops by kind."""

    funcs: tuple[FuncOp, ...]
    steps: tuple[FuncOp, ...]
    forward: dict[str, list[LayerOp]]
    grads: dict[str, list[GradOp]]


def _func(text: str, name: str) -> FuncOp:
    module = crn_to_module(text, f"{name}.crn", default_context())
    (func,) = [op for op in module.walk() if isinstance(op, FuncOp)]
    return func


def _step(text: str, name: str) -> FuncOp:
    func = _func(text, name)
    config = resolve_training(func.attributes.get("training"))
    assert config is not None
    expand_training_step(func, config)
    return func


@cache
def samples() -> Samples:
    funcs = tuple(_func(text, name) for name, text in NETWORKS.items())
    steps = tuple(_step(text, name) for name, text in NETWORKS.items())
    forward: dict[str, list[LayerOp]] = defaultdict(list)
    grads: dict[str, list[GradOp]] = defaultdict(list)
    for op in (op for func in funcs for op in func.body.ops if isinstance(op, LayerOp)):
        forward[op.kind.name].append(op)
    for grad in (op for step in steps for op in step.body.ops if isinstance(op, GradOp)):
        grads[grad.kind.name].append(grad)
    return Samples(funcs, steps, dict(forward), dict(grads))
