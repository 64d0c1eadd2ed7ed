"""MAC and FLOP counting: the conventions and the rules the layer kinds share.

Conventions (stated once, used by every kind and test): one MAC is one multiply-add; the
FLOPs of a MAC-based layer are ``2 * MACs`` plus one add per output for a bias. Other layers
count elementwise operations at a per-element cost each kind declares beside its
definition (a documented approximation: what matters for scheduling is that they are not
zero). Data movement (reshape, transpose, concat, embedding gathers) costs no FLOPs. The
MAC rules of the dense kinds live beside them (``crane.dialects.layers.dense``).
"""

from __future__ import annotations

from collections.abc import Callable

from crane.dialects.layers.rules import Attrs
from crane.dialects.layers.values import Shape, numel

CostRule = Callable[[tuple[Shape, ...], Shape, Attrs], int]


def zero(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
    return 0


def kernel_volume(attrs: Attrs) -> int:
    """``kh * kw`` of a windowed kind."""
    kernel = attrs["kernel"]
    assert isinstance(kernel, tuple)
    return kernel[0] * kernel[1]


def with_bias(macs: CostRule) -> CostRule:
    """FLOPs of a MAC-based layer: two per MAC plus a bias add per output element."""

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        bias = numel(out) if attrs.get("bias") else 0
        return 2 * macs(ins, out, attrs) + bias

    return flops


def per_output(element_flops: int) -> CostRule:
    """FLOPs of an elementwise layer: ``element_flops`` per output element."""

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        return element_flops * numel(out)

    return flops


def per_input(element_flops: int) -> CostRule:
    """FLOPs of a reduction (losses): ``element_flops`` per element of the first input."""

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        return element_flops * numel(ins[0])

    return flops


BATCH_STATISTICS_FLOPS = 5
"""Operations per element of a batchnorm over the batch's own statistics, as a tile runs
it: a sum, the squared deviations (a subtraction and a multiply-add), then the
normalisation (a multiply-add with the scale and shift)."""

BATCH_STATISTICS_GRAD_FLOPS = 10
"""Operations per element of its input gradient, after the forward pass's moments: the
sums of the output gradient and of its product with the normalised input (normalising, a
multiply-add and an add), then the input gradient (normalising and multiply-adds); the
scale and shift gradients are those sums."""


def normalising(running_flops: int) -> CostRule:
    """FLOPs of a batchnorm: ``running_flops`` per output element with the running
    statistics (a scale and a shift), ``BATCH_STATISTICS_FLOPS`` with the batch's own."""

    def flops(ins: tuple[Shape, ...], out: Shape, attrs: Attrs) -> int:
        per = running_flops if attrs.get("running") else BATCH_STATISTICS_FLOPS
        return per * numel(out)

    return flops
