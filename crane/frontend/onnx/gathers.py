"""ONNX's gathers in numpy, and gathers of an activation at constant indices as a slice.

``Gather``, ``GatherElements`` and ``GatherND`` of constants fold with these functions
rather than ``onnx.reference``, whose ``GatherElements`` fails on the position ids that
Hugging Face's BERT gathers ("cannot reshape array of size 1 into shape (1,32)").

For an activation gathered at constant indices, the same function applied to the
*positions* of its elements (``arange(size).reshape(shape)``) says which element each
output takes; when those are one contiguous block along one axis, in order, the gather is
a ``graph.slice`` of that axis (then a ``graph.reshape``), and when they are all elements
in order, a reshape alone (:func:`as_slice`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


class GatherError(ValueError):
    """Indices or attributes that make the gather undefined (out of range, bad rank)."""


def _normalised(indices: np.ndarray, size: int) -> np.ndarray:
    if not np.issubdtype(indices.dtype, np.integer):
        raise GatherError(f"indices must be integers, got {indices.dtype}")
    fixed = np.where(indices < 0, indices + size, indices).astype(np.int64)
    if fixed.size and (fixed.min() < 0 or fixed.max() >= size):
        raise GatherError(f"an index is out of range for an axis of size {size}")
    return fixed


def _axis(axis: int, rank: int) -> int:
    if not -rank <= axis < rank:
        raise GatherError(f"axis {axis} is out of range for rank {rank}")
    return axis % rank


def gather(data: np.ndarray, indices: np.ndarray, axis: int = 0) -> np.ndarray:
    """ONNX ``Gather``: ``np.take`` along ``axis`` (negative indices count from the end)."""
    axis = _axis(axis, data.ndim)
    return np.take(data, _normalised(np.asarray(indices), data.shape[axis]), axis=axis)


def gather_elements(data: np.ndarray, indices: np.ndarray, axis: int = 0) -> np.ndarray:
    """ONNX ``GatherElements``: ``out[i][j] = data[indices[i][j]][j]`` for ``axis`` 0, and so
    on; ``indices`` has the rank of ``data`` and may be smaller along the other axes."""
    indices = np.asarray(indices)
    if indices.ndim != data.ndim:
        raise GatherError(f"indices of rank {indices.ndim} for data of rank {data.ndim}")
    axis = _axis(axis, data.ndim)
    if any(i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape, strict=True)) if k != axis):
        raise GatherError(f"indices of shape {list(indices.shape)} exceed data of shape {list(data.shape)}")
    window = tuple(slice(None) if k == axis else slice(0, n) for k, n in enumerate(indices.shape))
    return np.take_along_axis(data[window], _normalised(indices, data.shape[axis]), axis=axis)


def gather_nd(data: np.ndarray, indices: np.ndarray, batch_dims: int = 0) -> np.ndarray:
    """ONNX ``GatherND``: the last axis of ``indices`` addresses the leading axes of
    ``data`` after ``batch_dims`` shared batch axes."""
    indices = np.asarray(indices)
    depth = int(indices.shape[-1]) if indices.ndim else 0
    if indices.ndim < 1 or batch_dims < 0 or batch_dims + depth > data.ndim:
        raise GatherError(f"indices of shape {list(indices.shape)} cannot address data of shape "
                          f"{list(data.shape)} with batch_dims={batch_dims}")
    if data.shape[:batch_dims] != indices.shape[:batch_dims]:
        raise GatherError("data and indices differ in their batch dimensions")
    batch = data.shape[:batch_dims]
    flat_data = data.reshape((-1, *data.shape[batch_dims:]))
    flat_indices = indices.reshape((-1, *indices.shape[batch_dims:]))
    parts = [_gather_nd_one(d, i) for d, i in zip(flat_data, flat_indices, strict=True)]
    rest = indices.shape[batch_dims:-1] + data.shape[batch_dims + depth:]
    return np.stack(parts).reshape((*batch, *rest)) if parts else np.zeros((*batch, *rest), data.dtype)


def _gather_nd_one(data: np.ndarray, indices: np.ndarray) -> np.ndarray:
    depth = indices.shape[-1]
    columns = [_normalised(indices[..., k], data.shape[k]) for k in range(depth)]
    return data[tuple(columns)]


GATHERS: dict[str, Callable[[np.ndarray, np.ndarray, int], np.ndarray]] = {
    "Gather": gather, "GatherElements": gather_elements, "GatherND": gather_nd,
}
"""ONNX gather -> its numpy form, taking the ``axis`` (``batch_dims`` for ``GatherND``)."""


def gather_parameter(op_type: str, attrs: dict[str, object]) -> int:
    """The integer attribute of a gather: ``batch_dims`` for ``GatherND``, else ``axis``."""
    value = attrs.get("batch_dims" if op_type == "GatherND" else "axis", 0)
    return int(value) if isinstance(value, int | np.integer) else 0


def as_slice(shape: tuple[int, ...], positions: np.ndarray) -> tuple[int, int, int] | None:
    """``(axis, start, stop)`` when the element positions ``positions`` (in row-major order)
    are exactly the elements of ``shape`` cut to ``start..stop`` along ``axis``, in order;
    None otherwise. All of a tensor is ``(0, 0, shape[0])``."""
    size = int(np.prod(shape))
    flat = positions.reshape(-1)
    if not shape or not flat.size or flat.min() < 0 or flat.max() >= size:
        return None
    every = np.arange(size).reshape(shape)
    low, high = np.unravel_index(int(flat.min()), shape), np.unravel_index(int(flat.max()), shape)
    for axis in range(len(shape)):
        start, stop = int(low[axis]), int(high[axis]) + 1
        cut = np.take(every, np.arange(start, stop), axis=axis).reshape(-1)
        if cut.size == flat.size and bool(np.array_equal(cut, flat)):
            return axis, start, stop
    return None
