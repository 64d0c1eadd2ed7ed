"""Activations: elementwise functions of one tensor, without parameters.

A new activation is one entry here (its formula, FLOPs per element and ONNX operator) plus
its numpy kernels in ``crane.exec.kernels.activation``; every other consumer reads the facts
below: code generation splits it as :attr:`Lowering.UNARY`, segmented fused tiling keeps it
in spatial chains, the scheduler merges it into the layer making its input.
"""

from __future__ import annotations

from crane.dialects.layers.costs import per_output, zero
from crane.dialects.layers.definition import (
    LayerKind,
    Lowering,
    Onnx,
    OnnxOp,
    Tiling,
    Work,
)
from crane.dialects.layers.rules import no_weights, same_shape


def activation(name: str, formula: str, element_flops: int, onnx: Onnx) -> LayerKind:
    """An activation: one input, its shape kept, ``element_flops`` operations per element."""
    return LayerKind(name, formula, ("x",), (), same_shape, no_weights, zero,
                     per_output(element_flops), lowering=Lowering.UNARY,
                     tiling=Tiling.pointwise(), work=Work.VECTOR, onnx=onnx)


KINDS = (
    activation("relu", "max(x, 0)", 1,
               Onnx.one_to_one(OnnxOp("Relu"), OnnxOp("Clip", clip=(0.0, float("inf"))))),
    activation("gelu", "Gaussian error linear unit", 8, Onnx.converted("Gelu")),
    activation("silu", "x * sigmoid(x) (swish)", 5,
               Onnx.not_imported("ONNX has no SiLU operator; x * Sigmoid(x) imports as "
                                 "sigmoid and mul")),
    activation("sigmoid", "1 / (1 + exp(-x))", 4, Onnx.one_to_one(OnnxOp("Sigmoid"))),
    activation("tanh", "hyperbolic tangent", 4, Onnx.one_to_one(OnnxOp("Tanh"))),
)
"""The activations, in the order ``LAYER_KINDS`` lists them."""
