"""relu6, hardsigmoid and hardswish against PyTorch's definitions: values, finite-difference
gradients away from the kinks, PyTorch's subgradients at the kinks, dtypes kept."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels.activation import (
    ACTIVATIONS,
    hardsigmoid_backward,
    hardsigmoid_forward,
    hardswish_backward,
    hardswish_forward,
    relu6_backward,
    relu6_forward,
)

Fn = Callable[[Array], Array]
Bwd = Callable[[Array, Array], Array]

KINKS = np.array([-3.0, 0.0, 3.0, 6.0])
HARD: list[tuple[str, Fn, Bwd, Fn]] = [
    ("relu6", relu6_forward, relu6_backward, lambda x: np.minimum(np.maximum(x, 0.0), 6.0)),
    ("hardsigmoid", hardsigmoid_forward, hardsigmoid_backward,
     lambda x: np.where(x <= -3, 0.0, np.where(x >= 3, 1.0, x / 6 + 0.5))),
    ("hardswish", hardswish_forward, hardswish_backward,
     lambda x: np.where(x <= -3, 0.0, np.where(x >= 3, x, x * (x + 3) / 6))),
]


def _away_from_kinks(rng: np.random.Generator) -> Array:
    x = rng.uniform(-8, 9, (5, 9))
    near = np.min(np.abs(x[..., None] - KINKS), axis=-1) < 1e-2
    return np.where(near, 1.5, x)


@pytest.mark.parametrize(("name", "fwd", "bwd", "reference"), HARD, ids=[h[0] for h in HARD])
def test_values_and_gradients(name: str, fwd: Fn, bwd: Bwd, reference: Fn,
                              rng: np.random.Generator) -> None:
    x = _away_from_kinks(rng)
    np.testing.assert_allclose(fwd(x), reference(x), rtol=1e-14, atol=1e-15)
    check_gradients(fwd, lambda g, x: {"x": bwd(g, x)}, {"x": x})
    assert ACTIVATIONS[name].forward is fwd and ACTIVATIONS[name].backward is bwd


def test_pytorch_subgradients_at_the_kinks() -> None:
    x, g = np.array([-3.0, 0.0, 3.0, 6.0]), np.ones(4)
    np.testing.assert_array_equal(relu6_backward(g, x), [0.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(hardsigmoid_backward(g, x), [0.0, 1 / 6, 0.0, 0.0])
    # PyTorch: 0 below -3, x/3 + 1/2 from -3 to 3 inclusive, 1 above.
    np.testing.assert_allclose(hardswish_backward(g, x), [-0.5, 0.5, 1.5, 1.0])


@pytest.mark.parametrize("fwd", [h[1] for h in HARD], ids=[h[0] for h in HARD])
def test_float32_stays_float32(fwd: Fn) -> None:
    x = np.linspace(-5, 8, 14, dtype=np.float32)
    assert fwd(x).dtype == np.float32
