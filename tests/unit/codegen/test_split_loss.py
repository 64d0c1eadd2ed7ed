"""A loss split over tiles along its positions: each part gives its share of the mean, and
the parts' partial sums add up to the loss (no tile holds the whole prediction)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from crane.codegen.rules import forward_op_parts, shape_of
from crane.dialects import default_context
from crane.dialects.graph import LayerOp
from crane.exec.forward import FORWARD, Call
from crane.exec.tile_sim.check import check
from crane.ir.parser import parse_ops
from crane.tools.inputs import translate
from crane.tools.opt import main as opt_main

ROOT = Path(__file__).resolve().parents[3]
MESH2X2 = str(ROOT / "examples" / "machines" / "mesh2x2.crn")
TOKENS = """
network tokens {
  input ids: int32[2, 6];
  input labels: int32[2, 6];
  e = embedding(ids, vocab=40, dim=16);
  logits = linear(relu(linear(e, out=16)), out=40);
  output logits;
  train { loss cross_entropy(logits, labels); optimizer sgd(lr=0.5); }
}
"""
REGRESSION = """
network fit {
  input x: f32[8, 12];
  input y: f32[8, 4];
  h = linear(relu(linear(x, out=16)), out=4);
  output h;
  train { loss mse(h, y); optimizer sgd(lr=0.5); }
}
"""


def _loss_op(source: str) -> LayerOp:
    module = translate("crn", source, "net.crn", default_context())
    return next(op for op in module.walk() if isinstance(op, LayerOp) and op.kind.is_loss)


@pytest.mark.parametrize("source", [TOKENS, REGRESSION], ids=["tokens", "regression"])
def test_the_parts_of_a_split_loss_add_up_to_the_loss(source: str) -> None:
    op = _loss_op(source)
    rng = np.random.default_rng(0)
    pred_shape, target_shape = shape_of(op.operands[0]), shape_of(op.operands[1])
    pred = rng.standard_normal(pred_shape).astype(np.float32)
    target = (rng.integers(0, pred_shape[-1], target_shape) if len(target_shape) < len(pred_shape)
              else rng.standard_normal(target_shape).astype(np.float32))
    rule = FORWARD[op.kind.name]
    whole = rule(Call({}, [pred, target], [], (), "loss", 0))
    parts = forward_op_parts(op, (0, pred_shape[0]), pred_shape[0], 3, True)
    assert len(parts) == 3 and all(p.partial == (True,) for p in parts)
    total = 0.0
    for part in parts:
        p_box, t_box = part.ins
        attrs = {name: attr.value for name, attr in part.attrs.items()}  # type: ignore[attr-defined]
        cut = tuple(slice(a, b) for a, b in p_box or ())
        t_cut = tuple(slice(a, b) for a, b in t_box or ())
        total += float(rule(Call(attrs, [pred[cut], target[t_cut]], [], (), "loss", 0)))
    assert total == pytest.approx(float(whole), rel=1e-5)


@pytest.mark.parametrize("source", [TOKENS, REGRESSION], ids=["tokens", "regression"])
@pytest.mark.parametrize("machine", ["edge", MESH2X2], ids=["edge", "mesh2x2"])
def test_a_training_step_with_a_split_loss_matches_the_interpreter(
        tmp_path: Path, source: str, machine: str) -> None:
    net = tmp_path / "net.crn"
    net.write_text(source)
    out = tmp_path / "net.tile.mlir"
    assert opt_main([str(net), "--machine", machine, "-p", "lower-to-tile", "-o", str(out)]) == 0
    text = out.read_text()
    assert text.count("attrs = {count = ") >= 2  # the forward loss ran on several tiles
    (module,) = parse_ops(default_context(), text, str(out))
    report = check(module, rtol=1e-5, strict=True)
    assert report.ok, report.lines()
    assert "loss" in {c.name for c in report.comparisons}
