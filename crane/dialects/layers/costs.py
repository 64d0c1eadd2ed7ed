"""MAC and FLOP counts of the layer kinds.

Conventions (stated once, used by every table and test): one MAC is one multiply-add; the
FLOPs of a MAC-based layer are ``2 * MACs`` plus one add per output for a bias. Other layers
count elementwise operations with the per-element costs of :data:`ELEMENT_FLOPS` (a
documented approximation: what matters for scheduling is that they are not zero). Data
movement (reshape, transpose, concat, embedding gathers) costs no FLOPs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from crane.dialects.layers.rules import Attrs, get_int
from crane.dialects.layers.values import Shape, numel

CostRule = Callable[[tuple[Shape, ...], Shape, Attrs], int]

ELEMENT_FLOPS: Mapping[str, int] = {
    "relu": 1, "sigmoid": 4, "tanh": 4, "gelu": 8, "silu": 5, "softmax": 5,
    "batchnorm": 2, "layernorm": 5, "dropout": 1, "add": 1, "mul": 1,
    "cross_entropy": 5, "mse": 3,
}
"""Operations per element of the non-MAC layers (softmax: max, subtract, exp, sum, divide)."""


def _kernel_volume(attrs: Attrs) -> int:
    kernel = attrs["kernel"]
    assert isinstance(kernel, tuple)
    return kernel[0] * kernel[1]


def zero(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return 0


def conv2d_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * (ins[0][1] // get_int(attrs, "groups")) * _kernel_volume(attrs)


def linear_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * ins[0][-1]


def matmul_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * ins[0][-1]


def attention_macs(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    """Q and output projections over the queries, K and V over the memory, plus QK^T and AV.

    Causal masking does not reduce the count: the dense matmuls are what runs.
    """
    n, s, d = ins[0]
    sk = ins[-1][1]
    return 2 * n * s * d * d + 2 * n * sk * d * d + 2 * n * s * sk * d


def with_bias(macs: CostRule) -> CostRule:
    """FLOPs of a MAC-based layer: two per MAC plus a bias add per output element."""

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        bias = numel(out) if attrs.get("bias") else 0
        return 2 * macs(ins, out, attrs) + bias

    return flops


def attention_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    n, s, d = ins[0]
    sk = ins[-1][1]
    biases = 2 * n * s * d + 2 * n * sk * d if attrs["bias"] else 0
    softmax = ELEMENT_FLOPS["softmax"] * n * get_int(attrs, "heads") * s * sk
    return 2 * attention_macs(ins, out, attrs) + biases + softmax


def per_output(kind: str) -> CostRule:
    """FLOPs of an elementwise layer: its per-element cost times the output size."""
    cost = ELEMENT_FLOPS[kind]

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        return cost * numel(out)

    return flops


def per_input(kind: str) -> CostRule:
    """FLOPs of a reduction (losses): its per-element cost times the first input's size."""
    cost = ELEMENT_FLOPS[kind]

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        return cost * numel(ins[0])

    return flops


def pool_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(out) * _kernel_volume(attrs)


def global_pool_flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return numel(ins[0])
