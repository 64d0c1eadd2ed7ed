"""Linear layers and batched matmul, forward and backward.

``linear``: input (..., IN), weight (IN, OUT), optional bias (OUT,), output (..., OUT).
``matmul``: numpy ``matmul`` semantics, (..., M, K) @ (..., K, N) -> (..., M, N) with
broadcast batch dims; 1-D operands are promoted as numpy does (and the promoted
axis is dropped again).
"""

import numpy as np

from crane.exec.kernels._types import Array
from crane.exec.kernels.tensor_ops import reduce_to_shape


def linear_forward(x: Array, weight: Array, bias: Array | None = None) -> Array:
    """``x @ weight + bias`` over the last axis of ``x``."""
    out = np.matmul(x, weight)
    if bias is None:
        return out
    return out + bias


def linear_backward(
    grad_out: Array, x: Array, weight: Array, *, has_bias: bool = True
) -> tuple[Array, Array, Array | None]:
    """Return ``(grad_x, grad_weight, grad_bias)``; ``grad_bias`` is None when ``has_bias`` is False."""
    grad_x = np.matmul(grad_out, weight.T)
    # Every leading axis of x is a batch of rows sharing the same weight.
    rows_x = x.reshape(-1, x.shape[-1])
    rows_g = grad_out.reshape(-1, grad_out.shape[-1])
    grad_w = rows_x.T @ rows_g
    if not has_bias:
        return grad_x, grad_w, None
    return grad_x, grad_w, rows_g.sum(axis=0)


def matmul_forward(a: Array, b: Array) -> Array:
    """Batched matrix product with broadcasting batch dims (``numpy.matmul``)."""
    return np.matmul(a, b)


def matmul_backward(grad_out: Array, a: Array, b: Array) -> tuple[Array, Array]:
    """Return ``(grad_a, grad_b)`` of ``a @ b``, reduced back over broadcast batch dims."""
    a2 = a[None, :] if a.ndim == 1 else a
    b2 = b[:, None] if b.ndim == 1 else b
    g2 = grad_out
    # Re-insert the axes numpy dropped for 1-D operands so the 2-D rules apply.
    # (b's axis first, so that a 0-d gradient from vector @ vector stays well-formed).
    if b.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    if a.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    grad_a = reduce_to_shape(np.matmul(g2, np.swapaxes(b2, -1, -2)), a2.shape)
    grad_b = reduce_to_shape(np.matmul(np.swapaxes(a2, -1, -2), g2), b2.shape)
    return grad_a.reshape(a.shape), grad_b.reshape(b.shape)
