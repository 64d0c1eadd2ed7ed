"""Softmax, log-softmax and losses, forward and backward.

Losses return a 0-d array (the mean loss). Their gradients are of that mean,
for an upstream gradient ``grad_loss`` (default 1.0).
"""

import numpy as np

from crane.exec.kernels._types import Array, IntArray


def softmax_forward(x: Array, axis: int = -1) -> Array:
    """Softmax along ``axis``, shifted by the max so exp never overflows."""
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def softmax_backward(grad_out: Array, out: Array, axis: int = -1) -> Array:
    """Gradient wrt the softmax input given the forward *output* ``out``."""
    return out * (grad_out - (grad_out * out).sum(axis=axis, keepdims=True))


def log_softmax_forward(x: Array, axis: int = -1) -> Array:
    """``log(softmax(x))`` along ``axis``, computed without forming the softmax."""
    shifted = x - x.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def log_softmax_backward(grad_out: Array, out: Array, axis: int = -1) -> Array:
    """Gradient wrt the log-softmax input given the forward output ``out``."""
    return grad_out - np.exp(out) * grad_out.sum(axis=axis, keepdims=True)


def softmax_cross_entropy(
    logits: Array, labels: IntArray, *, grad_loss: float | Array = 1.0
) -> tuple[Array, Array]:
    """Fused softmax + cross-entropy over the last axis with integer class labels.

    ``logits`` is (..., K) and ``labels`` is (...) with values in [0, K). The
    loss is the mean over all label positions (the batch). Returns
    ``(loss, grad_logits)`` where ``grad_logits = grad_loss * (softmax - onehot) / count``.
    """
    if logits.shape[:-1] != labels.shape:
        raise ValueError(
            f"labels {labels.shape} must match logits {logits.shape} minus the class axis"
        )
    num_classes = logits.shape[-1]
    if labels.size and (labels.min() < 0 or labels.max() >= num_classes):
        raise IndexError(f"labels must lie in [0, {num_classes})")
    logp = log_softmax_forward(logits, axis=-1)
    picked = np.take_along_axis(logp, labels[..., None], axis=-1)
    count = max(labels.size, 1)
    loss = np.asarray(-picked.sum() / count)
    onehot = np.arange(num_classes) == labels[..., None]
    grad = (np.exp(logp) - onehot) * (grad_loss / count)
    return loss, grad


def mse_loss_forward(pred: Array, target: Array) -> Array:
    """Mean squared error over all elements: ``mean((pred - target)^2)`` as a 0-d array."""
    diff = pred - target
    return np.asarray(np.mean(diff * diff))


def mse_loss_backward(
    pred: Array, target: Array, *, grad_loss: float | Array = 1.0
) -> tuple[Array, Array]:
    """Return ``(grad_pred, grad_target)`` of :func:`mse_loss_forward`."""
    grad_pred = (pred - target) * (2.0 * grad_loss / max(pred.size, 1))
    return grad_pred, -grad_pred
