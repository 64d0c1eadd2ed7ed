"""The finite-difference checker itself must reject wrong gradients."""

import numpy as np
import pytest
from kernel_testing import check_gradients


def test_gradcheck_rejects_a_wrong_gradient(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    with pytest.raises(AssertionError, match="relative error"):
        check_gradients(lambda x: x**3, lambda g, x: {"x": g * 3 * x**2 * (1 + 1e-5)}, {"x": x})


def test_gradcheck_accepts_the_right_gradient(rng: np.random.Generator) -> None:
    check_gradients(
        lambda x: x**3, lambda g, x: {"x": g * 3 * x**2}, {"x": rng.standard_normal((3, 4))}
    )
