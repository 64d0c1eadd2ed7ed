"""Broadcasting arithmetic, data movement, linear/matmul, embedding and dropout."""

from collections.abc import Mapping

import numpy as np
import pytest
from kernel_testing import Array, check_gradients

from crane.exec.kernels import (
    add_backward,
    add_forward,
    concat_backward,
    concat_forward,
    dropout_backward,
    dropout_forward,
    dropout_mask,
    embedding_backward,
    embedding_forward,
    linear_backward,
    linear_forward,
    matmul_backward,
    matmul_forward,
    mul_backward,
    mul_forward,
    reduce_to_shape,
    reshape_backward,
    reshape_forward,
    split_backward,
    split_forward,
    sub_backward,
    sub_forward,
    transpose_backward,
    transpose_forward,
)

BROADCAST_SHAPES = [
    ((2, 3), (2, 3)),
    ((2, 3, 4), (4,)),
    ((2, 1, 4), (3, 1)),
    ((1,), (2, 3)),
    ((2, 3, 1), (1, 3, 4)),
]


@pytest.mark.parametrize(("sa", "sb"), BROADCAST_SHAPES)
def test_add_sub_mul_gradients(
    sa: tuple[int, ...], sb: tuple[int, ...], rng: np.random.Generator
) -> None:
    inputs = {"a": rng.standard_normal(sa), "b": rng.standard_normal(sb)}

    def add_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        da, db = add_backward(g, a.shape, b.shape)
        return {"a": da, "b": db}

    def sub_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        da, db = sub_backward(g, a.shape, b.shape)
        return {"a": da, "b": db}

    def mul_bwd(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        da, db = mul_backward(g, a, b)
        return {"a": da, "b": db}

    check_gradients(add_forward, add_bwd, inputs)
    check_gradients(sub_forward, sub_bwd, inputs)
    check_gradients(mul_forward, mul_bwd, inputs)


def test_reduce_to_shape_keeps_and_sums_axes() -> None:
    g = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(reduce_to_shape(g, (3, 1)), g.sum(axis=(0, 2)).reshape(3, 1))
    np.testing.assert_array_equal(reduce_to_shape(g, ()), g.sum())
    assert reduce_to_shape(g, (2, 3, 4)) is g


def test_concat_split(rng: np.random.Generator) -> None:
    xs = {
        "a": rng.standard_normal((2, 1, 3)),
        "b": rng.standard_normal((2, 4, 3)),
        "c": rng.standard_normal((2, 2, 3)),
    }
    sizes = [1, 4, 2]

    def forward(a: Array, b: Array, c: Array) -> Array:
        return concat_forward([a, b, c], axis=1)

    def backward(g: Array, a: Array, b: Array, c: Array) -> Mapping[str, Array]:
        return dict(zip("abc", concat_backward(g, sizes, axis=1), strict=True))

    check_gradients(forward, backward, xs)
    whole = forward(**xs)
    pieces = split_forward(whole, sizes, axis=1)
    for piece, name in zip(pieces, "abc", strict=True):
        np.testing.assert_array_equal(piece, xs[name])
    np.testing.assert_array_equal(split_backward(pieces, axis=1), whole)
    with pytest.raises(ValueError, match="sum"):
        split_forward(whole, [1, 1], axis=1)


def test_reshape_transpose(rng: np.random.Generator) -> None:
    x = rng.standard_normal((2, 3, 4))
    perm = (2, 0, 1)
    check_gradients(
        lambda x: transpose_forward(x, perm),
        lambda g, x: {"x": transpose_backward(g, perm)},
        {"x": x},
    )
    check_gradients(
        lambda x: reshape_forward(x, (4, -1)),
        lambda g, x: {"x": reshape_backward(g, x.shape)},
        {"x": x},
    )


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias: bool, rng: np.random.Generator) -> None:
    inputs = {"x": rng.standard_normal((2, 3, 4)), "w": rng.standard_normal((4, 5))}
    if bias:
        inputs["b"] = rng.standard_normal(5)

    def forward(x: Array, w: Array, b: Array | None = None) -> Array:
        return linear_forward(x, w, b)

    def backward(g: Array, x: Array, w: Array, b: Array | None = None) -> Mapping[str, Array]:
        dx, dw, db = linear_backward(g, x, w, has_bias=b is not None)
        grads = {"x": dx, "w": dw}
        if db is not None:
            grads["b"] = db
        return grads

    check_gradients(forward, backward, inputs)


MATMUL_SHAPES = [
    ((3, 4), (4, 2)),
    ((2, 3, 4), (2, 4, 5)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3, 4), (2, 4, 2)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4,)),
    ((4,), (4,)),
]


@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul_broadcasting(
    sa: tuple[int, ...], sb: tuple[int, ...], rng: np.random.Generator
) -> None:
    def backward(g: Array, a: Array, b: Array) -> Mapping[str, Array]:
        da, db = matmul_backward(g, a, b)
        return {"a": da, "b": db}

    check_gradients(
        matmul_forward, backward, {"a": rng.standard_normal(sa), "b": rng.standard_normal(sb)}
    )


def test_embedding_repeated_ids(rng: np.random.Generator) -> None:
    ids = np.array([[0, 3, 3], [1, 0, 3]])
    table = rng.standard_normal((5, 4))
    np.testing.assert_array_equal(embedding_forward(table, ids)[0, 1], table[3])
    check_gradients(
        lambda table: embedding_forward(table, ids),
        lambda g, table: {"table": embedding_backward(g, ids, table.shape[0])},
        {"table": table},
    )
    grad = embedding_backward(np.ones((2, 3, 4)), ids, 5)
    np.testing.assert_array_equal(grad[:, 0], [2.0, 1.0, 0.0, 3.0, 0.0])
    with pytest.raises(IndexError):
        embedding_forward(table, np.array([5]))


def test_dropout_seeded_and_scaled(rng: np.random.Generator) -> None:
    x = rng.standard_normal((40, 50))
    p = 0.3
    out, mask = dropout_forward(x, p, rng=np.random.default_rng(7))
    again, mask2 = dropout_forward(x, p, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(out, again)
    np.testing.assert_array_equal(mask, mask2)
    np.testing.assert_allclose(out[mask], x[mask] / (1 - p))
    assert np.all(out[~mask] == 0)
    assert abs(mask.mean() - (1 - p)) < 0.05
    explicit, _ = dropout_forward(x, p, mask=mask)
    np.testing.assert_array_equal(explicit, out)
    small_mask = mask[:4, :5]
    check_gradients(
        lambda x: dropout_forward(x, p, mask=small_mask)[0],
        lambda g, x: {"x": dropout_backward(g, small_mask, p)},
        {"x": x[:4, :5].copy()},
    )


def test_dropout_edge_probabilities(rng: np.random.Generator) -> None:
    x = rng.standard_normal((3, 4))
    keep_all, _ = dropout_forward(x, 0.0, rng=rng)
    np.testing.assert_array_equal(keep_all, x)
    drop_all, mask = dropout_forward(x, 1.0, rng=rng)
    assert np.all(drop_all == 0) and not mask.any()
    assert dropout_mask((2, 2), 0.5, np.random.default_rng(0)).dtype == np.bool_
    with pytest.raises(ValueError):
        dropout_forward(x, 0.5)
