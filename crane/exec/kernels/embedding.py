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
