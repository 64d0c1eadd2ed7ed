"""Forward rules of the reference interpreter: one numpy function per layer kind.

Each rule takes a :class:`Call` (the op's attributes, input and weight arrays, result
shape) and returns the result array. Rules call :mod:`crane.exec.kernels`; none loops
over pixels.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from crane.dialects.layers.values import AttrValue
from crane.exec import kernels as K
from crane.exec.kernels.activation import ACTIVATIONS

Array = np.ndarray


@dataclass(frozen=True)
class Call:
    """What a rule sees of one op: attributes, arrays and the result shape."""

    attrs: Mapping[str, AttrValue]
    inputs: Sequence[Array]
    weights: Sequence[Array]
    out_shape: tuple[int, ...]
    key: str = ""
    """Identifies a dropout op, so its backward redraws the same mask."""
    seed: int = 0
    training: bool = True
    extra: Mapping[str, object] = field(default_factory=dict)

    def pair(self, name: str) -> tuple[int, int]:
        value = self.attrs[name]
        assert isinstance(value, tuple)
        return int(value[0]), int(value[1])

    def integer(self, name: str) -> int:
        value = self.attrs[name]
        assert isinstance(value, int)
        return value

    def ints(self, name: str) -> tuple[int, ...]:
        value = self.attrs[name]
        assert isinstance(value, tuple)
        return tuple(int(v) for v in value)

    def flag(self, name: str) -> bool:
        return bool(self.attrs.get(name, False))

    def number(self, name: str, default: float = 0.0) -> float:
        value = self.attrs.get(name, default)
        assert isinstance(value, int | float)
        return float(value)


Rule = Callable[[Call], Array]


def conv_args(c: Call) -> dict[str, object]:
    """Keyword arguments of the conv kernels."""
    x = c.inputs[0]
    groups = x.shape[1] if c.flag("depthwise") else c.integer("groups")
    pad = c.ints("padding")
    return {"stride": c.pair("stride"), "padding": (pad[0], pad[1], pad[2], pad[3]),
            "dilation": c.pair("dilation"), "groups": groups}


def pool_args(c: Call, x_shape: tuple[int, ...], out_shape: tuple[int, ...]) -> dict[str, object]:
    """Keyword arguments of the pool kernels; ceil mode becomes extra bottom/right padding."""
    kernel, stride = c.pair("kernel"), c.pair("stride")
    top, bottom, left, right = c.ints("padding")
    bottom = max(bottom, (out_shape[-2] - 1) * stride[0] + kernel[0] - x_shape[-2] - top)
    right = max(right, (out_shape[-1] - 1) * stride[1] + kernel[1] - x_shape[-1] - left)
    return {"kernel": kernel, "stride": stride, "padding": (top, bottom, left, right)}


MASK_SHAPE, MASK_OFFSET = "mask_shape", "mask_offset"
"""Attributes of a dropout (or its gradient) run on a box of its tensor: the whole tensor's
shape and where the box starts, so the box gets its window of the whole tensor's mask."""


def dropout_keep(c: Call, shape: tuple[int, ...]) -> np.ndarray:
    """The keep-mask of a dropout op, a function of the seed and the op's key only: for a
    box of the tensor (``mask_shape``/``mask_offset``), that box of the whole mask."""
    rng = np.random.default_rng([c.seed, zlib.crc32(c.key.encode())])
    whole = c.ints(MASK_SHAPE) if MASK_SHAPE in c.attrs else shape
    mask = K.dropout_mask(whole, c.number("rate"), rng)
    if whole == shape:
        return mask
    offset = c.ints(MASK_OFFSET)
    return mask[tuple(slice(o, o + n) for o, n in zip(offset, shape, strict=True))]


def attention_call(c: Call) -> tuple[Array, K.AttentionContext]:
    """Run attention; the context holds what its backward needs."""
    x = c.inputs[0]
    memory = c.inputs[1] if len(c.inputs) > 1 else x
    w = list(c.weights)
    biases = w[4:8] if c.flag("bias") else [None] * 4
    return K.attention_forward(x, memory, *w[:4], *biases, num_heads=c.integer("heads"), causal=c.flag("causal"))


ROW_OFFSET = "row_offset"
"""Attribute of an embedding (or its gradient) run on a slice of its table's rows: the
first row of the slice (``kernels.embedding_rows_forward``)."""
COUNT = "count"
"""Attribute of a loss (or its gradient) run on some positions: how many positions the
whole loss averages over. The part's loss is its positions' share of that mean (a partial
sum the parts add up to), and its gradient scales by ``1 / count``, not by its rows."""


def _embedding(c: Call) -> Array:
    ids = np.asarray(c.inputs[0]).astype(np.int64)
    if ROW_OFFSET not in c.attrs:
        return K.embedding_forward(c.weights[0], ids)
    return K.embedding_rows_forward(c.weights[0], ids, c.integer(ROW_OFFSET))


QUERY_OFFSET = "query_offset"
"""Attribute of a causal softmax (or its gradient) run on some rows: the first row's
query index (its mask needs the rows' place in the whole)."""


def softmax_probs(c: Call, x: Array) -> Array:
    """Softmax of ``scale * x`` along ``axis``, causally masked when asked (query ``i``
    keeps keys ``j <= i``; ``query_offset`` places a box's rows)."""
    scale = c.number("scale", 1.0)
    scores = x * scale if scale != 1.0 else x
    if c.flag("causal"):
        first = c.integer(QUERY_OFFSET) if QUERY_OFFSET in c.attrs else 0
        rows, keys = x.shape[-2], x.shape[-1]
        keep = np.arange(keys)[None, :] <= np.arange(first, first + rows)[:, None]
        scores = np.where(keep, scores, -np.inf)
    return K.softmax_forward(scores, axis=c.integer("axis"))


def _dropout(c: Call) -> Array:
    x = c.inputs[0]
    if not c.training or c.number("rate") == 0.0:
        return x
    return K.dropout_forward(x, c.number("rate"), mask=dropout_keep(c, x.shape))[0]


def _slice(c: Call) -> Array:
    index = [slice(None)] * c.inputs[0].ndim
    index[c.integer("axis")] = slice(c.integer("start"), c.integer("stop"))
    return c.inputs[0][tuple(index)]


def _bias(c: Call) -> Array | None:
    return c.weights[1] if c.flag("bias") and len(c.weights) > 1 else None


def _matmul(c: Call) -> Array:
    a, b = c.inputs
    return K.matmul_forward(a, np.swapaxes(b, -1, -2) if c.flag("transpose_b") else b)


def _batchnorm(c: Call) -> Array:
    eps = c.number("eps", 1e-5)
    if c.flag("running"):
        return K.batchnorm_forward_inference(c.inputs[0], *c.weights, eps=eps)
    return K.batchnorm_forward_train(c.inputs[0], *c.weights, eps=eps)[0]


def _activation(forward: Callable[[Array], Array]) -> Rule:
    return lambda c: forward(c.inputs[0])


def _labels(c: Call) -> np.ndarray:
    return np.asarray(c.inputs[1]).astype(np.int64)


def _share(c: Call, mean: Array, positions: int) -> Array:
    """A loss's ``mean`` over the part's ``positions``, as its share of the mean over all
    ``count`` positions when the op runs on a part of them."""
    if COUNT not in c.attrs:
        return mean
    return np.asarray(mean * (max(positions, 1) / c.integer(COUNT)), dtype=mean.dtype)


FORWARD: Mapping[str, Rule] = {
    "conv2d": lambda c: K.conv2d_forward(c.inputs[0], c.weights[0], _bias(c), **conv_args(c)),  # type: ignore[arg-type]
    "max_pool2d": lambda c: K.max_pool2d_forward(c.inputs[0], **pool_args(c, c.inputs[0].shape, c.out_shape)),  # type: ignore[arg-type]
    "avg_pool2d": lambda c: K.avg_pool2d_forward(c.inputs[0], **pool_args(c, c.inputs[0].shape, c.out_shape)),  # type: ignore[arg-type]
    "global_avg_pool": lambda c: K.global_avg_pool2d_forward(c.inputs[0]),
    "linear": lambda c: K.linear_forward(c.inputs[0], c.weights[0], _bias(c)),
    "matmul": _matmul,
    "batchnorm": lambda c: _batchnorm(c),
    "layernorm": lambda c: K.layernorm_forward(c.inputs[0], *c.weights, eps=c.number("eps", 1e-5))[0],
    **{name: _activation(kernels.forward) for name, kernels in ACTIVATIONS.items()},
    "softmax": lambda c: softmax_probs(c, c.inputs[0]),
    "add": lambda c: K.add_forward(*c.inputs),
    "mul": lambda c: K.mul_forward(*c.inputs),
    "concat": lambda c: K.concat_forward(list(c.inputs), c.integer("axis")),
    "reshape": lambda c: K.reshape_forward(c.inputs[0], c.out_shape),
    "flatten": lambda c: K.reshape_forward(c.inputs[0], c.out_shape),
    "transpose": lambda c: K.transpose_forward(c.inputs[0], c.ints("perm")),
    "slice": _slice,
    "embedding": lambda c: _embedding(c),
    "attention": lambda c: attention_call(c)[0],
    "dropout": _dropout,
    "cross_entropy": lambda c: _share(c, K.softmax_cross_entropy(c.inputs[0], _labels(c))[0],
                                      c.inputs[1].size),
    "mse": lambda c: _share(c, K.mse_loss_forward(*c.inputs), c.inputs[1].size),
}
"""Layer kind -> forward rule (the activations' from their registered kernels)."""
