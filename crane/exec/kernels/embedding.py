"""Embedding lookup, forward and backward.

Table layout (V, D): row ``v`` is the vector of id ``v``. Ids are an integer
array of any shape (...); the output is (..., D).
"""

import numpy as np

from crane.exec.kernels._types import Array, IntArray


def embedding_forward(table: Array, ids: IntArray) -> Array:
    """Gather rows: ``out[..., :] = table[ids[...], :]``. Ids must lie in [0, V)."""
    _check_ids(ids, table.shape[0])
    return table[ids]


def embedding_backward(grad_out: Array, ids: IntArray, num_embeddings: int) -> Array:
    """Gradient wrt the (V, D) table: scatter-add each output row into its id's row."""
    _check_ids(ids, num_embeddings)
    dim = grad_out.shape[-1]
    grad = np.zeros((num_embeddings, dim), dtype=grad_out.dtype)
    # add.at accumulates repeated ids, which plain fancy-index assignment would not.
    np.add.at(grad, ids.reshape(-1), grad_out.reshape(-1, dim))
    return grad


def _check_ids(ids: IntArray, num_embeddings: int) -> None:
    if not np.issubdtype(ids.dtype, np.integer):
        raise TypeError(f"embedding ids must be integers, got {ids.dtype}")
    if ids.size and (ids.min() < 0 or ids.max() >= num_embeddings):
        raise IndexError(f"embedding ids must lie in [0, {num_embeddings})")


def embedding_rows_forward(rows: Array, ids: IntArray, offset: int) -> Array:
    """The part of :func:`embedding_forward` that table rows ``offset .. offset + len(rows)``
    give: those ids' rows, zero for the others (the parts of a table add up to the lookup)."""
    local = np.asarray(ids).astype(np.int64) - offset
    inside = (local >= 0) & (local < rows.shape[0])
    out = np.zeros((*local.shape, rows.shape[1]), dtype=rows.dtype)
    out[inside] = rows[local[inside]]
    return out


def embedding_rows_backward(grad_out: Array, ids: IntArray, offset: int, count: int) -> Array:
    """Rows ``offset .. offset + count`` of :func:`embedding_backward`'s table gradient."""
    local = np.asarray(ids).astype(np.int64).reshape(-1) - offset
    inside = (local >= 0) & (local < count)
    dim = grad_out.shape[-1]
    grad = np.zeros((count, dim), dtype=grad_out.dtype)
    np.add.at(grad, local[inside], grad_out.reshape(-1, dim)[inside])
    return grad
