"""Softmax, log-softmax, cross-entropy and MSE."""

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    log_softmax_backward,
    log_softmax_forward,
    mse_loss_backward,
    mse_loss_forward,
    softmax_backward,
    softmax_cross_entropy,
    softmax_forward,
)


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_and_log_softmax(axis: int, rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4, 5)) * 3
    out = softmax_forward(x, axis=axis)
    np.testing.assert_allclose(out, np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True), rtol=1e-13)
    np.testing.assert_allclose(
        log_softmax_forward(x, axis=axis), np.log(out), rtol=1e-12, atol=1e-14
    )
    check_gradients(
        lambda x: softmax_forward(x, axis=axis),
        lambda g, x: {"x": softmax_backward(g, softmax_forward(x, axis=axis), axis=axis)},
        {"x": x},
    )
    check_gradients(
        lambda x: log_softmax_forward(x, axis=axis),
        lambda g, x: {"x": log_softmax_backward(g, log_softmax_forward(x, axis=axis), axis=axis)},
        {"x": x},
    )


def test_softmax_large_logits_do_not_overflow() -> None:
    out = softmax_forward(np.array([[1000.0, 1000.0, -1000.0]]))
    np.testing.assert_allclose(out, [[0.5, 0.5, 0.0]])


@pytest.mark.parametrize(("shape", "classes"), [((4,), 5), ((2, 3), 4)])
def test_softmax_cross_entropy(
    shape: tuple[int, ...], classes: int, rng: np.random.Generator
) -> None:
    logits = rng.standard_normal((*shape, classes)) * 2
    labels = rng.integers(0, classes, shape)
    loss, grad = softmax_cross_entropy(logits, labels)
    probs = np.exp(logits) / np.exp(logits).sum(axis=-1, keepdims=True)
    picked = np.take_along_axis(probs, labels[..., None], axis=-1)
    np.testing.assert_allclose(loss, -np.log(picked).mean(), rtol=1e-13)
    assert loss.shape == ()

    def forward(logits: Array) -> Array:
        return softmax_cross_entropy(logits, labels)[0]

    # The projection R is a scalar here, passed on as the upstream gradient.
    check_gradients(
        forward,
        lambda g, logits: {"logits": softmax_cross_entropy(logits, labels, grad_loss=g)[1]},
        {"logits": logits},
    )
    np.testing.assert_allclose(softmax_cross_entropy(logits, labels, grad_loss=2.5)[1], 2.5 * grad)


def test_softmax_cross_entropy_validates_labels() -> None:
    with pytest.raises(IndexError):
        softmax_cross_entropy(np.zeros((2, 3)), np.array([0, 3]))
    with pytest.raises(ValueError):
        softmax_cross_entropy(np.zeros((2, 3)), np.array([0]))


def test_mse(rng: np.random.Generator) -> None:
    inputs = {"pred": rng.standard_normal((3, 4)), "target": rng.standard_normal((3, 4))}
    np.testing.assert_allclose(
        mse_loss_forward(**inputs), ((inputs["pred"] - inputs["target"]) ** 2).mean()
    )

    def backward(g: Array, pred: Array, target: Array) -> dict[str, Array]:
        dp, dt = mse_loss_backward(pred, target, grad_loss=g)
        return {"pred": dp, "target": dt}

    check_gradients(mse_loss_forward, backward, inputs)
