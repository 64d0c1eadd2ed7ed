"""Batchnorm with batch statistics computed from parts of the batch (as tiles do).

A tile holding a box of ``x`` (N, C, ...) contributes per-channel partial sums; the sums of
all boxes of a channel range give the statistics of the whole batch, in two rounds so the
variance is a sum of squared deviations from the final mean (no cancellation):

    s = sum over boxes of batchnorm_sum(x_box)                  # (C,)
    q = sum over boxes of batchnorm_sqdev(x_box, s, count)      # (C,)
    y_box = batchnorm_apply(x_box, s, q, gamma, beta, count, eps)

and backward, with ``g`` the result's gradient on the same boxes:

    dgamma, dbeta = sums over boxes of batchnorm_grad_sums(g_box, x_box, s, q, count, eps)
    dx_box = batchnorm_grad_apply(g_box, x_box, s, q, dgamma, dbeta, gamma, count, eps)

``count`` is the number of values per channel in the whole batch (N times the spatial
size). The results equal :func:`crane.exec.kernels.norm.batchnorm_forward_train` and
:func:`~crane.exec.kernels.norm.batchnorm_backward_train` up to rounding.
"""

import numpy as np

from crane.exec.kernels._types import Array
from crane.exec.kernels.norm import _bn_axes as _axes
from crane.exec.kernels.norm import _bn_expand as _expand


def _normalised(x: Array, s: Array, q: Array, count: int, eps: float) -> tuple[Array, Array]:
    """``(xhat, inv_std)`` from the channel sums."""
    mean = s / count
    inv_std = 1.0 / np.sqrt(q / count + eps)
    return (x - _expand(mean, x)) * _expand(inv_std, x), inv_std


def batchnorm_sum(x: Array) -> Array:
    """Per-channel sum of a box of the batch."""
    return x.sum(axis=_axes(x))


def batchnorm_sqdev(x: Array, s: Array, *, count: int) -> Array:
    """Per-channel sum of squared deviations from the batch mean ``s / count``."""
    centred = x - _expand(s / count, x)
    return (centred * centred).sum(axis=_axes(x))


def batchnorm_apply(x: Array, s: Array, q: Array, gamma: Array, beta: Array, *, count: int,
                    eps: float) -> Array:
    """The normalised box, scaled and shifted."""
    xhat, _ = _normalised(x, s, q, count, eps)
    return _expand(gamma, x) * xhat + _expand(beta, x)


def batchnorm_grad_sums(g: Array, x: Array, s: Array, q: Array, *, count: int,
                        eps: float) -> tuple[Array, Array]:
    """A box's share of ``(dgamma, dbeta)``: sums of ``g * xhat`` and of ``g``."""
    xhat, _ = _normalised(x, s, q, count, eps)
    axes = _axes(x)
    return (g * xhat).sum(axis=axes), g.sum(axis=axes)


def batchnorm_grad_apply(g: Array, x: Array, s: Array, q: Array, dgamma: Array, dbeta: Array,
                         gamma: Array, *, count: int, eps: float) -> Array:
    """The input gradient of a box, given the whole batch's ``dgamma`` and ``dbeta``."""
    xhat, inv_std = _normalised(x, s, q, count, eps)
    scale = _expand(gamma * inv_std / count, x)
    return scale * (count * g - _expand(dbeta, x) - xhat * _expand(dgamma, x))
