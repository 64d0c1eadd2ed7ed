"""Acceptance (a): weight gradients of the autodiff training step, run by the reference
interpreter in float64, match central finite differences of the loss (rtol 1e-6) for
every differentiable op kind: strided/dilated/grouped/padded/depthwise convs, both pools
(also ceil mode), batchnorm, layernorm, softmax-cross-entropy, mse, attention (causal
self-attention with biases, cross-attention), embedding, dropout and the tensor ops.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_cases import CASES
from training_testing import StepCheck, load_func, sgd_step

from crane.dialects.graph import LayerOp
from crane.dialects.graph_grad import GradOp
from crane.dialects.layers.kinds import LAYER_KINDS
from crane.exec.interpreter import run_function


@pytest.mark.parametrize("name", sorted(CASES))
def test_weight_gradients_match_finite_differences(name: str) -> None:
    check = StepCheck(sgd_step(load_func(CASES[name])))
    assert check.weights
    assert not check.mismatches(), "\n".join(map(str, check.mismatches()))


def test_every_layer_kind_is_covered() -> None:
    """The cases exercise the backward op of every forward layer kind they contain."""
    kinds: set[str] = set()
    differentiated: set[str] = set()
    for text in CASES.values():
        step = sgd_step(load_func(text))
        kinds.update(op.kind.name for op in step.body.ops if isinstance(op, LayerOp))
        differentiated.update(op.kind.name for op in step.body.ops if isinstance(op, GradOp))
    assert kinds == set(LAYER_KINDS)
    assert differentiated == set(LAYER_KINDS)


def test_a_wrong_gradient_is_caught() -> None:
    """The check can fail: a step whose update is off by 1% in one weight is rejected."""
    check = StepCheck(sgd_step(load_func(CASES["conv_strided_dilated_grouped_padded"])))
    check.grads["c.weight"] = check.grads["c.weight"] * 1.01
    assert check.mismatches(["c.weight"])


def test_float32_step_is_close_to_float64() -> None:
    step = sgd_step(load_func(CASES["batchnorm_relu_global_pool"]))
    check = StepCheck(step)
    single = run_function(step, check.inputs, weights=check.weights, dtype="f32")
    assert single["loss"].dtype == np.float32
    assert abs(float(single["loss"]) - float(check.outputs["loss"])) < 1e-4
