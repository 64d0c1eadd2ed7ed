"""Elementwise arithmetic with broadcasting and data-movement ops, forward and backward.

Broadcasting follows numpy. The backward of a broadcasting op sums the output
gradient back to each operand's shape (:func:`reduce_to_shape`).
"""

from collections.abc import Sequence

import numpy as np

from crane.exec.kernels._types import Array


def reduce_to_shape(grad: Array, shape: tuple[int, ...]) -> Array:
    """Sum ``grad`` over the axes that numpy broadcasting expanded from ``shape``."""
    if grad.shape == tuple(shape):
        return grad
    lead = grad.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"cannot reduce gradient of shape {grad.shape} to {shape}")
    stretched = tuple(
        lead + k for k, size in enumerate(shape) if size == 1 and grad.shape[lead + k] != 1
    )
    summed = grad.sum(axis=tuple(range(lead)) + stretched, keepdims=True)
    return summed.reshape(shape)


def add_forward(a: Array, b: Array) -> Array:
    """Broadcasting ``a + b``."""
    return np.add(a, b)


def add_backward(
    grad_out: Array, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> tuple[Array, Array]:
    """Return ``(grad_a, grad_b)`` of ``a + b``."""
    return reduce_to_shape(grad_out, a_shape), reduce_to_shape(grad_out, b_shape)


def sub_forward(a: Array, b: Array) -> Array:
    """Broadcasting ``a - b``."""
    return np.subtract(a, b)


def sub_backward(
    grad_out: Array, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> tuple[Array, Array]:
    """Return ``(grad_a, grad_b)`` of ``a - b``."""
    return reduce_to_shape(grad_out, a_shape), reduce_to_shape(-grad_out, b_shape)


def mul_forward(a: Array, b: Array) -> Array:
    """Broadcasting ``a * b``."""
    return np.multiply(a, b)


def mul_backward(grad_out: Array, a: Array, b: Array) -> tuple[Array, Array]:
    """Return ``(grad_a, grad_b)`` of ``a * b``."""
    return reduce_to_shape(grad_out * b, a.shape), reduce_to_shape(grad_out * a, b.shape)


def concat_forward(xs: Sequence[Array], axis: int) -> Array:
    """Concatenate along ``axis``."""
    return np.concatenate(list(xs), axis=axis)


def concat_backward(grad_out: Array, sizes: Sequence[int], axis: int) -> list[Array]:
    """Split ``grad_out`` back into per-input gradients; ``sizes`` are the inputs' extents on ``axis``."""
    return split_forward(grad_out, sizes, axis)


def split_forward(x: Array, sizes: Sequence[int], axis: int) -> list[Array]:
    """Split ``x`` along ``axis`` into consecutive pieces of the given ``sizes`` (must sum to the extent)."""
    if sum(sizes) != x.shape[axis]:
        raise ValueError(f"split sizes {list(sizes)} do not sum to extent {x.shape[axis]}")
    cuts = np.cumsum(sizes)[:-1]
    return list(np.split(x, cuts, axis=axis))


def split_backward(grads: Sequence[Array], axis: int) -> Array:
    """Gradient wrt the split input: the piece gradients concatenated back."""
    return np.concatenate(list(grads), axis=axis)


def reshape_forward(x: Array, shape: tuple[int, ...]) -> Array:
    """Row-major reshape (numpy semantics, one -1 allowed)."""
    return x.reshape(shape)


def reshape_backward(grad_out: Array, input_shape: tuple[int, ...]) -> Array:
    """Gradient wrt the reshape input: ``grad_out`` viewed as ``input_shape``."""
    return grad_out.reshape(input_shape)


def transpose_forward(x: Array, perm: Sequence[int]) -> Array:
    """Permute axes: output axis k is input axis ``perm[k]``."""
    return np.transpose(x, tuple(perm))


def transpose_backward(grad_out: Array, perm: Sequence[int]) -> Array:
    """Gradient wrt the transpose input: ``grad_out`` permuted by the inverse of ``perm``."""
    return np.transpose(grad_out, tuple(np.argsort(perm)))
