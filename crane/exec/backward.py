"""Backward rules of the reference interpreter, for ``graph.<kind>_grad_input`` and
``graph.<kind>_grad_weight`` ops.

An input rule returns the gradient of every forward input (None for integer inputs such as
labels); the interpreter keeps the ones the op's ``wrt`` lists. A weight rule returns the
gradient of every forward weight. Both recompute what they need from the forward values
they are given (batch statistics, softmax, attention probabilities, dropout masks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from crane.exec import kernels as K
from crane.exec.forward import (
    COUNT,
    ROW_OFFSET,
    Call,
    attention_call,
    conv_args,
    dropout_keep,
    pool_args,
    softmax_probs,
)
from crane.exec.kernels.activation import ACTIVATIONS

Array = np.ndarray
Grads = list[Array | None]
Rule = Callable[[Call, Array], Grads]


def _conv_input(c: Call, g: Array) -> Grads:
    x, w = c.inputs[0], c.weights[0]
    return [K.conv2d_backward_input(g, w, x.shape, **conv_args(c))]  # type: ignore[arg-type]


def _conv_weight(c: Call, g: Array) -> Grads:
    w = c.weights[0]
    grads: Grads = [K.conv2d_backward_weight(g, c.inputs[0], w.shape, **conv_args(c))]  # type: ignore[arg-type]
    return grads + [K.conv2d_backward_bias(g)] if len(c.weights) > 1 else grads


def _linear_weight(c: Call, g: Array) -> Grads:
    # Reads the input and the output gradient only (the weight is given for its shape).
    x = c.inputs[0]
    rows_x, rows_g = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
    gw = rows_x.T @ rows_g
    return [gw] if len(c.weights) < 2 else [gw, rows_g.sum(axis=0)]


def _matmul(c: Call, g: Array) -> Grads:
    a, b = c.inputs
    if not c.flag("transpose_b"):
        return list(K.matmul_backward(g, a, b))
    ga, gbt = K.matmul_backward(g, a, np.swapaxes(b, -1, -2))
    return [ga, np.swapaxes(gbt, -1, -2)]


def _norm(c: Call, g: Array) -> tuple[Array, Array, Array]:
    x, gamma, beta = c.inputs[0], c.weights[0], c.weights[1]
    eps = c.number("eps", 1e-5)
    if c.extra.get("kind") == "layernorm":
        _, mean, inv_std = K.layernorm_forward(x, gamma, beta, eps=eps)
        return K.layernorm_backward(g, x, gamma, mean, inv_std)
    _, mean, inv_std = K.batchnorm_forward_train(x, gamma, beta, eps=eps)
    return K.batchnorm_backward_train(g, x, gamma, mean, inv_std)


def _attention_input(c: Call, g: Array) -> Grads:
    grads = K.attention_backward(g, attention_call(c)[1])
    if len(c.inputs) > 1:
        return [grads.x_q, grads.x_kv]
    return [grads.x_q + grads.x_kv]


def _attention_weight(c: Call, g: Array) -> Grads:
    grads = K.attention_backward(g, attention_call(c)[1])
    names = ("wq", "wk", "wv", "wo", "bq", "bk", "bv", "bo")[: len(c.weights)]
    return [getattr(grads, n) for n in names]


def _pool(c: Call, g: Array) -> Grads:
    x = c.inputs[0]
    args = pool_args(c, x.shape, g.shape)
    if c.extra.get("kind") == "max_pool2d":
        return [K.max_pool2d_backward(g, x, **args)]  # type: ignore[arg-type]
    return [K.avg_pool2d_backward(g, x.shape, **args)]  # type: ignore[arg-type]


def _dropout(c: Call, g: Array) -> Grads:
    if not c.training or c.number("rate") == 0.0:
        return [g]
    return [K.dropout_backward(g, dropout_keep(c, g.shape), c.number("rate"))]


def _slice(c: Call, g: Array) -> Grads:
    x = c.inputs[0]
    grad = np.zeros_like(x, dtype=g.dtype)
    index = [slice(None)] * x.ndim
    index[c.integer("axis")] = slice(c.integer("start"), c.integer("stop"))
    grad[tuple(index)] = g
    return [grad]


def _concat(c: Call, g: Array) -> Grads:
    axis = c.integer("axis")
    return list(K.concat_backward(g, [x.shape[axis] for x in c.inputs], axis))


def _cross_entropy(c: Call, g: Array) -> Grads:
    labels = np.asarray(c.inputs[1]).astype(np.int64)
    grad = K.softmax_cross_entropy(c.inputs[0], labels, grad_loss=g)[1]
    if COUNT in c.attrs:  # a part of the rows: the mean is over every label position
        grad = grad * (max(labels.size, 1) / c.integer(COUNT))
    return [grad, None]


def _unary(backward: Callable[[Array, Array], Array]) -> Rule:
    return lambda c, g: [backward(g, c.inputs[0])]


def _embedding(c: Call, g: Array) -> Grads:
    table, ids = c.weights[0], np.asarray(c.inputs[0]).astype(np.int64)
    if ROW_OFFSET in c.attrs:
        return [K.embedding_rows_backward(g, ids, c.integer(ROW_OFFSET), table.shape[0])]
    return [K.embedding_backward(g, ids, table.shape[0])]


GRAD_INPUT: Mapping[str, Rule] = {
    "conv2d": _conv_input,
    "max_pool2d": _pool,
    "avg_pool2d": _pool,
    "global_avg_pool": lambda c, g: [K.global_avg_pool2d_backward(g, c.inputs[0].shape)],
    "linear": lambda c, g: [np.matmul(g, c.weights[0].T)],
    "matmul": _matmul,
    "batchnorm": lambda c, g: [_norm(c, g)[0]],
    "layernorm": lambda c, g: [_norm(c, g)[0]],
    **{name: _unary(kernels.backward) for name, kernels in ACTIVATIONS.items()},
    "softmax": lambda c, g: [K.softmax_backward(g, softmax_probs(c, c.inputs[0]), axis=c.integer("axis"))
                             * c.number("scale", 1.0)],
    "add": lambda c, g: list(K.add_backward(g, c.inputs[0].shape, c.inputs[1].shape)),
    "mul": lambda c, g: list(K.mul_backward(g, *c.inputs)),
    "concat": _concat,
    "reshape": lambda c, g: [K.reshape_backward(g, c.inputs[0].shape)],
    "flatten": lambda c, g: [K.reshape_backward(g, c.inputs[0].shape)],
    "transpose": lambda c, g: [K.transpose_backward(g, c.ints("perm"))],
    "slice": _slice,
    "embedding": lambda c, g: [None],
    "attention": _attention_input,
    "dropout": _dropout,
    "cross_entropy": _cross_entropy,
    "mse": lambda c, g: list(K.mse_loss_backward(*c.inputs, grad_loss=g)),
}
"""Layer kind -> input-gradient rule."""

GRAD_WEIGHT: Mapping[str, Rule] = {
    "conv2d": _conv_weight,
    "linear": _linear_weight,
    "batchnorm": lambda c, g: list(_norm(c, g)[1:]),
    "layernorm": lambda c, g: list(_norm(c, g)[1:]),
    "embedding": _embedding,
    "attention": _attention_weight,
}
"""Layer kind -> weight-gradient rule."""
