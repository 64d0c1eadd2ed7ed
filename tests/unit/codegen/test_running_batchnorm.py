"""Batchnorm with running statistics: per-sample semantics from the frontend to the tiles.

An inference network's batchnorm reads ``mean`` and ``var`` buffers (not parameters), the
reference interpreter normalises with them, codegen pipelines blocks holding such ops
(no layer-by-layer phases), and the tile programs match the interpreter. ``autodiff``
switches them to batch statistics.
"""

from __future__ import annotations

import numpy as np
import pytest

from crane.autodiff import expand_training_step, resolve_training
from crane.autodiff.expand import attach_loss
from crane.dialects import default_context
from crane.dialects.builtin import ModuleOp
from crane.dialects.graph import FuncOp, LayerOp
from crane.exec import kernels as K
from crane.exec.interpreter import init_weight, run_function
from crane.frontend.accounting import network_stats
from crane.frontend.crn import parse_crn
from crane.passes.segment import Segment
from crane.tools.inputs import translate

from .support import body, lowered_and_checked, run_pass, set_mesh, simple_placement

NET = """
block cbr(x, c) {{
  return relu(batchnorm(conv2d(x, out=c, kernel=3, padding=same, bias=false){extra}));
}}
network small {{
  machine edge;
  batch 4;
  input image: f32[batch, 3, 12, 12];
  a = cbr(image, 8);
  b = cbr(a, 8);
  output b;
}}
"""


def _module(extra: str = "") -> ModuleOp:
    module = translate("crn", NET.format(extra=extra), "small.crn", default_context())
    assert isinstance(module, ModuleOp)
    return module


def _func(module: ModuleOp) -> FuncOp:
    return next(op for op in body(module) if isinstance(op, FuncOp))


def _norms(func: FuncOp) -> list[LayerOp]:
    return [op for op in func.body.ops if isinstance(op, LayerOp) and op.kind.name == "batchnorm"]


def test_inference_network_defaults_to_running_statistics() -> None:
    norms = _norms(_func(_module()))
    assert [op.layer_attrs["running"] for op in norms] == [True, True]
    assert all(len(op.weights) == 4 for op in norms)
    explicit = _norms(_func(_module(", running=false")))
    assert [len(op.weights) for op in explicit] == [2, 2]


def test_buffers_are_not_parameters() -> None:
    with_buffers = network_stats(parse_crn(NET.format(extra=""), "small.crn"))
    without = network_stats(parse_crn(NET.format(extra=", running=false"), "small.crn"))
    assert with_buffers.params == without.params == 2 * 16 + 8 * 3 * 9 + 8 * 8 * 9


def test_interpreter_normalises_with_the_running_statistics() -> None:
    text = "network bn {\n  batch 2;\n  input x: f32[batch, 3, 4, 4];\n  y = batchnorm(x, eps=0.01);\n}\n"
    module = translate("crn", text, "bn.crn", default_context())
    assert isinstance(module, ModuleOp)
    x = np.random.default_rng(7).standard_normal((2, 3, 4, 4))
    got = run_function(_func(module), inputs={"x": x}, seed=3)["y"]
    gamma, beta, mean, var = (init_weight(f"y.{n}", (3,), np.float64, 3)
                              for n in ("scale", "shift", "mean", "var"))
    assert (var > 0).all()
    want = K.batchnorm_forward_inference(x, gamma, beta, mean, var, eps=0.01)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert not np.allclose(got, K.batchnorm_forward_train(x, gamma, beta, eps=0.01)[0])


def test_running_batchnorm_is_per_sample() -> None:
    func = _func(_module())
    inputs = {"image": np.random.default_rng(5).standard_normal((4, 3, 12, 12))}
    whole = run_function(func, inputs=inputs, seed=1)["b"]
    alone = [run_function(func, inputs={"image": np.concatenate([inputs["image"][k:k + 1]] * 4)},
                          seed=1)["b"][0] for k in range(4)]
    np.testing.assert_allclose(np.stack(alone), whole, rtol=1e-12, atol=1e-12)


def test_running_batchnorm_kernel_matches_formula() -> None:
    rng = np.random.default_rng(0)
    x, gamma, beta, mean = (rng.standard_normal(s) for s in ((2, 3, 4, 4), (3,), (3,), (3,)))
    var = 1.0 + rng.random(3)
    got = K.batchnorm_forward_inference(x, gamma, beta, mean, var, eps=1e-5)
    want = (gamma[None, :, None, None] * (x - mean[None, :, None, None])
            / np.sqrt(var[None, :, None, None] + 1e-5) + beta[None, :, None, None])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_autodiff_switches_to_batch_statistics() -> None:
    func = _func(_module())
    attach_loss(func, "mse")
    config = resolve_training(None, force=True)
    assert config is not None
    expand_training_step(func, config)
    norms = [op for op in func.body.ops if isinstance(op, LayerOp) and op.kind.name == "batchnorm"]
    assert [op.layer_attrs["running"] for op in norms] == [False, False]
    names = {r.name_hint for op in func.body.ops for r in op.results}
    assert not {"a.mean", "a.var", "b.mean", "b.var"} & names


@pytest.mark.parametrize("mesh", [2, 4])
def test_tile_programs_pipeline_and_match_the_interpreter(mesh: int) -> None:
    module = _module()
    machine = set_mesh(module, mesh, mesh)
    run_pass(module, Segment(time_limit=0.01))
    simple_placement(module)
    _, report = lowered_and_checked(module, machine)
    assert report.comparisons and all(c.ok for c in report.comparisons)
