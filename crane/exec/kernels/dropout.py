"""Inverted dropout, forward and backward.

Training-mode semantics: each element is kept with probability ``1 - p`` and
kept elements are scaled by ``1 / (1 - p)``, so the expectation is unchanged
and inference needs no rescaling. The mask is boolean, True = kept. For
reproducibility the mask is either drawn from a caller-supplied
``numpy.random.Generator`` or passed in explicitly.
"""

import numpy as np

from crane.exec.kernels._types import Array, BoolArray


def dropout_mask(shape: tuple[int, ...], p: float, rng: np.random.Generator) -> BoolArray:
    """Draw a keep-mask of ``shape``: True with probability ``1 - p``."""
    _check_p(p)
    return rng.random(shape) >= p


def dropout_forward(
    x: Array,
    p: float,
    *,
    rng: np.random.Generator | None = None,
    mask: BoolArray | None = None,
) -> tuple[Array, BoolArray]:
    """Return ``(out, mask)`` with ``out = x * mask / (1 - p)``; exactly one of rng/mask is given."""
    _check_p(p)
    if (rng is None) == (mask is None):
        raise ValueError("dropout_forward needs exactly one of rng= or mask=")
    if mask is not None:
        return _apply(x, mask, p), mask
    assert rng is not None  # guaranteed by the exactly-one check above
    keep = dropout_mask(x.shape, p, rng)
    return _apply(x, keep, p), keep


def dropout_backward(grad_out: Array, mask: BoolArray, p: float) -> Array:
    """Gradient wrt ``x``: the same mask and scale applied to ``grad_out``."""
    _check_p(p)
    return _apply(grad_out, mask, p)


def _apply(x: Array, keep: BoolArray, p: float) -> Array:
    # p == 1 drops everything; avoid dividing by zero.
    if p >= 1.0:
        return np.zeros_like(x)
    return np.where(keep, x / (1.0 - p), 0.0).astype(x.dtype, copy=False)


def _check_p(p: float) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
