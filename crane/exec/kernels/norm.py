"""Batch normalisation and layer normalisation, forward and backward.

Batchnorm: input (N, C, ...) (NCHW for images), per-channel gamma/beta (C,);
statistics are taken over every axis except the channel axis 1, with the
biased variance. Layernorm: normalises over the trailing ``gamma.ndim`` axes
(``gamma.shape`` plays the role of PyTorch's ``normalized_shape``).

Saved statistics are the mean and ``inv_std = 1 / sqrt(var + eps)``, shaped
like gamma for batchnorm, (...) + (1,) * gamma.ndim (keepdims) for layernorm.
"""

import numpy as np

from crane.exec.kernels._types import Array


def batchnorm_forward_train(
    x: Array, gamma: Array, beta: Array, *, eps: float = 1e-5
) -> tuple[Array, Array, Array]:
    """Training-mode batchnorm with batch statistics. Returns ``(out, mean, inv_std)``, stats (C,)."""
    axes = _bn_axes(x)
    mean = x.mean(axis=axes)
    var = x.var(axis=axes)
    inv_std = 1.0 / np.sqrt(var + eps)
    xhat = (x - _bn_expand(mean, x)) * _bn_expand(inv_std, x)
    return _bn_expand(gamma, x) * xhat + _bn_expand(beta, x), mean, inv_std


def batchnorm_backward_train(
    grad_out: Array, x: Array, gamma: Array, mean: Array, inv_std: Array
) -> tuple[Array, Array, Array]:
    """Backward of :func:`batchnorm_forward_train`. Returns ``(grad_x, grad_gamma, grad_beta)``.

    The batch statistics depend on ``x``, so grad_x includes their contribution.
    """
    axes = _bn_axes(x)
    count = x.size // x.shape[1]
    xhat = (x - _bn_expand(mean, x)) * _bn_expand(inv_std, x)
    grad_beta = grad_out.sum(axis=axes)
    grad_gamma = (grad_out * xhat).sum(axis=axes)
    scale = _bn_expand(gamma * inv_std / count, x)
    grad_x = scale * (
        count * grad_out - _bn_expand(grad_beta, x) - xhat * _bn_expand(grad_gamma, x)
    )
    return grad_x, grad_gamma, grad_beta


def batchnorm_forward_inference(
    x: Array,
    gamma: Array,
    beta: Array,
    running_mean: Array,
    running_var: Array,
    *,
    eps: float = 1e-5,
) -> Array:
    """Inference-mode batchnorm: normalise with the running statistics (C,)."""
    inv_std = 1.0 / np.sqrt(running_var + eps)
    xhat = (x - _bn_expand(running_mean, x)) * _bn_expand(inv_std, x)
    return _bn_expand(gamma, x) * xhat + _bn_expand(beta, x)


def batchnorm_backward_inference(
    grad_out: Array,
    x: Array,
    gamma: Array,
    running_mean: Array,
    running_var: Array,
    *,
    eps: float = 1e-5,
) -> tuple[Array, Array, Array]:
    """Backward of :func:`batchnorm_forward_inference` (running stats are constants).

    Returns ``(grad_x, grad_gamma, grad_beta)``.
    """
    axes = _bn_axes(x)
    inv_std = 1.0 / np.sqrt(running_var + eps)
    xhat = (x - _bn_expand(running_mean, x)) * _bn_expand(inv_std, x)
    grad_x = grad_out * _bn_expand(gamma * inv_std, x)
    return grad_x, (grad_out * xhat).sum(axis=axes), grad_out.sum(axis=axes)


def batchnorm_running_stats(
    running_mean: Array, running_var: Array, x: Array, *, momentum: float = 0.1
) -> tuple[Array, Array]:
    """PyTorch-style running-stat update: ``new = (1 - momentum) * old + momentum * batch``.

    The batch variance here is the *unbiased* one, as in PyTorch, while
    normalisation itself uses the biased variance. Returns ``(new_mean, new_var)``.
    """
    axes = _bn_axes(x)
    count = x.size // x.shape[1]
    if count < 2:
        raise ValueError("running variance needs more than one value per channel")
    batch_var = x.var(axis=axes, ddof=1)
    new_mean = (1.0 - momentum) * running_mean + momentum * x.mean(axis=axes)
    new_var = (1.0 - momentum) * running_var + momentum * batch_var
    return new_mean, new_var


def layernorm_forward(
    x: Array, gamma: Array, beta: Array, *, eps: float = 1e-5
) -> tuple[Array, Array, Array]:
    """Layernorm over the trailing ``gamma.ndim`` axes. Returns ``(out, mean, inv_std)`` (keepdims)."""
    axes = _ln_axes(x, gamma)
    mean = x.mean(axis=axes, keepdims=True)
    inv_std = 1.0 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    return gamma * ((x - mean) * inv_std) + beta, mean, inv_std


def layernorm_backward(
    grad_out: Array, x: Array, gamma: Array, mean: Array, inv_std: Array
) -> tuple[Array, Array, Array]:
    """Backward of :func:`layernorm_forward`. Returns ``(grad_x, grad_gamma, grad_beta)``."""
    axes = _ln_axes(x, gamma)
    lead = tuple(range(x.ndim - gamma.ndim))
    xhat = (x - mean) * inv_std
    grad_xhat = grad_out * gamma
    grad_x = inv_std * (
        grad_xhat
        - grad_xhat.mean(axis=axes, keepdims=True)
        - xhat * (grad_xhat * xhat).mean(axis=axes, keepdims=True)
    )
    return grad_x, (grad_out * xhat).sum(axis=lead), grad_out.sum(axis=lead)


def _bn_axes(x: Array) -> tuple[int, ...]:
    if x.ndim < 2:
        raise ValueError(f"batchnorm expects (N, C, ...), got shape {x.shape}")
    return (0, *range(2, x.ndim))


def _bn_expand(v: Array, x: Array) -> Array:
    """View a per-channel (C,) vector so it broadcasts against (N, C, ...)."""
    return v.reshape((1, -1) + (1,) * (x.ndim - 2))


def _ln_axes(x: Array, gamma: Array) -> tuple[int, ...]:
    if x.shape[x.ndim - gamma.ndim :] != gamma.shape:
        raise ValueError(f"layernorm gamma {gamma.shape} must match the trailing axes of {x.shape}")
    return tuple(range(x.ndim - gamma.ndim, x.ndim))
