"""Activations against reference formulas and finite differences."""

import math
from collections.abc import Callable

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    gelu_backward,
    gelu_forward,
    relu_backward,
    relu_forward,
    sigmoid_backward,
    sigmoid_backward_from_output,
    sigmoid_forward,
    silu_backward,
    silu_forward,
    tanh_backward,
    tanh_backward_from_output,
    tanh_forward,
)
from crane.exec.kernels._special import erf

Fn = Callable[[Array], Array]
Bwd = Callable[[Array, Array], Array]


def _gelu_tanh(x: Array) -> Array:
    return gelu_forward(x, approximate=True)


def _gelu_tanh_bwd(g: Array, x: Array) -> Array:
    return gelu_backward(g, x, approximate=True)


def _reference(name: str, x: Array) -> Array:
    exact_gelu = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x.ravel()]).reshape(
        x.shape
    )
    table = {
        "relu": np.where(x > 0, x, 0.0),
        "sigmoid": 1 / (1 + np.exp(-x)),
        "tanh": np.tanh(x),
        "silu": x / (1 + np.exp(-x)),
        "gelu": exact_gelu,
        "gelu_tanh": 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3))),
    }
    return table[name]


ACTIVATIONS: list[tuple[str, Fn, Bwd]] = [
    ("relu", relu_forward, relu_backward),
    ("sigmoid", sigmoid_forward, sigmoid_backward),
    ("tanh", tanh_forward, tanh_backward),
    ("silu", silu_forward, silu_backward),
    ("gelu", gelu_forward, gelu_backward),
    ("gelu_tanh", _gelu_tanh, _gelu_tanh_bwd),
]


@pytest.mark.parametrize(("name", "fwd", "bwd"), ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation(name: str, fwd: Fn, bwd: Bwd, rng: np.random.Generator) -> None:
    x = rng.uniform(-4, 4, (3, 7))
    # Keep relu's kink at 0 out of reach of the finite-difference step.
    x = np.where(np.abs(x) < 1e-2, 0.5, x)
    np.testing.assert_allclose(fwd(x), _reference(name, x), rtol=1e-13, atol=1e-15)
    check_gradients(fwd, lambda g, x: {"x": bwd(g, x)}, {"x": x})


def test_backward_from_output(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 5))
    g = rng.standard_normal((4, 5))
    np.testing.assert_allclose(
        sigmoid_backward_from_output(g, sigmoid_forward(x)), sigmoid_backward(g, x)
    )
    np.testing.assert_allclose(tanh_backward_from_output(g, tanh_forward(x)), tanh_backward(g, x))


def test_sigmoid_is_stable_for_large_inputs() -> None:
    x = np.array([-1000.0, -40.0, 0.0, 40.0, 1000.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = sigmoid_forward(x)
    np.testing.assert_allclose(
        out, [0.0, 1 / (1 + math.exp(40)), 0.5, 1 / (1 + math.exp(-40)), 1.0]
    )


def test_erf_matches_math_erf() -> None:
    x = np.concatenate([np.linspace(-7, 7, 2001), [0.0, 1e-300, -1e-12, 30.0, -30.0]])
    expected = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x), expected, rtol=1e-14, atol=1e-15)
