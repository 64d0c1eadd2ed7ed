"""Acceptance (a), torch half: the same cases' weight gradients match torch autograd in
float64 (rtol 1e-8 in max norm). Skips cleanly without torch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from grad_cases import CASES
from training_testing import StepCheck, load_func, relative_error, sgd_step

torch = pytest.importorskip("torch", exc_type=ImportError)
F = torch.nn.functional

Tensor = Any
"""A torch tensor (torch is optional, so not imported for typing)."""
Tensors = dict[str, Tensor]
TorchLoss = Callable[[Tensors, Tensors], Tensor]


def _lin(x: Tensor, w: Tensors, name: str) -> Tensor:
    out = x @ w[f"{name}.weight"]
    bias = w.get(f"{name}.bias")
    return out if bias is None else out + bias


def _ce(logits: Tensor, labels: Tensor) -> Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1).long())


def _head(t: Tensor, w: Tensors, i: Tensors) -> Tensor:
    return _ce(_lin(t.flatten(1), w, "logits"), i["labels"])


def _attention(x: Tensor, mem: Tensor, w: Tensors, heads: int, causal: bool) -> Tensor:
    def proj(t: Tensor, n: str) -> Tensor:
        out = t @ w[f"a.w{n}"] + w[f"a.b{n}"] if f"a.b{n}" in w else t @ w[f"a.w{n}"]
        b, s, d = out.shape
        return out.reshape(b, s, heads, d // heads).transpose(1, 2)

    o = F.scaled_dot_product_attention(proj(x, "q"), proj(mem, "k"), proj(mem, "v"), is_causal=causal)
    merged = o.transpose(1, 2).reshape(x.shape[0], x.shape[1], -1)
    return merged @ w["a.wo"] + w["a.bo"] if "a.bo" in w else merged @ w["a.wo"]


def _conv(x: Tensor, w: Tensors, **kw: object) -> Tensor:
    return F.conv2d(x, w["c.weight"], w.get("c.bias"), **kw)


TORCH: dict[str, TorchLoss] = {
    "conv_strided_dilated_grouped_padded": lambda w, i: _head(
        _conv(i["x"], w, stride=2, dilation=2, groups=2, padding=2), w, i),
    "conv_depthwise_asymmetric_stride": lambda w, i: _head(
        _conv(i["x"], w, stride=(2, 1), padding=1, groups=4), w, i),
    "conv_1x1_unpadded": lambda w, i: _head(_conv(i["x"], w, stride=3), w, i),
    "max_pool_overlapping_padded": lambda w, i: _head(
        F.max_pool2d(_conv(i["x"], w, padding=1), 3, 2, 1), w, i),
    "avg_pool_padded": lambda w, i: _head(
        F.avg_pool2d(_conv(i["x"], w), 2, 2, 1, count_include_pad=False), w, i),
    "pools_ceil_mode": lambda w, i: _head(
        F.max_pool2d(_conv(i["x"], w), 3, 2, ceil_mode=True)
        + F.avg_pool2d(_conv(i["x"], w), 3, 2, ceil_mode=True, count_include_pad=False), w, i),
    "batchnorm_relu_global_pool": lambda w, i: _head(F.relu(F.batch_norm(
        _conv(i["x"], w), None, None, w["batchnorm.scale"], w["batchnorm.shift"], training=True, eps=1e-5,
    )).mean(dim=(2, 3)), w, i),
    "layernorm_gelu_mse": lambda w, i: F.mse_loss(_lin(F.gelu(F.layer_norm(
        _lin(i["x"], w, "linear"), (8,), w["layernorm.scale"], w["layernorm.shift"], eps=1e-5)), w, "y"),
        i["target"]),
    "softmax_cross_entropy_sequence": lambda w, i: _ce(_lin(i["x"], w, "logits"), i["labels"]),
    "attention_causal_bias": lambda w, i: _ce(_lin(_attention(
        _lin(i["x"], w, "linear"), _lin(i["x"], w, "linear"), w, 2, True), w, "logits"), i["labels"]),
    "attention_cross_memory": lambda w, i: _ce(_lin(_attention(
        _lin(i["x"], w, "linear"), _lin(i["m"], w, "linear_1"), w, 4, False), w, "logits"), i["labels"]),
}


@pytest.mark.parametrize("name", sorted(TORCH))
def test_weight_gradients_match_torch(name: str) -> None:
    check = StepCheck(sgd_step(load_func(CASES[name])))
    weights = {k: torch.tensor(v, requires_grad=True) for k, v in check.weights.items()}
    inputs = {k: torch.tensor(v) for k, v in check.inputs.items()}
    loss = TORCH[name](weights, inputs)
    loss.backward()
    value = float(loss.detach())
    assert abs(value - float(check.outputs["loss"])) <= 1e-10 * max(1.0, abs(value))
    for key, tensor in weights.items():
        assert tensor.grad is not None, key
        error = relative_error(check.grads[key], tensor.grad.numpy())
        assert error <= 1e-8, f"{key}: relative error {error:.2e}"
    assert np.isfinite(value)
