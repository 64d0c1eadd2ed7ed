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
from crane.exec.kernels import norm_parts as parts

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


@pytest.mark.parametrize("split", [0, 2])
def test_batchnorm_from_parts_of_the_batch(split: int, rng: np.random.Generator) -> None:
    x = (rng.standard_normal((4, 3, 5, 6)) * 3 + 10).astype(np.float32)
    g = rng.standard_normal(x.shape).astype(np.float32)
    gamma, beta = rng.standard_normal(3).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    count = 4 * 5 * 6
    # Uneven boxes along the batch (split 0) or the rows (split 2).
    cuts = np.split(np.arange(x.shape[split]), [1, 3])
    xs, gs = [np.take(x, c, axis=split) for c in cuts], [np.take(g, c, axis=split) for c in cuts]
    s = sum(parts.batchnorm_sum(b) for b in xs)
    q = sum(parts.batchnorm_sqdev(b, s, count=count) for b in xs)
    y = np.concatenate([parts.batchnorm_apply(b, s, q, gamma, beta, count=count, eps=EPS) for b in xs], split)
    out, mean, inv_std = batchnorm_forward_train(x, gamma, beta, eps=EPS)
    np.testing.assert_allclose(y, out, rtol=1e-5, atol=1e-5)
    sums = [parts.batchnorm_grad_sums(a, b, s, q, count=count, eps=EPS) for a, b in zip(gs, xs, strict=True)]
    dgamma, dbeta = sum(p[0] for p in sums), sum(p[1] for p in sums)
    dx = np.concatenate([parts.batchnorm_grad_apply(a, b, s, q, dgamma, dbeta, gamma, count=count, eps=EPS)
                         for a, b in zip(gs, xs, strict=True)], split)
    want_dx, want_dgamma, want_dbeta = batchnorm_backward_train(g, x, gamma, mean, inv_std)
    np.testing.assert_allclose(dx, want_dx, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dgamma, want_dgamma, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(dbeta, want_dbeta, rtol=1e-4, atol=1e-4)
