"""Batchnorm and layernorm against reference formulas and finite differences."""

from collections.abc import Mapping

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    batchnorm_backward_inference,
    batchnorm_backward_train,
    batchnorm_forward_inference,
    batchnorm_forward_train,
    batchnorm_running_stats,
    layernorm_backward,
    layernorm_forward,
)

EPS = 1e-5


@pytest.mark.parametrize("shape", [(4, 3, 2, 3), (5, 2), (3, 2, 4)])
def test_batchnorm_train(shape: tuple[int, ...], rng: np.random.Generator) -> None:
    c = shape[1]
    inputs = {
        "x": rng.standard_normal(shape) * 2 + 1,
        "gamma": rng.standard_normal(c),
        "beta": rng.standard_normal(c),
    }
    axes = (0, *range(2, len(shape)))
    out, mean, inv_std = batchnorm_forward_train(**inputs, eps=EPS)
    np.testing.assert_allclose(mean, inputs["x"].mean(axis=axes))
    np.testing.assert_allclose(inv_std, 1 / np.sqrt(inputs["x"].var(axis=axes) + EPS))
    normalised = (out - inputs["beta"].reshape(1, c, *[1] * (len(shape) - 2))) / inputs[
        "gamma"
    ].reshape(1, c, *[1] * (len(shape) - 2))
    np.testing.assert_allclose(normalised.mean(axis=axes), 0, atol=1e-12)

    def forward(x: Array, gamma: Array, beta: Array) -> Array:
        return batchnorm_forward_train(x, gamma, beta, eps=EPS)[0]

    def backward(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        _, mean, inv_std = batchnorm_forward_train(x, gamma, beta, eps=EPS)
        dx, dgamma, dbeta = batchnorm_backward_train(g, x, gamma, mean, inv_std)
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    check_gradients(forward, backward, inputs)


def test_batchnorm_inference(rng: np.random.Generator) -> None:
    inputs = {
        "x": rng.standard_normal((3, 2, 2, 2)),
        "gamma": rng.standard_normal(2),
        "beta": rng.standard_normal(2),
    }
    running_mean = rng.standard_normal(2)
    running_var = rng.uniform(0.5, 2.0, 2)
    out = batchnorm_forward_inference(
        **inputs, running_mean=running_mean, running_var=running_var, eps=EPS
    )
    expected = (inputs["x"] - running_mean[:, None, None]) / np.sqrt(
        running_var[:, None, None] + EPS
    )
    expected = expected * inputs["gamma"][:, None, None] + inputs["beta"][:, None, None]
    np.testing.assert_allclose(out, expected, rtol=1e-13)

    def forward(x: Array, gamma: Array, beta: Array) -> Array:
        return batchnorm_forward_inference(x, gamma, beta, running_mean, running_var, eps=EPS)

    def backward(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        dx, dgamma, dbeta = batchnorm_backward_inference(
            g, x, gamma, running_mean, running_var, eps=EPS
        )
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    check_gradients(forward, backward, inputs)


def test_batchnorm_running_stats(rng: np.random.Generator) -> None:
    x = rng.standard_normal((4, 3, 2, 2))
    mean, var = batchnorm_running_stats(np.zeros(3), np.ones(3), x, momentum=0.25)
    np.testing.assert_allclose(mean, 0.25 * x.mean(axis=(0, 2, 3)))
    np.testing.assert_allclose(var, 0.75 + 0.25 * x.var(axis=(0, 2, 3), ddof=1))


@pytest.mark.parametrize(("shape", "norm_ndim"), [((2, 3, 5), 1), ((2, 3, 4), 2), ((6,), 1)])
def test_layernorm(shape: tuple[int, ...], norm_ndim: int, rng: np.random.Generator) -> None:
    norm_shape = shape[len(shape) - norm_ndim :]
    inputs = {
        "x": rng.standard_normal(shape) * 3 - 1,
        "gamma": rng.standard_normal(norm_shape),
        "beta": rng.standard_normal(norm_shape),
    }
    axes = tuple(range(len(shape) - norm_ndim, len(shape)))
    out, mean, inv_std = layernorm_forward(**inputs, eps=EPS)
    x = inputs["x"]
    expected = (x - x.mean(axis=axes, keepdims=True)) / np.sqrt(
        x.var(axis=axes, keepdims=True) + EPS
    )
    np.testing.assert_allclose(
        out, expected * inputs["gamma"] + inputs["beta"], rtol=1e-12, atol=1e-12
    )
    assert mean.shape == inv_std.shape == shape[: len(shape) - norm_ndim] + (1,) * norm_ndim

    def forward(x: Array, gamma: Array, beta: Array) -> Array:
        return layernorm_forward(x, gamma, beta, eps=EPS)[0]

    def backward(g: Array, x: Array, gamma: Array, beta: Array) -> Mapping[str, Array]:
        _, mean, inv_std = layernorm_forward(x, gamma, beta, eps=EPS)
        dx, dgamma, dbeta = layernorm_backward(g, x, gamma, mean, inv_std)
        return {"x": dx, "gamma": dgamma, "beta": dbeta}

    check_gradients(forward, backward, inputs)
