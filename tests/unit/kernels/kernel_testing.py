"""Finite-difference gradient checking helpers for the reference-kernel tests.

The check builds the scalar loss ``L = sum(forward(**inputs) * R)`` for a fixed
random projection ``R``, so ``backward(R, **inputs)`` must return dL/d(input).
Every element of every checked input is perturbed (central differences, step
``h``). The error measure is norm-based over the whole gradient array:
``||analytic - numeric|| / max(||analytic||, ||numeric||, 1e-300)``, which must be
<= ``tol`` (1e-6). Gradients that are identically zero in exact arithmetic (e.g. the
key bias of attention, which softmax cancels) leave only rounding noise on both
sides, so a check also passes when ``||analytic - numeric|| <= atol`` (1e-8).
"""

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.floating[Any]]
Forward = Callable[..., Array]
Backward = Callable[..., Mapping[str, Array]]


def numeric_gradient(loss: Callable[[], float], x: Array, h: float) -> Array:
    """Central-difference gradient of ``loss`` wrt ``x``, perturbing ``x`` in place (then restoring)."""
    grad = np.zeros_like(x)
    flat_x, flat_g = x.reshape(-1), grad.reshape(-1)
    for i in range(flat_x.size):
        orig = flat_x[i]
        flat_x[i] = orig + h
        plus = loss()
        flat_x[i] = orig - h
        minus = loss()
        flat_x[i] = orig
        flat_g[i] = (plus - minus) / (2.0 * h)
    return grad


def relative_error(a: Array, b: Array) -> float:
    """Norm-based relative error ``||a - b|| / max(||a||, ||b||, tiny)``."""
    scale = max(float(np.linalg.norm(a)), float(np.linalg.norm(b)), 1e-300)
    return float(np.linalg.norm(a - b)) / scale


def check_gradients(
    forward: Forward,
    backward: Backward,
    inputs: Mapping[str, Array],
    *,
    seed: int = 0,
    h: float = 1e-6,
    tol: float = 1e-6,
    atol: float = 1e-8,
) -> None:
    """Assert that ``backward`` matches finite differences of ``sum(forward(**inputs) * R)``."""
    work = {name: np.array(value, dtype=np.float64) for name, value in inputs.items()}
    out = forward(**work)
    proj = np.random.default_rng(seed).standard_normal(np.shape(out))
    analytic = backward(proj, **work)
    assert set(analytic) == set(work), (
        f"backward returned {sorted(analytic)}, inputs {sorted(work)}"
    )

    def loss() -> float:
        return float(np.sum(forward(**work) * proj))

    for name, grad in analytic.items():
        assert np.shape(grad) == work[name].shape, f"grad {name} has shape {np.shape(grad)}"
        numeric = numeric_gradient(loss, work[name], h)
        grad_arr = np.asarray(grad)
        if float(np.linalg.norm(grad_arr - numeric)) <= atol:
            continue
        err = relative_error(grad_arr, numeric)
        assert err <= tol, f"gradient of {name!r}: relative error {err:.3e} > {tol:.1e}"


def distinct_values(shape: tuple[int, ...], rng: np.random.Generator, gap: float = 0.1) -> Array:
    """Random-order values at least ``gap`` apart, so maxima are unique and FD-stable."""
    n = int(np.prod(shape))
    values: Any = rng.permutation(n) * gap - n * gap / 2
    return np.asarray(values, dtype=np.float64).reshape(shape)
