"""``graph.attention`` as the ops it computes (``crane.exec.kernels.attention``):

    q = linear(x, wq, bq)        k = linear(m, wk, bk)        v = linear(m, wv, bv)
    qh = transpose(reshape(q, [B, Sq, H, Dh]), [0, 2, 1, 3])   (likewise kh, vh)
    p = softmax(matmul(qh, kh, transpose_b), scale=1/sqrt(Dh), causal)
    out = linear(reshape(transpose(matmul(p, vh), [0, 2, 1, 3]), [B, Sq, D]), wo, bo)

``m`` is the memory input (``x`` for self-attention). The weights are the attention's own
values (linear layout (in, out)), so the expanded graph computes what the fused op does,
up to float rounding. Results keep the attention's name; inner values are named after it
(``<name>.q``, ``<name>.scores``, ...).
"""

from __future__ import annotations

import math

from crane.dialects.graph import LAYER_OPS, FuncOp, LayerOp
from crane.dialects.layers.values import AttrValue
from crane.ir.core import Value
from crane.ir.types import TensorType


def expand_attention(func: FuncOp) -> int:
    """Expand every ``graph.attention`` of ``func``; returns how many were expanded."""
    found = [op for op in func.body.ops if isinstance(op, LayerOp) and op.kind.name == "attention"]
    for op in found:
        _expand(func, op)
    return len(found)


class _Builder:
    """Inserts layer ops before one op, naming results after it."""

    def __init__(self, func: FuncOp, anchor: LayerOp, name: str) -> None:
        self.func, self.anchor, self.name = func, anchor, name
        self.element = _type(anchor.results[0]).element

    def layer(self, kind: str, inputs: list[Value], weights: list[Value],
              attrs: dict[str, AttrValue], suffix: str) -> Value:
        spec = LAYER_OPS[kind]
        shapes = tuple(_type(v).shape for v in inputs)
        shape, resolved = spec.kind.shape(shapes, {**_plain_defaults(spec.kind), **attrs})
        op = spec.build(inputs, weights, resolved, TensorType(tuple(shape), self.element),
                        self.anchor.location)
        op.results[0].name_hint = f"{self.name}{suffix}" if suffix else self.name
        self.func.body.insert_before(self.anchor, op)
        return op.results[0]


def _plain_defaults(kind: object) -> dict[str, AttrValue]:
    """A kind's parameters with a plain default value (not required, derived or resolved)."""
    found: dict[str, AttrValue] = {}
    for param in getattr(kind, "params", ()):
        if isinstance(param.default, bool | int | float | str | tuple):
            found[param.name] = param.default
    return found


def _type(value: Value) -> TensorType:
    assert isinstance(value.type, TensorType)
    return value.type


def _expand(func: FuncOp, op: LayerOp) -> None:
    attrs = op.layer_attrs
    heads = attrs["heads"]
    assert isinstance(heads, int)
    causal, bias = bool(attrs.get("causal", False)), bool(attrs.get("bias", True))
    x = op.inputs[0]
    memory = op.inputs[1] if len(op.inputs) > 1 else x
    weights = list(op.weights)
    mats, biases = weights[:4], (weights[4:8] if bias else [])
    batch, queries, dim = _type(x).shape
    keys = _type(memory).shape[1]
    size = dim // heads
    build = _Builder(func, op, op.results[0].name_hint or "attention")

    def project(source: Value, k: int, suffix: str) -> Value:
        return build.layer("linear", [source], [mats[k], *biases[k:k + 1]],
                           {"out": dim, "bias": bias}, suffix)

    def split(value: Value, length: int, suffix: str) -> Value:
        shaped = build.layer("reshape", [value], [], {"shape": (batch, length, heads, size)},
                             f"{suffix}.split")
        return build.layer("transpose", [shaped], [], {"perm": (0, 2, 1, 3)}, f"{suffix}.heads")

    q = split(project(x, 0, ".q"), queries, ".q")
    k = split(project(memory, 1, ".k"), keys, ".k")
    v = split(project(memory, 2, ".v"), keys, ".v")
    scores = build.layer("matmul", [q, k], [], {"transpose_b": True}, ".scores")
    probs = build.layer("softmax", [scores], [], {"axis": -1, "scale": 1.0 / math.sqrt(size),
                                                  "causal": causal}, ".probs")
    mixed = build.layer("matmul", [probs, v], [], {"transpose_b": False}, ".mixed")
    merged = build.layer("reshape", [build.layer("transpose", [mixed], [], {"perm": (0, 2, 1, 3)},
                                                 ".merge")],
                         [], {"shape": (batch, queries, dim)}, ".merged")
    out = build.layer("linear", [merged], [mats[3], *biases[3:4]], {"out": dim, "bias": bias}, "")
    op.results[0].replace_all_uses_with(out)
    op.erase()
