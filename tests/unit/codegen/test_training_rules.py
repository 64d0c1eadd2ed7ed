"""Every training rule's parts add up to the whole op: evaluated part by part (with their
operand boxes, placeholders, crops and partial sums) they give what the op gives whole."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from crane.autodiff import expand_training_step, resolve_training
from crane.codegen.boxes import Box, extent, full
from crane.codegen.training_division import divide, training_parts, training_steps
from crane.codegen.training_rules import rule_of
from crane.dialects import default_context
from crane.dialects.graph import FuncOp, ReturnOp, from_attribute
from crane.dialects.graph_grad import GradOp
from crane.exec.evaluate import evaluate
from crane.exec.interpreter import _bind, _Machine, _run_located
from crane.expand import expand_attention
from crane.ir.core import Operation
from crane.tools.inputs import translate

NETWORK = """
network rules {
  input image: f32[2, 4, 9, 9];
  input labels: int32[2];
  input tokens: int32[2, 5];
  a = relu(conv2d(image, out=8, kernel=3, stride=2, padding=1));
  b = batchnorm(conv2d(a, out=8, kernel=3, padding=1, groups=4));
  c = conv2d(relu(b), out=8, kernel=3, padding=[1, 1], depthwise=true);
  d = conv2d(c, out=6, kernel=1, stride=2);
  e = max_pool2d(a, kernel=3, stride=2, padding=1, ceil_mode=true);
  f = avg_pool2d(b, kernel=2);
  g = concat(d, e, axis=1);
  h = add(g, dropout(g, rate=0.3));
  p = flatten(global_avg_pool(h));
  q = flatten(f);
  r = linear(concat(p, q, axis=1), out=7);
  t = embedding(tokens, vocab=11, dim=8);
  u = attention(layernorm(add(t, gelu(t))), heads=2, causal=true);
  v = softmax(linear(u, out=7), axis=-1);
  first = linear(flatten(slice(u, axis=1, start=1, stop=3)), out=7);
  w = linear(flatten(v), out=7);
  s = linear(p, out=1);
  logits = add(add(add(r, w), mul(r, s)), first);
  output logits;
  train { loss cross_entropy(logits, labels); optimizer adam(lr=0.01); }
}
"""


def _training_step() -> FuncOp:
    module = translate("crn", NETWORK, "rules.crn", default_context())
    func = next(op for op in module.walk() if isinstance(op, FuncOp))
    expand_attention(func)
    config = resolve_training(func.attributes.get("training"), "", "", {}, 1)
    assert config is not None
    expand_training_step(func, config)
    return func


def _operands() -> list[tuple[Operation, list[np.ndarray], list[np.ndarray]]]:
    """Every training op with a rule, its operand arrays and its results (float64)."""
    func = _training_step()
    machine = _Machine(np.float64, 3, True, {})
    for arg in func.body.args:
        _bind(machine, arg, {})
    found = []
    for op in func.body.ops:
        if isinstance(op, ReturnOp):
            break
        results = _run_located(machine, op)
        machine.env.update(zip(op.results, results, strict=True))
        if rule_of(op) is not None:
            found.append((op, [machine.get(v) for v in op.operands], list(results)))
    return found


OPS = _operands()


def _name(op: Operation) -> str:
    return op.name.partition(".")[2]


def _attrs(op: Operation, extra: dict[str, object]) -> dict[str, object]:
    attrs = {k: from_attribute(v) for k, v in op.attributes.items()}
    attrs.update({k: from_attribute(v) for k, v in extra.items()})  # type: ignore[arg-type]
    if isinstance(op, GradOp) and "key" in op.attributes:
        attrs["key"] = from_attribute(op.attributes["key"])
    return attrs


def _slice(array: np.ndarray, box: Box) -> np.ndarray:
    return array[tuple(slice(a, b) for a, b in box)] if box else array


def _assemble(op: Operation, operands: list[np.ndarray], results: list[np.ndarray],
              boxes: list[Box], parts: list[object]) -> list[np.ndarray]:
    made = [np.zeros_like(r) for r in results]
    covered = [np.zeros(r.shape, bool) for r in results]
    for part in parts:
        ins = [_slice(a, b) for a, b in zip(operands, part.ins, strict=True) if b is not None]  # type: ignore[attr-defined]
        shapes = [extent(b) for b in part.outs]  # type: ignore[attr-defined]
        outs = evaluate(_name(op), _attrs(op, dict(part.attrs)), ins, shapes, dtype=np.float64,  # type: ignore[attr-defined]
                        seed=3, training=True)
        for k, (box, out) in enumerate(zip(part.outs, outs, strict=True)):  # type: ignore[attr-defined]
            index = tuple(slice(a, b) for a, b in box)
            assert out.shape == extent(box), (op.name, k, out.shape, box)
            if part.partial[k]:  # type: ignore[attr-defined]
                made[k][index] += out
            else:
                assert not covered[k][index].any(), f"{op.name}: result {k} written twice"
                made[k][index] = out
            covered[k][index] = True
    return made


@pytest.mark.parametrize("index", range(len(OPS)), ids=[f"{_name(o)}#{i}" for i, (o, _, _) in enumerate(OPS)])
def test_parts_along_every_axis_add_up_to_the_whole_op(index: int) -> None:
    op, operands, results = OPS[index]
    rule = rule_of(op)
    assert rule is not None
    space = rule.space(op)
    axes = space.splittable()
    trials = [{}] + [{a: 2} for a in axes] + [{a: 3 for a in pair} for pair in itertools.combinations(axes, 2)]
    for counts in trials:
        division = divide(op, rule, space.whole, {a: min(n, space.extents[a]) for a, n in counts.items()})
        made = _assemble(op, operands, results, list(division.boxes), list(division.parts))
        for k, (got, want) in enumerate(zip(made, results, strict=True)):
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12,
                                       err_msg=f"{op.name} result {k} split {counts}")


def test_every_rule_kind_of_the_network_is_covered() -> None:
    names = {_name(op) for op, _, _ in OPS}
    assert {"conv2d_grad_input", "conv2d_grad_weight", "max_pool2d_grad_input", "avg_pool2d_grad_input",
            "global_avg_pool_grad_input", "linear_grad_input", "linear_grad_weight", "layernorm_grad_input",
            "layernorm_grad_weight", "softmax_grad_input", "cross_entropy_grad_input", "concat_grad_input",
            "flatten_grad_input", "embedding_grad_weight", "add_grad_input", "mul_grad_input",
            "dropout_grad_input", "relu_grad_input", "gelu_grad_input", "adam", "accumulate",
            "batchnorm_grad_input", "batchnorm_grad_weight", "matmul_grad_input",
            "transpose_grad_input", "reshape_grad_input", "slice_grad_input"} <= names


def test_tiles_and_steps_cover_the_space() -> None:
    for op, _, _ in OPS:
        division = training_parts(op, 16, 4)
        assert division is not None
        boxes = division.boxes
        rule = rule_of(op)
        assert rule is not None
        whole = rule.space(op).whole
        assert sum(int(np.prod(extent(b))) for b in boxes) == int(np.prod(extent(whole)))
        for box in boxes:
            steps = training_steps(op, box, 256, 4)
            assert sum(int(np.prod(extent(b))) for b in steps.boxes) == int(np.prod(extent(box)))
    assert full(()) == ()
